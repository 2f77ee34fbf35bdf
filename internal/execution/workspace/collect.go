package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// Output is one published output.
type Output struct {
	Name   string `json:"name"` // the declared name, slash-separated
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"` // lowercase hex of the published bytes
}

// Violation is something the pipeline left in out/ that was refused.
type Violation struct {
	Code   violation.Code `json:"code"`   // WRITE_ATTEMPT
	Path   string         `json:"path"`   // relative to out/ ("." for the directory as a whole)
	Detail string         `json:"detail"` // what it was and why it was refused
}

// Collected is the result of [Workspace.CollectFrom].
type Collected struct {
	Outputs      []Output // published, sorted by Name
	Missing      []string // declared outputs the run did not produce
	SnapshotHash string   // see SnapshotHash
	Violations   []Violation
	PublishedDir string // where the outputs now are: baseDir/runID/published
	Manifest     string // their SHA-256 manifest (sha256sum format), baseDir/runID/published.sha256; "" without outputs
}

const (
	// maxEntries bounds the walk: a pipeline that creates a million files
	// gets one violation, not a million-entry evidence record.
	maxEntries = 10000
	// maxViolations are listed individually; the rest are counted.
	maxViolations = 100
)

// CollectFrom reads the run's outputs back through root — the sandbox's
// per-run tmpfs, handed over as the root of the pipeline's /out
// (sandbox.Spec.Collect) — publishes the declared outputs atomically and
// reports everything else as violations. Call it once, after the pipeline
// has ended; on error nothing is published and it may be retried. Nothing
// is removed from root, whose owner discards it.
func (w *Workspace) CollectFrom(root *os.Root) (*Collected, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.collected {
		return nil, ErrCollected
	}
	found, viols, err := w.scan(root)
	if err != nil {
		return nil, err
	}
	c, staging, err := w.stage(root, found, &viols)
	if err != nil {
		if staging != "" {
			os.RemoveAll(staging)
		}
		return nil, err
	}
	final := filepath.Join(w.dir, publishedName)
	// The one step that makes outputs visible: rename(2) of the complete
	// staging directory. It fails if published/ exists, so a crash between
	// two Collects can never mix two sets of outputs.
	if err := os.Rename(staging, final); err != nil {
		os.RemoveAll(staging)
		return nil, fmt.Errorf("publishing outputs: %w", err)
	}
	c.PublishedDir = final
	// The outputs' manifest, beside (not inside) published/, so the run's
	// outputs can be served as a read-only, integrity-checked pool without
	// a name a pipeline could have claimed.
	if len(c.Outputs) > 0 {
		if c.Manifest, err = writeManifest(w.dir, c.Outputs); err != nil {
			return nil, err
		}
	}
	// One flush makes all of it durable — the copies, published/'s rename,
	// the manifest — before CollectFrom returns, so before the store can
	// name the output pool (issue 27: one syncfs instead of an fsync per
	// file, per directory and for the manifest; see syncfs_linux.go).
	if err := publishSync(w.dir); err != nil {
		return nil, fmt.Errorf("making the outputs durable: %w", err)
	}
	c.SnapshotHash = SnapshotHash(c.Outputs)
	c.Violations = capViolations(viols)
	w.collected = true
	return c, nil
}

// writeManifest writes the outputs' manifest next to published/, whole or
// not at all (a temporary file renamed into place); CollectFrom's one
// flush makes it durable.
func writeManifest(dir string, outs []Output) (string, error) {
	var b strings.Builder
	for _, o := range outs {
		fmt.Fprintf(&b, "%s  %s\n", o.SHA256, o.Name)
	}
	path := filepath.Join(dir, manifestName)
	f, err := os.CreateTemp(dir, "."+manifestName+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("writing the outputs' manifest: %w", err)
	}
	defer os.Remove(f.Name()) // nothing left to remove after the rename
	_, err = f.WriteString(b.String())
	err = errors.Join(err, f.Chmod(0o644), f.Close())
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		return "", fmt.Errorf("writing the outputs' manifest: %w", err)
	}
	return path, nil
}

// scan walks out/ without following symlinks (WalkDir never descends into
// a symlink, and DirEntry types come from lstat) and returns the declared
// outputs that are regular files, plus a violation for everything else.
// Blocks: undeclared files (TestCollectUndeclared), symlinks to secrets
// (TestCollectSymlink), special files (TestCollectSpecialFiles).
func (w *Workspace) scan(root *os.Root) (map[string]fs.FileInfo, []Violation, error) {
	found := map[string]fs.FileInfo{}
	var viols []Violation
	refuse := func(p, format string, args ...any) {
		viols = append(viols, Violation{Code: violation.WriteAttempt, Path: p, Detail: fmt.Sprintf(format, args...)})
	}
	entries := 0
	err := fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("reading outputs at %q: %w", p, err)
		}
		if p == "." {
			return nil
		}
		if entries++; entries > maxEntries {
			refuse(".", "more than %d entries in the output directory; the rest were not inspected", maxEntries)
			return fs.SkipAll
		}
		typ := d.Type()
		switch {
		case typ.IsDir() && w.ancestors[p]:
			return nil
		case typ.IsDir() && w.declared[p]:
			refuse(p, "declared output is a directory, not a file")
			return fs.SkipDir
		case typ.IsDir():
			refuse(p, "undeclared directory (discarded with its contents)")
			return fs.SkipDir
		case typ&fs.ModeSymlink != 0:
			target, _ := root.Readlink(p)
			refuse(p, "symbolic link to %.200q refused, not followed", target)
		case !typ.IsRegular():
			refuse(p, "special file (%s) refused", typ.Type())
		case !w.declared[p]:
			refuse(p, "undeclared file (discarded)")
		default:
			fi, err := d.Info()
			if err != nil {
				return fmt.Errorf("inspecting output %q: %w", p, err)
			}
			found[p] = fi
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return found, viols, nil
}

