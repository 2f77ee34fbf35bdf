package sources

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// Reasons a name is refused. They are the private cause inside a
// PATH_OUTSIDE_POOLS violation or a ManifestError, never agent text.
var (
	errEmptyName    = errors.New("empty name")
	errLongName     = fmt.Errorf("name longer than %d bytes", MaxPathLen)
	errNULName      = errors.New("name contains NUL")
	errAbsName      = errors.New("name is absolute")
	errUncleanName  = errors.New("name is not clean (\"\", \".\", \"..\", \"//\" or trailing \"/\" element)")
	errParentName   = errors.New("name has a \"..\" element")
	errBackslash    = errors.New("name contains a backslash")
	errNotRegular   = errors.New("not a regular file")
	errFileTooLarge = errors.New("file larger than the size limit")
)

// checkManifestName accepts the names a manifest may hold: canonical,
// relative, slash-separated, NUL-free, at most MaxPathLen bytes.
func checkManifestName(name string) error {
	switch {
	case name == "":
		return errEmptyName
	case len(name) > MaxPathLen:
		return errLongName
	case strings.IndexByte(name, 0) >= 0:
		return errNULName
	case name[0] == '/':
		return errAbsName
	case path.Clean(name) != name || name == ".":
		// Clean rewrites "./a", "a//b", "a/./b", "a/" and "a/../b", so one
		// comparison refuses every non-canonical spelling of a name.
		return errUncleanName
	case name == ".." || strings.HasPrefix(name, "../"):
		// The only ".." a clean relative path can hold is a leading one.
		return errParentName
	case !filepath.IsLocal(name):
		// Redundant on Unix with the checks above; kept as the standard
		// library's own definition of "stays under the directory".
		return errParentName
	}
	return nil
}

// checkName accepts the names an agent may read: manifest names without a
// backslash. A backslash is a separator on Windows, so "a\..\b" is refused
// rather than trusted to mean one odd file name (TestReadHostilePaths).
// Percent-encoding is not decoded: "%2e%2e" is a three-character-pair name.
func checkName(name string) error {
	if err := checkManifestName(name); err != nil {
		return err
	}
	if strings.IndexByte(name, '\\') >= 0 {
		return errBackslash
	}
	return nil
}

// rootEscape holds os's unexported "path escapes from parent" error, learnt
// from the first pool Root by asking it for "..", which a Root refuses
// lexically without any I/O. Matching that value with errors.Is (rather than
// matching error text) is how a symlink that leaves the pool is told apart
// from a missing file; TestReadHostilePaths fails if Go ever changes it.
// It is written once, inside OpenRegistry, before any Registry (and so any
// Read or Verify that consults it) exists, so reads need no lock.
var rootEscape struct {
	once sync.Once
	err  error
}

func learnRootEscape(r *os.Root) {
	rootEscape.once.Do(func() {
		_, err := r.Lstat("..")
		var pe *fs.PathError
		if errors.As(err, &pe) {
			rootEscape.err = pe.Err
		}
	})
}

func isRootEscape(err error) bool {
	return rootEscape.err != nil && errors.Is(err, rootEscape.err)
}

// Problem kinds, shared by Verify's report and Read's refusals.
const (
	ProblemMissing     = "missing"
	ProblemMismatch    = "mismatch"
	ProblemUnreadable  = "unreadable"
	ProblemOutsidePool = "outside_pool"
	ProblemTooLarge    = "too_large"
)

// problemKind classifies an error from openRegular or reading the file.
func problemKind(err error) string {
	switch {
	case isRootEscape(err):
		return ProblemOutsidePool
	case errors.Is(err, errFileTooLarge):
		return ProblemTooLarge
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return ProblemMissing
	default:
		return ProblemUnreadable
	}
}

// openRegular opens name through root and refuses anything that is not a
// regular file of at most maxBytes (maxBytes < 0: no limit), and returns the
// descriptor's own stat (the file version the digest cache keys on). The open is
// non-blocking so that a FIFO planted under a manifest name cannot hang the
// reader (TestReadHostilePaths/fifo); the type is checked on the opened
// descriptor, so there is no window between check and use.
func openRegular(root *os.Root, name string, maxBytes int64) (*os.File, os.FileInfo, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("stat %q: %w", name, err)
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%q is %v: %w", name, info.Mode().Type(), errNotRegular)
	}
	if maxBytes >= 0 && info.Size() > maxBytes {
		f.Close()
		return nil, nil, fmt.Errorf("%q has %d bytes, limit %d: %w", name, info.Size(), maxBytes, errFileTooLarge)
	}
	return f, info, nil
}
