package policy

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// filesystem is the effective filesystem section: cleaned slash paths.
type filesystem struct {
	read, write []string
}

func compileFilesystem(s FilesystemSpec, parent *filesystem) (*filesystem, error) {
	fs := &filesystem{}
	if parent != nil {
		*fs = *parent
	}
	// Until a list is replaced, fs holds the parent's (none at the top),
	// which bounds the child's.
	var err error
	if len(s.Read) > 0 {
		if fs.read, err = compilePaths("read", s.Read, parent != nil, fs.read); err != nil {
			return nil, err
		}
	}
	if len(s.Write) > 0 {
		if fs.write, err = compilePaths("write", s.Write, parent != nil, fs.write); err != nil {
			return nil, err
		}
	}
	return fs, nil
}

func compilePaths(list string, in []string, child bool, parent []string) ([]string, error) {
	out := make([]string, 0, len(in))
	for i, p := range in {
		field := fmt.Sprintf(".filesystem.%s[%d]", list, i)
		c, err := cleanEntry(p)
		if err != nil {
			return nil, &FieldError{Field: field, Err: err}
		}
		if child && !slices.ContainsFunc(parent, func(pp string) bool { return under(c, pp) }) {
			return nil, &FieldError{Field: field, Err: fmt.Errorf("%q is not under any of the parent's %s paths %v: %w", p, list, parent, ErrWidens)}
		}
		out = append(out, c)
	}
	return out, nil
}

// cleanEntry refuses entries a reader could misjudge: ones that are not
// already clean ("a/../b", "a//b") or that climb out with "..".
func cleanEntry(p string) (string, error) {
	c := path.Clean(p)
	switch {
	case p == "" || strings.ContainsRune(p, 0):
		return "", fmt.Errorf("%q: empty or contains NUL: %w", p, ErrInvalidPath)
	case c != strings.TrimSuffix(p, "/") && c != p:
		return "", fmt.Errorf("%q is not clean (write %q): %w", p, c, ErrInvalidPath)
	case c == ".." || strings.HasPrefix(c, "../"):
		return "", fmt.Errorf("%q climbs out with '..': %w", p, ErrInvalidPath)
	}
	return c, nil
}

// under reports whether p is base or lies beneath it, by whole path
// elements ("out/a" is under "out", "outside" is not). "." covers every
// relative path and "/" every absolute one.
func under(p, base string) bool {
	switch {
	case p == base:
		return true
	case base == ".":
		return !path.IsAbs(p)
	case base == "/":
		return path.IsAbs(p)
	}
	return strings.HasPrefix(p, base) && p[len(base)] == '/'
}

func (fs *filesystem) check(op string, list []string, p string) error {
	if p == "" || strings.ContainsRune(p, 0) {
		return fmt.Errorf("%s of an empty or NUL-bearing path: %w", op, ErrPathDenied)
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return fmt.Errorf("%s of %q climbs out with '..': %w", op, p, ErrPathDenied)
	}
	for _, base := range list {
		if under(c, base) {
			return nil
		}
	}
	return fmt.Errorf("%s of %q is not under filesystem.%s %v: %w", op, p, op, list, ErrPathDenied)
}

// CheckRead reports whether a pipeline may read the slash-separated path p:
// p, cleaned, must be one of filesystem.read or lie beneath one. An empty
// list allows nothing. This is a policy check on names; the sandbox still
// enforces it on the real filesystem. A refusal wraps ErrPathDenied.
func (p *Policy) CheckRead(name string) error { return p.fs.check("read", p.fs.read, name) }

// CheckWrite is CheckRead for filesystem.write.
func (p *Policy) CheckWrite(name string) error { return p.fs.check("write", p.fs.write, name) }

// Filesystem returns the effective read and write lists (cleaned), for a
// sandbox that mounts them.
func (p *Policy) Filesystem() (read, write []string) {
	return slices.Clone(p.fs.read), slices.Clone(p.fs.write)
}
