package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// Sentinel errors; the wrapped text names the offending value.
var (
	// ErrInvalidRunID: a run id must be 1-128 of [A-Za-z0-9._-], not
	// starting with '.' or '-'.
	ErrInvalidRunID = errors.New("invalid run id")
	// ErrInvalidOutput: an output name is not a canonical relative path,
	// or two declared outputs collide.
	ErrInvalidOutput = errors.New("invalid output name")
	// ErrInvalidBase: baseDir is not an absolute path.
	ErrInvalidBase = errors.New("invalid workspace base directory")
	// ErrExists: the run directory already exists; a workspace is never
	// reused, so one run can never see another's files.
	ErrExists = errors.New("workspace already exists")
	// ErrCollected: CollectFrom was already called.
	ErrCollected = errors.New("workspace already collected")
)

const (
	maxOutputs    = 256
	maxNameLen    = 1024
	maxElemLen    = 255
	maxRunIDLen   = 128
	outDirName    = "out"
	tmpDirName    = "tmp"
	publishedName = "published"
	manifestName  = "published.sha256"
)

// Workspace is one run's directory. Its methods are safe for concurrent use.
type Workspace struct {
	runID     string
	dir       string // baseDir/runID
	outDir    string
	tmpDir    string // "" when temp files are not allowed
	outputs   []string
	declared  map[string]bool
	ancestors map[string]bool // directories that lead to a declared output

	mu        sync.Mutex
	collected bool
}

// Create makes baseDir/runID with out/ (and tmp/ when allowTemp) for a run
// that may produce exactly the named outputs. The run directory must not
// exist yet.
func Create(baseDir, runID string, outputs []string, allowTemp bool) (*Workspace, error) {
	if !filepath.IsAbs(baseDir) || strings.IndexByte(baseDir, 0) >= 0 {
		return nil, fmt.Errorf("%w: %q is not absolute", ErrInvalidBase, baseDir)
	}
	if err := validRunID(runID); err != nil {
		return nil, err
	}
	if len(outputs) > maxOutputs {
		return nil, fmt.Errorf("%w: %d outputs declared, at most %d", ErrInvalidOutput, len(outputs), maxOutputs)
	}
	w := &Workspace{
		runID:     runID,
		dir:       filepath.Join(filepath.Clean(baseDir), runID),
		declared:  map[string]bool{},
		ancestors: map[string]bool{},
	}
	for _, name := range outputs {
		if err := ValidOutputName(name); err != nil {
			return nil, err
		}
		if w.declared[name] {
			return nil, fmt.Errorf("%w: %q declared twice", ErrInvalidOutput, name)
		}
		w.declared[name] = true
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			w.ancestors[d] = true
		}
	}
	for name := range w.declared {
		if w.ancestors[name] {
			return nil, fmt.Errorf("%w: %q is both an output and a directory of another output", ErrInvalidOutput, name)
		}
	}
	w.outputs = slices.Sorted(maps.Keys(w.declared))

	// 0711: nobody else may list the base or the run directory (a pipeline
	// writes to its tmpfs and never enters them).
	if err := os.MkdirAll(baseDir, 0o711); err != nil {
		return nil, fmt.Errorf("creating workspace base: %w", err)
	}
	if err := os.Mkdir(w.dir, 0o711); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("%w: run %q", ErrExists, runID)
		}
		return nil, fmt.Errorf("creating workspace: %w", err)
	}
	w.outDir = filepath.Join(w.dir, outDirName)
	dirs := []string{w.outDir}
	if allowTemp {
		w.tmpDir = filepath.Join(w.dir, tmpDirName)
		dirs = append(dirs, w.tmpDir)
	}
	for _, d := range dirs {
		if err := os.Mkdir(d, 0o700); err != nil {
			os.RemoveAll(w.dir)
			return nil, fmt.Errorf("creating workspace: %w", err)
		}
	}
	return w, nil
}

// Remove deletes the pipeline's directories (out/, tmp/ and any staging
// left by a failed CollectFrom). Published outputs stay: they belong to the
// caller. The run directory itself is removed when nothing was published.
func (w *Workspace) Remove() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var errs []error
	ents, err := os.ReadDir(w.dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing workspace: %w", err)
	}
	for _, e := range ents {
		if e.Name() == publishedName || e.Name() == manifestName {
			continue
		}
		// os.RemoveAll unlinks symlinks rather than following them.
		if err := os.RemoveAll(filepath.Join(w.dir, e.Name())); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.Remove(w.dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Lstat(filepath.Join(w.dir, publishedName)); serr != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("removing workspace: %w", err)
	}
	return nil
}

// ValidOutputName reports whether name is a canonical relative output path:
// slash-separated, no empty, "." or ".." elements, no leading or trailing
// slash, valid UTF-8 without control characters or backslashes, each
// element at most 255 bytes and the whole at most 1024. Canonical means
// there is exactly one spelling per file, so the snapshot hash and the
// declared set cannot be gamed with "a//b" or "./a".
func ValidOutputName(name string) error {
	bad := func(why string) error {
		return fmt.Errorf("%w: %q: %s", ErrInvalidOutput, name, why)
	}
	switch {
	case len(name) > maxNameLen:
		return bad("too long")
	case !utf8.ValidString(name):
		return bad("not UTF-8")
	case !fs.ValidPath(name) || name == ".":
		return bad("not a canonical relative path")
	case strings.ContainsRune(name, '\\'):
		return bad("contains a backslash")
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return bad("contains a control character")
		}
	}
	for _, elem := range strings.Split(name, "/") {
		if len(elem) > maxElemLen {
			return bad("path element too long")
		}
	}
	return nil
}

func validRunID(id string) error {
	if id == "" || len(id) > maxRunIDLen || id[0] == '.' || id[0] == '-' {
		return fmt.Errorf("%w: %q", ErrInvalidRunID, id)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: %q", ErrInvalidRunID, id)
		}
	}
	return nil
}
