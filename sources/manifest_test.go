package sources

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/testkit/testpool"
)

var (
	hA = hexSum("a")
	hB = hexSum("b")
)

func TestParseManifest(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string // paths, sorted
	}{
		{"text mode", hA + "  a.txt\n", []string{"a.txt"}},
		{"binary mode", hA + " *a.txt\n", []string{"a.txt"}},
		{"upper-case hex", strings.ToUpper(hA) + "  a.txt\n", []string{"a.txt"}},
		{"dot slash stripped", hA + "  ./a.txt\n" + hB + "  ./sub/b\n", []string{"a.txt", "sub/b"}},
		{"no final newline", hA + "  a.txt", []string{"a.txt"}},
		{"blank lines", "\n" + hA + "  a.txt\n\n  \n" + hB + "  b\n\n", []string{"a.txt", "b"}},
		{"sorted", hB + "  z\n" + hA + "  a\n", []string{"a", "z"}},
		{"spaces in name", hA + "  my file .txt\n", []string{"my file .txt"}},
		{"leading star kept after text sep", hA + "  *star\n", []string{"*star"}},
		{"escaped backslash", `\` + hA + `  a\\b` + "\n", []string{`a\b`}},
		{"escaped newline and CR", `\` + hA + `  x\ny\rz` + "\n", []string{"x\ny\rz"}},
		{"escaped line without escapes", `\` + hA + "  plain\n", []string{"plain"}},
		{"raw backslash in unescaped line", hA + `  a\b` + "\n", []string{`a\b`}},
		{"percent name", hA + "  %2e%2e\n", []string{"%2e%2e"}},
		{"empty", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseManifest(strings.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range m.Entries() {
				got = append(got, e.Path)
				if e.Size != -1 {
					t.Errorf("parsed size %d, want -1", e.Size)
				}
			}
			if !slices.Equal(got, tc.want) || m.Len() != len(tc.want) {
				t.Fatalf("paths %q, want %q", got, tc.want)
			}
		})
	}
	m, _ := ParseManifest(strings.NewReader(hA + "  a.txt\n"))
	if e, ok := m.Lookup("a.txt"); !ok || e.SHA256 != sum("a") {
		t.Fatalf("Lookup = %+v %v", e, ok)
	}
	if _, ok := m.Lookup("./a.txt"); ok {
		t.Fatal("Lookup of a non-canonical name succeeded")
	}
}

func TestParseManifestErrors(t *testing.T) {
	tests := []struct {
		name, in string
		line     int
		sentinel error
	}{
		{"short hash", "abc  a\n", 1, ErrManifestSyntax},
		{"bad hex", strings.Repeat("g", 64) + "  a\n", 1, ErrManifestSyntax},
		{"one space", hA + " a\n", 1, ErrManifestSyntax},
		{"tab separator", hA + "\t a\n", 1, ErrManifestSyntax},
		{"leading space", " " + hA + "  a\n", 1, ErrManifestSyntax},
		{"hash too long", hA + "0  a\n", 1, ErrManifestSyntax},
		{"BSD tag style", "SHA256 (a) = " + hA + "\n", 1, ErrManifestSyntax},
		{"CRLF", hA + "  a\r\n", 1, ErrManifestSyntax},
		{"bad escape", `\` + hA + `  a\tb` + "\n", 1, ErrManifestSyntax},
		{"trailing backslash", `\` + hA + `  a\` + "\n", 1, ErrManifestSyntax},
		{"empty name", hA + "  \n", 1, ErrManifestName},
		{"dot slash only", hA + "  ./\n", 1, ErrManifestName},
		{"absolute", hA + "  /etc/passwd\n", 1, ErrManifestName},
		{"dotdot", hA + "  ../x\n", 1, ErrManifestName},
		{"inner dotdot", hA + "  a/../../x\n", 1, ErrManifestName},
		{"dot element", hA + "  a/./b\n", 1, ErrManifestName},
		{"double slash", hA + "  a//b\n", 1, ErrManifestName},
		{"double dot slash", hA + "  ././a\n", 1, ErrManifestName},
		{"trailing slash", hA + "  a/\n", 1, ErrManifestName},
		{"NUL", hA + "  a\x00b\n", 1, ErrManifestName},
		{"too long name", hA + "  " + strings.Repeat("x", MaxPathLen+1) + "\n", 1, ErrManifestName},
		{"line too long", hA + "  " + strings.Repeat("x", 3*MaxPathLen) + "\n", 1, ErrManifestSyntax},
		{"duplicate", hA + "  a\n" + hB + "  b\n" + hB + "  ./a\n", 3, ErrManifestDuplicate},
		{"error after blanks", "\n\n" + hA + "  a\nnonsense\n", 4, ErrManifestSyntax},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseManifest(strings.NewReader(tc.in))
			var me *ManifestError
			if !errors.As(err, &me) {
				t.Fatalf("err = %v, want *ManifestError", err)
			}
			if me.Line != tc.line || !errors.Is(err, tc.sentinel) {
				t.Fatalf("err = %v (line %d), want line %d wrapping %v", err, me.Line, tc.line, tc.sentinel)
			}
			if !strings.Contains(err.Error(), "line ") {
				t.Fatalf("error does not name the line: %v", err)
			}
		})
	}
}

func TestWriteToRoundTrip(t *testing.T) {
	in := hB + "  z/y\n" + `\` + hA + `  we\\ird\nname` + "\n" + hA + " *./bin\n" + hB + "  with space\n" + `\` + hA + `  cr\r` + "\n"
	m, err := ParseManifest(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	n, err := m.WriteTo(&buf)
	if err != nil || n != int64(buf.Len()) {
		t.Fatalf("WriteTo = %d, %v (buffer %d)", n, err, buf.Len())
	}
	want := hA + "  bin\n" + `\` + hA + `  cr\r` + "\n" + `\` + hA + `  we\\ird\nname` + "\n" + hB + "  with space\n" + hB + "  z/y\n"
	if buf.String() != want {
		t.Fatalf("WriteTo:\n%s\nwant:\n%s", buf.String(), want)
	}
	m2, err := ParseManifest(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(stripSizes(m.Entries()), stripSizes(m2.Entries())) {
		t.Fatal("round trip changed the entries")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteToError(t *testing.T) {
	m, _ := ParseManifest(strings.NewReader(hA + "  a\n"))
	if _, err := m.WriteTo(failWriter{}); err == nil {
		t.Fatal("write error swallowed")
	}
}

func stripSizes(es []Entry) []Entry {
	for i := range es {
		es[i].Size = 0
	}
	return es
}

// weirdTree writes files whose names exercise sha256sum's escaping.
func weirdTree(t *testing.T) (string, map[string]string) {
	dir := t.TempDir()
	files := map[string]string{
		"plain.txt":                     "plain",
		"sub/deeper/x.csv":              "1,2\n",
		"with space":                    "sp",
		`back\slash`:                    "bs",
		"new\nline":                     "nl",
		"car\rriage":                    "cr",
		"trail\r":                       "tcr",
		"-dash":                         "dash",
		"日本.txt":                        "jp",
		"empty":                         "",
		"%2e%2e":                        "pct",
		DefaultManifestName + ".d/keep": "kept",
	}
	for n, c := range files {
		testpool.WriteFile(t, dir, n, c)
	}
	testpool.WriteFile(t, dir, DefaultManifestName, "old manifest, skipped")
	mklink(t, "plain.txt", filepath.Join(dir, "link")) // not listed: links are not followed
	return dir, files
}

func TestBuildManifest(t *testing.T) {
	dir, files := weirdTree(t)
	m, err := BuildManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Len() != len(files) {
		t.Fatalf("built %d entries, want %d: %+v", m.Len(), len(files), m.Entries())
	}
	for n, c := range files {
		e, ok := m.Lookup(n)
		if !ok || e.SHA256 != sum(c) || e.Size != int64(len(c)) {
			t.Errorf("%q: %+v %v", n, e, ok)
		}
	}
	if _, ok := m.Lookup(DefaultManifestName); ok {
		t.Error("manifest file listed")
	}
	if _, ok := m.Lookup("link"); ok {
		t.Error("symlink listed")
	}
	if _, err := BuildManifest(filepath.Join(dir, "nope")); err == nil {
		t.Error("missing dir accepted")
	}
	// A manifest under another name is the one skipped.
	m2, err := buildManifest(dir, "sub/deeper/x.csv")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m2.Lookup("sub/deeper/x.csv"); ok {
		t.Error("buildManifest listed the manifest it was told to skip")
	}
	if _, ok := m2.Lookup(DefaultManifestName); !ok {
		t.Error("buildManifest skipped the default name for a custom manifest")
	}
}

// TestSha256sumAcceptsBuildManifest checks our output with the real tool,
// and the tool's output with our parser.
func TestSha256sumAcceptsBuildManifest(t *testing.T) {
	bin, err := exec.LookPath("sha256sum")
	if err != nil {
		t.Skip("sha256sum not installed")
	}
	dir, files := weirdTree(t)
	m, err := BuildManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := m.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	sums := filepath.Join(t.TempDir(), "sums")
	if err := os.WriteFile(sums, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--check", "--strict", sums)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sha256sum -c rejected our manifest: %v\n%s\nmanifest:\n%s", err, out, buf.String())
	}

	// The other way: sha256sum's own output, text and binary mode, "./" names.
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, "./"+n)
	}
	slices.Sort(names)
	for _, mode := range []string{"--text", "--binary"} {
		cmd := exec.Command(bin, append([]string{mode, "--"}, names...)...)
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseManifest(bytes.NewReader(out))
		if err != nil {
			t.Fatalf("%s output: %v\n%s", mode, err, out)
		}
		if !slices.Equal(stripSizes(got.Entries()), stripSizes(m.Entries())) {
			t.Fatalf("%s: parsed sha256sum output differs from BuildManifest", mode)
		}
	}
}
