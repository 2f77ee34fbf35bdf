package sources

import (
	"bytes"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// hostilePaths is the hostile path table, shared with FuzzPath's seed corpus.
var hostilePaths = []struct {
	name, path string
	want       violation.Code // "" = allowed
	data       string         // for allowed reads
}{
	{"parent", "../x", violation.PathOutsidePools, ""},
	{"parent via sub", "a/../../x", violation.PathOutsidePools, ""},
	{"parent to secret", "../secret.txt", violation.PathOutsidePools, ""},
	{"dotdot alone", "..", violation.PathOutsidePools, ""},
	{"absolute", "/etc/passwd", violation.PathOutsidePools, ""},
	{"absolute secret", "/tmp/secret.txt", violation.PathOutsidePools, ""},
	{"NUL", "a\x00b", violation.PathOutsidePools, ""},
	{"NUL suffix", "a.txt\x00", violation.PathOutsidePools, ""},
	{"double slash", "a//b", violation.PathOutsidePools, ""},
	{"double slash listed", "sub//b.txt", violation.PathOutsidePools, ""},
	{"dot prefix", "./a", violation.PathOutsidePools, ""},
	{"dot prefix listed", "./a.txt", violation.PathOutsidePools, ""},
	{"dot element", "a/./b", violation.PathOutsidePools, ""},
	{"dot", ".", violation.PathOutsidePools, ""},
	{"trailing slash", "sub/", violation.PathOutsidePools, ""},
	{"inner dotdot", "sub/../a.txt", violation.PathOutsidePools, ""},
	{"backslash traversal", "a\\..\\b", violation.PathOutsidePools, ""},
	{"backslash", "sub\\b.txt", violation.PathOutsidePools, ""},
	{"empty", "", violation.PathOutsidePools, ""},
	{"very long", strings.Repeat("a/", MaxPathLen), violation.PathOutsidePools, ""},
	{"long element", strings.Repeat("x", MaxPathLen+1), violation.PathOutsidePools, ""},
	{"percent dotdot not decoded", "%2e%2e/x", violation.IntegrityFailure, ""},
	{"percent name is a name", "%2e%2e", "", "percent"},
	{"symlink to outside file (absolute)", "abs", violation.PathOutsidePools, ""},
	{"symlink to outside file (relative)", "rel", violation.PathOutsidePools, ""},
	{"symlink to outside dir", "outdir/f", violation.PathOutsidePools, ""},
	{"symlink chain out", "chain", violation.PathOutsidePools, ""},
	{"symlink loop", "loop", violation.IntegrityFailure, ""},
	{"manifest mismatch", "edited.txt", violation.IntegrityFailure, ""},
	{"in pool not in manifest", "unlisted.txt", violation.IntegrityFailure, ""},
	{"in manifest not on disk", "missing.txt", violation.IntegrityFailure, ""},
	{"directory in manifest", "adir", violation.IntegrityFailure, ""},
	{"manifest itself unlisted", DefaultManifestName, violation.IntegrityFailure, ""},
	{"plain file", "a.txt", "", "hello"},
	{"file in subdir", "sub/b.txt", "", "bee"},
	{"symlink inside pool", "okln", "", "hello"},
	{"dir symlink inside pool", "okdir/b.txt", "", "bee"},
}

func TestReadHostilePaths(t *testing.T) {
	h := newHostile(t, nil)
	c := h.bind(t)
	for _, tc := range hostilePaths {
		t.Run(tc.name, func(t *testing.T) {
			// Same input, same answer (seed 000, section 7.3).
			for i := 0; i < 3; i++ {
				res, err := c.Read("docs", tc.path, 0, 0)
				if got := codeOf(err); got != tc.want {
					t.Fatalf("Read(%q) code = %q, want %q (err %v)", tc.path, got, tc.want, err)
				}
				if err != nil {
					if res != nil {
						t.Fatalf("Read(%q) returned data with an error", tc.path)
					}
					if strings.Contains(err.(*violation.Error).Public(), h.base) {
						t.Errorf("public message leaks a host path: %s", err.(*violation.Error).Public())
					}
					continue
				}
				if string(res.Data) != tc.data {
					t.Fatalf("Read(%q) = %q, want %q", tc.path, res.Data, tc.data)
				}
				if bytes.Contains(res.Data, []byte(secretMarker)) {
					t.Fatalf("Read(%q) returned the secret", tc.path)
				}
			}
		})
	}
}

func TestPoolResolution(t *testing.T) {
	h := newHostile(t, nil)
	c := h.bind(t, "docs")
	tests := []struct {
		pool string
		want violation.Code
	}{
		{"docs", ""},
		{"other", violation.PoolNotSelected}, // configured, not bound
		{"nope", violation.UnknownPoolID},    // not configured at all
		{"", violation.UnknownPoolID},
		{"DOCS", violation.UnknownPoolID},
		{"docs/", violation.UnknownPoolID},
		{"../docs", violation.UnknownPoolID},
		{strings.Repeat("d", 10000), violation.UnknownPoolID},
	}
	for _, tc := range tests {
		t.Run(tc.pool, func(t *testing.T) {
			_, err := c.Read(tc.pool, "a.txt", 0, 0)
			if got := codeOf(err); got != tc.want {
				t.Errorf("Read pool %q: code %q, want %q", tc.pool, got, tc.want)
			}
			_, err = c.List(tc.pool, 0, 0)
			if got := codeOf(err); got != tc.want {
				t.Errorf("List pool %q: code %q, want %q", tc.pool, got, tc.want)
			}
			_, err = c.PoolPath(tc.pool)
			if got := codeOf(err); got != tc.want {
				t.Errorf("PoolPath %q: code %q, want %q", tc.pool, got, tc.want)
			}
		})
	}
	if _, err := h.reg.Bind("x", []string{"docs", "ghost"}); codeOf(err) != violation.UnknownPoolID {
		t.Errorf("Bind with unknown id: %v, want UNKNOWN_POOL_ID", err)
	}
}

// TestNotInManifestTouchesNoDisk shows the manifest decides before the disk:
// with every pool root closed, an unlisted name still gets the integrity
// refusal, while a listed one reaches the (closed) disk step.
func TestNotInManifestTouchesNoDisk(t *testing.T) {
	h := newHostile(t, nil)
	c := h.bind(t)
	if err := h.reg.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read("docs", "unlisted.txt", 0, 0); codeOf(err) != violation.IntegrityFailure {
		t.Errorf("unlisted after close: %v, want INTEGRITY_FAILURE", err)
	}
	if _, err := c.Read("docs", "a.txt", 0, 0); codeOf(err) != violation.Unavailable {
		t.Errorf("listed after close: %v, want UNAVAILABLE", err)
	}
	if _, err := c.Read("docs", "../a.txt", 0, 0); codeOf(err) != violation.PathOutsidePools {
		t.Errorf("bad path after close: %v, want PATH_OUTSIDE_POOLS", err)
	}
}