// stage copies each found output into a fresh staging directory, hashing
// the bytes as they are copied.
func (w *Workspace) stage(root *os.Root, found map[string]fs.FileInfo, viols *[]Violation) (*Collected, string, error) {
	staging, err := os.MkdirTemp(w.dir, ".publish-")
	if err != nil {
		return nil, "", fmt.Errorf("staging outputs: %w", err)
	}
	if err := os.Chmod(staging, 0o750); err != nil {
		return nil, staging, fmt.Errorf("staging outputs: %w", err)
	}
	sroot, err := os.OpenRoot(staging)
	if err != nil {
		return nil, staging, fmt.Errorf("staging outputs: %w", err)
	}
	defer sroot.Close()
	c := &Collected{Outputs: []Output{}}
	for _, name := range w.outputs {
		fi, ok := found[name]
		if !ok {
			c.Missing = append(c.Missing, name)
			continue
		}
		out, refusal, err := copyOutput(root, sroot, name, fi)
		switch {
		case err != nil:
			return nil, staging, err
		case refusal != "":
			*viols = append(*viols, Violation{Code: violation.WriteAttempt, Path: name, Detail: refusal})
		default:
			c.Outputs = append(c.Outputs, out)
		}
	}
	return c, staging, nil
}

// copyOutput opens name in root, checks it is still the regular,
// single-link file the walk saw, and copies it into sroot. A non-empty
// refusal means the file was refused (a violation), not an I/O failure.
func copyOutput(root, sroot *os.Root, name string, seen fs.FileInfo) (Output, string, error) {
	// O_NONBLOCK: if a FIFO were swapped in, open must not wait for a
	// writer. os.Root adds O_NOFOLLOW and never leaves the root.
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return Output{}, "", fmt.Errorf("opening output %q: %w", name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Output{}, "", fmt.Errorf("inspecting output %q: %w", name, err)
	}
	switch {
	case !fi.Mode().IsRegular() || !os.SameFile(fi, seen):
		// The name now leads somewhere else (a symlink or directory was
		// swapped in after the walk): refuse rather than follow.
		return Output{}, "output changed while being collected; refused", nil
	case linkCount(fi) > 1:
		// A hard link shares its inode with another name the pipeline
		// could reach; refuse so the server only publishes files that
		// exist solely as the declared output (TestCollectHardLink).
		return Output{}, fmt.Sprintf("hard link (%d names) refused", linkCount(fi)), nil
	}
	if dir := path.Dir(name); dir != "." {
		if err := sroot.MkdirAll(dir, 0o750); err != nil {
			return Output{}, "", fmt.Errorf("staging output %q: %w", name, err)
		}
	}
	dst, err := sroot.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return Output{}, "", fmt.Errorf("staging output %q: %w", name, err)
	}
	h := sha256.New()
	// Not fsynced here: CollectFrom flushes every copy at once.
	n, err := io.Copy(io.MultiWriter(dst, h), f)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Output{}, "", fmt.Errorf("copying output %q: %w", name, err)
	}
	return Output{Name: name, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, "", nil
}

// SnapshotHash is the deterministic hash of a set of outputs: the
// lowercase hex SHA-256 of the lines "<sha256>  <name>\n", one per output,
// sorted by name byte-wise. That is exactly what `sha256sum` prints, so an
// operator can recompute it in the published directory with
//
//	find . -type f | sed 's|^\./||' | LC_ALL=C sort | xargs -d '\n' sha256sum | sha256sum
//
// Names are canonical (ValidOutputName: no newline, no backslash), so the
// encoding is unambiguous. Input order does not matter; no outputs hash to
// the SHA-256 of the empty string.
func SnapshotHash(outputs []Output) string {
	sorted := append([]Output(nil), outputs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	h := sha256.New()
	for _, o := range sorted {
		fmt.Fprintf(h, "%s  %s\n", o.SHA256, o.Name)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func capViolations(v []Violation) []Violation {
	if len(v) <= maxViolations {
		return v
	}
	extra := len(v) - maxViolations
	v = v[:maxViolations:maxViolations]
	return append(v, Violation{Code: violation.WriteAttempt, Path: ".",
		Detail: fmt.Sprintf("%d more violations not listed", extra)})
}
