package sources

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
)

// Entry is one file of a manifest.
type Entry struct {
	Path   string   // canonical relative slash path
	SHA256 [32]byte // digest of the whole file
	Size   int64    // bytes; -1 when unknown (ParseManifest cannot know it)
}

// Manifest is an immutable, sorted list of entries with an index by path.
type Manifest struct {
	entries []Entry // sorted by Path, bytewise
	index   map[string]int
}

// maxLineLen bounds one manifest line: a backslash, 64 hex digits, two
// separator bytes and a name of MaxPathLen bytes in which every byte may be
// escaped into two.
const maxLineLen = 1 + 64 + 2 + 2*MaxPathLen

func newManifest(entries []Entry) *Manifest {
	slices.SortFunc(entries, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	m := &Manifest{entries: entries, index: make(map[string]int, len(entries))}
	for i, e := range entries {
		m.index[e.Path] = i
	}
	return m
}

// ParseManifest reads `sha256sum` output: lines "<64 hex>  <name>" (text
// mode) or "<64 hex> *<name>" (binary mode), hex in either case. A leading
// "./" on a name is removed. A line starting with '\' is GNU-escaped: its name
// may hold "\\", "\n" and "\r". Empty or all-blank lines are skipped. Every
// other line, and every name that is not canonical (see [MaxPathLen] and the
// package doc) or is listed twice, is an error of type *ManifestError naming
// the line. ParseManifest does not bound the total input; callers reading an
// untrusted stream should wrap it in an io.LimitReader.
func ParseManifest(r io.Reader) (*Manifest, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLineLen+1) // +1: the '\n'
	sc.Split(splitLF)
	var entries []Entry
	seen := make(map[string]int)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Bytes()
		if len(bytes.Trim(text, " \t")) == 0 {
			continue
		}
		e, err := parseLine(text)
		if err != nil {
			return nil, &ManifestError{Line: line, Err: err}
		}
		if prev, dup := seen[e.Path]; dup {
			return nil, &ManifestError{Line: line, Err: fmt.Errorf("%q also on line %d: %w", e.Path, prev, ErrManifestDuplicate)}
		}
		seen[e.Path] = line
		entries = append(entries, e)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &ManifestError{Line: line + 1, Err: fmt.Errorf("line longer than %d bytes: %w", maxLineLen, ErrManifestSyntax)}
		}
		return nil, fmt.Errorf("reading manifest: %w", err)
	}
	return newManifest(entries), nil
}

// splitLF splits on '\n' only. bufio.ScanLines would also drop a '\r', and a
// '\r' is a legal byte of a file name.
func splitLF(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

func parseLine(b []byte) (Entry, error) {
	escaped := b[0] == '\\'
	if escaped {
		b = b[1:]
	}
	if len(b) < 66 || b[64] != ' ' || (b[65] != ' ' && b[65] != '*') {
		return Entry{}, fmt.Errorf(`want "<64 hex digits>  <name>" or "<64 hex digits> *<name>": %w`, ErrManifestSyntax)
	}
	var e Entry
	if _, err := hex.Decode(e.SHA256[:], b[:64]); err != nil {
		return Entry{}, fmt.Errorf("bad digest: %v: %w", err, ErrManifestSyntax)
	}
	raw := b[66:]
	var name string
	if escaped {
		var err error
		if name, err = unescapeName(raw); err != nil {
			return Entry{}, err
		}
	} else {
		if bytes.IndexByte(raw, '\r') >= 0 {
			// Most likely a CRLF file; sha256sum itself escapes a real '\r'.
			return Entry{}, fmt.Errorf("unescaped carriage return (CRLF line endings?): %w", ErrManifestSyntax)
		}
		name = string(raw)
	}
	name = strings.TrimPrefix(name, "./")
	if err := checkManifestName(name); err != nil {
		return Entry{}, fmt.Errorf("%q: %v: %w", name, err, ErrManifestName)
	}
	e.Path = name
	e.Size = -1
	return e, nil
}

// unescapeName undoes GNU coreutils' escaping of '\\', '\n' and '\r'.
func unescapeName(b []byte) (string, error) {
	var sb strings.Builder
	sb.Grow(len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			sb.WriteByte(b[i])
			continue
		}
		i++
		if i == len(b) {
			return "", fmt.Errorf("trailing backslash in escaped name: %w", ErrManifestSyntax)
		}
		switch b[i] {
		case '\\':
			sb.WriteByte('\\')
		case 'n':
			sb.WriteByte('\n')
		case 'r':
			sb.WriteByte('\r')
		default:
			return "", fmt.Errorf("unknown escape \\%c in name: %w", b[i], ErrManifestSyntax)
		}
	}
	return sb.String(), nil
}

var nameEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, "\r", `\r`)

// WriteTo writes the manifest in the form GNU `sha256sum` prints (text mode,
// lowercase hex, escaped names where needed), which `sha256sum -c` accepts
// and ParseManifest reads back to the same entries.
func (m *Manifest) WriteTo(w io.Writer) (int64, error) {
	cw := &countingWriter{w: w}
	bw := bufio.NewWriter(cw)
	var digest [64]byte
	for _, e := range m.entries {
		hex.Encode(digest[:], e.SHA256[:])
		if strings.ContainsAny(e.Path, "\\\n\r") {
			bw.WriteByte('\\')
			bw.Write(digest[:])
			bw.WriteString("  ")
			nameEscaper.WriteString(bw, e.Path)
		} else {
			bw.Write(digest[:])
			bw.WriteString("  ")
			bw.WriteString(e.Path)
		}
		bw.WriteByte('\n')
	}
	err := bw.Flush() // bufio keeps the first write error and returns it here
	return cw.n, err
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Lookup returns the entry for a canonical name.
func (m *Manifest) Lookup(name string) (Entry, bool) {
	i, ok := m.index[name]
	if !ok {
		return Entry{}, false
	}
	return m.entries[i], true
}

// Entries returns a copy of the entries, sorted by path.
func (m *Manifest) Entries() []Entry { return slices.Clone(m.entries) }

// Len returns the number of entries.
func (m *Manifest) Len() int { return len(m.entries) }

// Filter returns a manifest of the entries keep accepts (`airlock init`
// leaves hidden files such as .env and .git out of a starter manifest).
func (m *Manifest) Filter(keep func(Entry) bool) *Manifest {
	var out []Entry
	for _, e := range m.entries {
		if keep(e) {
			out = append(out, e)
		}
	}
	return newManifest(out)
}

// BuildManifest hashes every regular file under dir, walking through an
// os.Root. It does not follow symbolic links (a link, even one that stays in
// dir, is not listed: list it by hand if you want it readable), and skips the
// top-level DefaultManifestName file. Entries carry their sizes.
func BuildManifest(dir string) (*Manifest, error) {
	return buildManifest(dir, DefaultManifestName)
}

func buildManifest(dir, skip string) (*Manifest, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("building manifest: %w", err)
	}
	defer root.Close()
	learnRootEscape(root)
	var entries []Entry
	err = fs.WalkDir(root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() || name == skip {
			return nil
		}
		if err := checkManifestName(name); err != nil {
			return fmt.Errorf("%q: %v: %w", name, err, ErrManifestName)
		}
		sum, size, err := hashFile(root, name, -1)
		if err != nil {
			return err
		}
		entries = append(entries, Entry{Path: name, SHA256: sum, Size: size})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("building manifest of %s: %w", dir, err)
	}
	return newManifest(entries), nil
}

// hashFile returns the digest and length of a regular file opened through
// root, refusing files over maxBytes (maxBytes < 0: no limit) even if they
// grow while being read.
func hashFile(root *os.Root, name string, maxBytes int64) ([32]byte, int64, error) {
	sum, n, _, err := hashOpen(root, name, maxBytes)
	return sum, n, err
}

// hashOpen is hashFile that also returns the stat of the file it hashed,
// taken on the open descriptor before the first byte was read.
func hashOpen(root *os.Root, name string, maxBytes int64) (sum [32]byte, n int64, info os.FileInfo, err error) {
	f, info, err := openRegular(root, name, maxBytes)
	if err != nil {
		return sum, 0, nil, err
	}
	defer f.Close()
	h := sha256.New()
	var src io.Reader = f
	if maxBytes >= 0 {
		src = io.LimitReader(f, maxBytes+1)
	}
	if n, err = io.Copy(h, src); err != nil {
		return sum, n, info, fmt.Errorf("reading %q: %w", name, err)
	}
	if maxBytes >= 0 && n > maxBytes {
		return sum, n, info, fmt.Errorf("%q grew past %d bytes: %w", name, maxBytes, errFileTooLarge)
	}
	h.Sum(sum[:0])
	return sum, n, info, nil
}
