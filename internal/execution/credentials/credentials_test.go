package credentials

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/airlock-dev/airlock/fence"
	"github.com/airlock-dev/airlock/internal/config"
)

const fileSecret = "file-secret-0123456789"

func testSet(t *testing.T, env map[string]string) (*Set, string, *[]Change) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(file, []byte(fileSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	creds := []config.Credential{
		{ID: "hdr", Secret: config.TokenSource{Env: "API"}, Roles: []string{"a"},
			Header: &config.CredentialHeader{Name: "Authorization", Value: "Bearer {secret}", Hosts: []string{"api.example", "127.0.0.1:8443"}}},
		{ID: "pipe", Secret: config.TokenSource{File: file}, Roles: []string{"a", "b"},
			Env: &config.CredentialEnv{Name: "TOKEN", Pipelines: []string{"p1"}}},
	}
	var changes []Change
	s := New(creds, &Options{
		Getenv:   func(k string) string { return env[k] },
		OnChange: func(c Change) { changes = append(changes, c) },
	})
	return s, file, &changes
}

// TestInjectionIsScoped: a credential reaches only its roles, its exact
// hosts and its pipelines.
func TestInjectionIsScoped(t *testing.T) {
	s, _, _ := testSet(t, map[string]string{"API": "env-secret-abcdefgh"})
	tests := []struct {
		role, host string
		want       string
	}{
		{"a", "api.example", "Bearer env-secret-abcdefgh"},
		{"a", "127.0.0.1:8443", "Bearer env-secret-abcdefgh"},
		{"a", "127.0.0.1", ""},        // another port is another host
		{"a", "evil.api.example", ""}, // no suffix match
		{"a", "api.example.evil", ""},
		{"b", "api.example", ""}, // another role
	}
	for _, tc := range tests {
		hs, err := s.ForHosts(tc.role, &Scrubber{}).HeadersFor(tc.host)
		got := ""
		if len(hs) == 1 && hs[0].Name == "Authorization" {
			got = hs[0].Value
		}
		if err != nil || got != tc.want {
			t.Errorf("%s @ %s: %q, %v; want %q", tc.role, tc.host, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		role, pipeline string
		want           []string
	}{
		{"a", "p1", []string{"TOKEN=" + fileSecret}},
		{"b", "p1", []string{"TOKEN=" + fileSecret}},
		{"a", "p2", nil},
		{"c", "p1", nil},
	} {
		env, err := s.PipelineEnv(tc.role, tc.pipeline, &Scrubber{})
		if err != nil || strings.Join(env, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s/%s: %v, %v", tc.role, tc.pipeline, env, err)
		}
	}
}

// TestRevocation: a removed or emptied file and an unset variable refuse
// the use with ErrRevoked; each transition is reported once, by id and
// reason, never with the value; a restored secret is reported too.
func TestRevocation(t *testing.T) {
	env := map[string]string{"API": "env-secret-abcdefgh"}
	s, file, changes := testSet(t, env)
	use := func() error { _, err := s.PipelineEnv("a", "p1", &Scrubber{}); return err }
	if err := use(); err != nil {
		t.Fatal(err)
	}
	os.Remove(file)
	err := use()
	var e *Error
	if !errors.Is(err, ErrRevoked) || !errors.As(err, &e) || e.ID != "pipe" || e.Reason != "file missing" {
		t.Fatalf("after removal: %v", err)
	}
	use() // still revoked: no second report
	os.WriteFile(file, []byte("\n"), 0o600)
	if err := use(); !errors.Is(err, ErrRevoked) {
		t.Fatalf("emptied: %v", err)
	}
	os.WriteFile(file, []byte(fileSecret), 0o600)
	if err := use(); err != nil {
		t.Fatalf("restored: %v", err)
	}
	delete(env, "API")
	s.Check() // noticed without a use
	want := []Change{{"pipe", true, "file missing"}, {"pipe", false, "secret present again"}, {"hdr", true, "variable API unset or empty"}}
	if len(*changes) != len(want) {
		t.Fatalf("changes %v, want %v", *changes, want)
	}
	for i := range want {
		if (*changes)[i] != want[i] {
			t.Errorf("change %d: %v, want %v", i, (*changes)[i], want[i])
		}
	}
	if _, err := s.ForHosts("a", nil).HeadersFor("api.example"); !errors.Is(err, ErrRevoked) {
		t.Errorf("header after unset: %v", err)
	}
}

// TestInvalidSecrets: too short (redaction would be meaningless) or with
// control characters (a CR/LF would split a request's headers) are
// refused, and the error names neither.
func TestInvalidSecrets(t *testing.T) {
	for _, v := range []string{"s3cr", "line\r\nX-Injected: 1", "tab\there-long"} {
		s, _, _ := testSet(t, map[string]string{"API": v})
		_, err := s.ForHosts("a", nil).HeadersFor("api.example")
		if !errors.Is(err, ErrInvalid) || strings.Contains(err.Error(), v) {
			t.Errorf("%q: %v", v, err)
		}
	}
}

// TestScrubber: what a call injected is replaced by its marker — the
// rendered header whole, the bare secret too — and Find sees a secret
// split across reads.
func TestScrubber(t *testing.T) {
	s, _, _ := testSet(t, map[string]string{"API": "env-secret-abcdefgh"})
	sc := &Scrubber{}
	s.ForHosts("a", sc).HeadersFor("api.example")
	s.PipelineEnv("a", "p1", sc)
	in := "auth: Bearer env-secret-abcdefgh; raw env-secret-abcdefgh; file " + fileSecret + "."
	want := "auth: [REDACTED:credential:hdr]; raw [REDACTED:credential:hdr]; file [REDACTED:credential:pipe]."
	if got := sc.String(in); got != want {
		t.Errorf("scrubbed %q", got)
	}
	big := bytes.Repeat([]byte("x"), 200<<10)
	copy(big[64<<10-5:], fileSecret) // across the first chunk boundary
	id, err := sc.Find(iotest.HalfReader(bytes.NewReader(big)))
	if err != nil || id != "pipe" {
		t.Errorf("Find across chunks: %q, %v", id, err)
	}
	if id, _ := sc.Find(strings.NewReader("nothing here")); id != "" {
		t.Errorf("Find in clean text: %q", id)
	}
	var none *Scrubber
	if none.String(in) != in || none.Used() {
		t.Error("a nil scrubber changed something")
	}
	if _, err := sc.Find(iotest.ErrReader(io.ErrUnexpectedEOF)); err == nil {
		t.Error("a read error was swallowed")
	}
}

// FuzzFind: the chunked scan agrees with a whole-buffer search, of the
// bytes and of their lines as the fence's sanitizer shows them, for any
// content and any read sizes (pipeline outputs are untrusted).
func FuzzFind(f *testing.F) {
	f.Add([]byte("prefix file-secret-0123456789 suffix"), uint8(3))
	f.Add([]byte("file-secret-01234567"), uint8(1))
	f.Add(bytes.Repeat([]byte("file-secret-"), 10), uint8(7))
	f.Add([]byte("a\nfile-\u200bsecret-\x1b[0m0123456789\n"), uint8(5))
	sc := &Scrubber{}
	sc.add("pipe", fileSecret)
	f.Fuzz(func(t *testing.T, data []byte, step uint8) {
		n := int(step%16) + 1
		id, err := sc.Find(&stepReader{data: data, n: n})
		if err != nil {
			t.Fatal(err)
		}
		var shown strings.Builder
		for _, line := range bytes.SplitAfter(data, []byte("\n")) {
			clean, _ := fence.Sanitize(string(line))
			shown.WriteString(clean)
		}
		want := bytes.Contains(data, []byte(fileSecret)) || strings.Contains(shown.String(), fileSecret)
		if (id == "pipe") != want {
			t.Fatalf("Find = %q, contains = %v", id, want)
		}
		if bytes.Contains(sc.Bytes(bytes.Clone(data)), []byte(fileSecret)) {
			t.Fatal("Bytes left the secret in")
		}
	})
}

type stepReader struct {
	data []byte
	n    int
}

func (r *stepReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	k := min(r.n, len(p), len(r.data))
	copy(p, r.data[:k])
	r.data = r.data[k:]
	return k, nil
}

// TestScrubberFindsSplitSecrets (issue 26, item 5): Find sees a secret
// that the fence's sanitizer would re-form — split by U+200B, U+00AD or an
// escape sequence — in a short file, across a read boundary and inside a
// line longer than it sanitizes at once.
func TestScrubberFindsSplitSecrets(t *testing.T) {
	s, _, _ := testSet(t, nil)
	sc := &Scrubber{}
	s.PipelineEnv("a", "p1", sc)
	split := func(sep string) string { return strings.Join(strings.Split(fileSecret, ""), sep) }
	long := strings.Repeat("y", maxSanitizedLine+3) + split("\u200b") + strings.Repeat("z", 10)
	for name, content := range map[string]string{
		"zero width":     "x " + split("\u200b") + "\n",
		"soft hyphen":    split("\u00ad"),
		"escape":         "a\n" + split("\x1b[0m") + "\nb",
		"across reads":   strings.Repeat("x", 64<<10-7) + split("\u2060"),
		"in a long line": long,
	} {
		id, err := sc.Find(iotest.HalfReader(strings.NewReader(content)))
		if err != nil || id != "pipe" {
			t.Errorf("%s: %q, %v", name, id, err)
		}
	}
	if id, err := sc.Find(strings.NewReader(split(" "))); id != "" || err != nil {
		t.Errorf("split by a visible character (a known limit, not re-formed): %q, %v", id, err)
	}
}
