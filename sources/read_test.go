package sources

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/testkit/testpool"
)

// onePool opens a registry over a single pool holding files (all listed).
func onePool(t testing.TB, files map[string]string, opts *Options) (*Registry, string) {
	t.Helper()
	dir := t.TempDir()
	for n, c := range files {
		testpool.WriteFile(t, dir, n, c)
	}
	writeSums(t, filepath.Join(dir, DefaultManifestName), files)
	reg, err := OpenRegistry([]PoolConfig{{ID: "p", Description: "test", Path: dir}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	return reg, dir
}

func bindAll(t testing.TB, reg *Registry) *Context {
	t.Helper()
	c, err := reg.Bind("ctx", reg.IDs())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestReadPagingUTF8 pages through multi-byte text with every small limit:
// pages must end on rune boundaries and join back to the file.
func TestReadPagingUTF8(t *testing.T) {
	text := "héllo wörld — 日本語 🎉 ok"
	reg, _ := onePool(t, map[string]string{"t.txt": text}, nil)
	c := bindAll(t, reg)
	for limit := int64(1); limit <= 9; limit++ {
		var got []byte
		off := int64(0)
		for pages := 0; ; pages++ {
			if pages > len(text) {
				t.Fatalf("limit %d: paging does not terminate", limit)
			}
			r, err := c.Read("p", "t.txt", off, limit)
			if err != nil {
				t.Fatalf("limit %d offset %d: %v", limit, off, err)
			}
			if r.Binary {
				t.Fatalf("text reported binary")
			}
			if limit >= utf8.UTFMax && !r.EOF && !utf8.Valid(r.Data) {
				t.Fatalf("limit %d offset %d: page %q not cut on a rune boundary", limit, off, r.Data)
			}
			if r.NextOffset != off+int64(len(r.Data)) || r.Size != int64(len(text)) {
				t.Fatalf("offsets: %+v", r)
			}
			got = append(got, r.Data...)
			off = r.NextOffset
			if r.EOF {
				break
			}
		}
		if string(got) != text {
			t.Fatalf("limit %d: joined %q, want %q", limit, got, text)
		}
	}
}

func TestReadOffsetsAndLimits(t *testing.T) {
	content := strings.Repeat("0123456789", 10) // 100 bytes
	reg, _ := onePool(t, map[string]string{"f.txt": content, "empty.txt": ""}, &Options{MaxReadBytes: 30})
	c := bindAll(t, reg)
	tests := []struct {
		name          string
		file          string
		offset, limit int64
		want          violation.Code
		data          string
		eof           bool
	}{
		{"first page default limit", "f.txt", 0, 0, "", content[:30], false},
		{"limit over max is cut", "f.txt", 0, 1000, "", content[:30], false},
		{"middle", "f.txt", 95, 3, "", content[95:98], false},
		{"last", "f.txt", 90, 30, "", content[90:], true},
		{"offset at size", "f.txt", 100, 0, "", "", true},
		{"offset beyond size", "f.txt", 101, 0, violation.InvalidArguments, "", false},
		{"negative offset", "f.txt", -1, 0, violation.InvalidArguments, "", false},
		{"negative limit", "f.txt", 0, -5, violation.InvalidArguments, "", false},
		{"huge offset", "f.txt", 1 << 62, 1 << 62, violation.InvalidArguments, "", false},
		{"empty file", "empty.txt", 0, 0, "", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := c.Read("p", tc.file, tc.offset, tc.limit)
			if codeOf(err) != tc.want {
				t.Fatalf("code %q, want %q (%v)", codeOf(err), tc.want, err)
			}
			if err != nil {
				return
			}
			if string(r.Data) != tc.data || r.EOF != tc.eof || r.Offset != tc.offset {
				t.Fatalf("got data %q eof %v offset %d, want %q %v %d", r.Data, r.EOF, r.Offset, tc.data, tc.eof, tc.offset)
			}
		})
	}
}

func TestReadBinaryAndMIME(t *testing.T) {
	long := strings.Repeat("a", sniffLen-1) + "é" + "tail" // rune cut by the sniff window
	files := map[string]string{
		"nul.bin":     "abc\x00def",
		"latin1.txt":  "caf\xe9",
		"late.dat":    strings.Repeat("a", sniffLen) + "\x00", // NUL after the sniff window
		"long.txt":    long,
		"data.json":   `{"a":1}`,
		"noext":       "plain words",
		"blob.zzzqqq": "\xff\xfe\x00",
	}
	reg, _ := onePool(t, files, nil)
	c := bindAll(t, reg)
	tests := []struct {
		file   string
		binary bool
		mime   string
	}{
		{"nul.bin", true, ""},
		{"latin1.txt", true, ""},
		{"late.dat", false, ""},
		{"long.txt", false, ""},
		{"data.json", false, "application/json"},
		{"noext", false, "text/plain; charset=utf-8"},
		{"blob.zzzqqq", true, "application/octet-stream"},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			r, err := c.Read("p", tc.file, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if r.Binary != tc.binary {
				t.Errorf("Binary = %v, want %v", r.Binary, tc.binary)
			}
			if tc.mime != "" && r.MIMEType != tc.mime {
				t.Errorf("MIMEType = %q, want %q", r.MIMEType, tc.mime)
			}
			if string(r.Data) != files[tc.file] {
				t.Errorf("data differs")
			}
		})
	}
	// Binary windows are not trimmed: a page of a binary file is exact.
	r, err := c.Read("p", "latin1.txt", 0, 4)
	if err != nil || len(r.Data) != 4 {
		t.Fatalf("binary page: %v %q", err, r.Data)
	}
}

// TestReadOneByteOfRune: trimming never empties a page (paging would stall).
func TestReadOneByteOfRune(t *testing.T) {
	reg, _ := onePool(t, map[string]string{"j.txt": "日本"}, nil)
	c := bindAll(t, reg)
	r, err := c.Read("p", "j.txt", 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Data) != 1 || r.NextOffset != 1 {
		t.Fatalf("got %q next %d, want one byte", r.Data, r.NextOffset)
	}
}

func TestReadTooLarge(t *testing.T) {
	reg, _ := onePool(t, map[string]string{"big.txt": strings.Repeat("x", 101), "ok.txt": strings.Repeat("x", 100)},
		&Options{MaxFileBytes: 100})
	c := bindAll(t, reg)
	if _, err := c.Read("p", "big.txt", 0, 0); codeOf(err) != violation.LimitExceeded {
		t.Errorf("big: %v, want LIMIT_EXCEEDED", err)
	}
	if _, err := c.Read("p", "ok.txt", 0, 0); err != nil {
		t.Errorf("at the limit: %v", err)
	}
	if got := c.Pools()[0].Integrity; got != IntegrityVerified {
		t.Errorf("too large must not fail the pool: %s", got)
	}
}

// TestIntegrityState: a match verifies, a mismatch fails for good, and no
// data leaves on a mismatch.
func TestIntegrityState(t *testing.T) {
	reg, dir := onePool(t, map[string]string{"a.txt": "alpha", "b.txt": "beta"}, nil)
	c := bindAll(t, reg)
	state := func() string { return c.Pools()[0].Integrity }
	if state() != IntegrityUnverified {
		t.Fatalf("initial state %s", state())
	}
	if _, err := c.Read("p", "a.txt", 0, 0); err != nil {
		t.Fatal(err)
	}
	if state() != IntegrityVerified || !c.Usage().IntegrityVerified {
		t.Fatalf("after good read: %s %+v", state(), c.Usage())
	}
	// Edit a file after the manifest was made, keeping its size.
	if err := os.WriteFile(filepath.Join(dir, "b.txt"), []byte("BETA"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := c.Read("p", "b.txt", 0, 0)
	if codeOf(err) != violation.IntegrityFailure || r != nil {
		t.Fatalf("edited file: %v %v, want INTEGRITY_FAILURE and no data", r, err)
	}
	if state() != IntegrityFailed || c.Usage().IntegrityVerified {
		t.Fatalf("after mismatch: %s %+v", state(), c.Usage())
	}
	if _, err := c.Read("p", "a.txt", 0, 0); err != nil {
		t.Fatal(err)
	}
	if state() != IntegrityFailed {
		t.Fatalf("failed must be sticky, got %s", state())
	}
	// Another context over the same registry starts fresh.
	c2 := bindAll(t, reg)
	if c2.Pools()[0].Integrity != IntegrityUnverified {
		t.Fatalf("state leaked between contexts")
	}
}

func TestReadResultFields(t *testing.T) {
	h := newHostile(t, nil)
	c := h.bind(t, "docs", "other")
	r, err := c.Read("docs", "a.txt", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := ReadResult{PoolID: "docs", Path: "a.txt", Trust: Untrusted, Data: []byte("hello"), NextOffset: 5, Size: 5, EOF: true,
		SHA256: hexSum("hello"), MIMEType: "text/plain; charset=utf-8"}
	if r.MIMEType != "" && strings.HasPrefix(r.MIMEType, "text/plain") {
		want.MIMEType = r.MIMEType // system mime.types may spell .txt differently
	}
	if !bytes.Equal(r.Data, want.Data) || r.PoolID != want.PoolID || r.Path != want.Path || r.Trust != want.Trust ||
		r.NextOffset != want.NextOffset || r.Size != want.Size || r.EOF != want.EOF || r.SHA256 != want.SHA256 ||
		r.MIMEType != want.MIMEType || r.Binary {
		t.Fatalf("got %+v\nwant %+v", r, want)
	}
	if r, err := c.Read("other", "o.txt", 0, 0); err != nil || r.Trust != Trusted {
		t.Fatalf("trusted pool: %v %v", r, err)
	}
}
