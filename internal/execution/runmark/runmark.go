// Package runmark marks the pipeline runs in progress, so that a run cut
// short by its process dying (SIGKILL, a crash, power loss) is accounted
// for at the next start instead of leaving, for good, its call's started
// record alone in the audit trail and its workspace on disk (issue 26
// item 8).
//
// # Invariant
//
// A run holds its mark — the file <dir>/<run id>.run, holding what its
// audit record needs — under an exclusive flock(2) from before its
// workspace exists ([Begin]) until after the workspace is removed
// ([Held.End]). The kernel drops the lock when the process dies, however
// it dies, so a mark whose lock [Recover] can take belongs to no live
// process: another server on the same state directory holds its own runs'
// locks, and their marks are left alone. Recover records each abandoned
// run as interrupted, removes its workspace (<dir>/<run id>), then the
// mark; a mark is removed only once its record is in the trail, so a
// store that cannot take the record leaves it for the next start.
//
// # Limits
//
//   - A run whose process dies after [Held.End] but before its call's
//     final record commits leaves the started record alone, as any call
//     dying between its action and its record does.
//   - A mark not yet on the disk when the power went (it is not fsynced)
//     is not found; a SIGKILL loses nothing (the page cache survives).
//   - Marks are per host: flock does not reach across machines sharing a
//     state directory over a network file system.
package runmark

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/audit/audit"
)

// suffix names a mark file.
const suffix = ".run"

// maxMark bounds a mark file; a larger one is corrupt.
const maxMark = 8 << 10

// runID is what run_pipeline names its runs ("run_" and a UUID): a mark
// that names anything else is not one of Airlock's and its name is never
// used to remove a directory.
var runID = regexp.MustCompile(`^run_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// ErrRunID: a run id run_pipeline would not have made.
var ErrRunID = errors.New("runmark: not a run id")

// Held is a run's mark, held until [Held.End].
type Held struct {
	f    *os.File
	path string
}

// Begin marks run r as in progress in dir (created 0711 if missing) and
// holds the mark. Call it before the run's workspace is created.
func Begin(dir string, r audit.Run) (*Held, error) {
	if !runID.MatchString(r.ID) {
		return nil, fmt.Errorf("%w: %q", ErrRunID, r.ID)
	}
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return nil, fmt.Errorf("runmark: %w", err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("runmark: %w", err)
	}
	path := filepath.Join(dir, r.ID+suffix)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("runmark: %w", err)
	}
	// Locked before anything is written: Recover never takes a mark that
	// is being made for a dead run.
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if err == nil {
		_, err = f.Write(b)
	}
	if err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("runmark: %w", err)
	}
	return &Held{f: f, path: path}, nil
}

// End removes the mark, then releases it. Call it once the run's
// workspace is removed (what stays is published output the call's own
// record accounts for).
func (h *Held) End() error {
	err := os.Remove(h.path)
	return errors.Join(err, h.f.Close()) // closing drops the lock
}

// Recover finds the marks in dir that no live process holds, hands each
// run to record (which appends its audit record) and, once record
// succeeded, removes the run's workspace <dir>/<run id> and its mark. It
// returns the runs recovered; errors of some marks do not stop the
// others. A missing dir holds nothing.
func Recover(dir string, record func(audit.Run) error) (int, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("runmark: %w", err)
	}
	var n int
	var errs []error
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), suffix)
		if !ok || !e.Type().IsRegular() || !runID.MatchString(id) {
			continue
		}
		done, err := recoverOne(dir, id, record)
		if err != nil {
			errs = append(errs, fmt.Errorf("run %s: %w", id, err))
		}
		if done {
			n++
		}
	}
	return n, errors.Join(errs...)
}

// recoverOne takes one mark's lock; if it is free, the run's process is
// gone: record it, clean up. A mark that cannot be parsed is still a run
// that started: it is recorded with the id its name gives.
func recoverOne(dir, id string, record func(audit.Run) error) (bool, error) {
	path := filepath.Join(dir, id+suffix)
	f, err := os.OpenFile(path, os.O_RDWR|unix.O_NOFOLLOW, 0)
	if err != nil {
		return false, err
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return false, nil // a live run
		}
		return false, err
	}
	r := parse(f, id)
	if err := record(r); err != nil {
		return false, err
	}
	// The workspace first: a mark left behind by a failed removal is
	// recorded again at the next start rather than the directory forgotten.
	if err := os.RemoveAll(filepath.Join(dir, id)); err != nil {
		return true, err
	}
	return true, os.Remove(path)
}

// parse reads a mark; anything but one strict JSON object of a run with
// the id its name gives yields just that id.
func parse(f *os.File, id string) audit.Run {
	b, err := io.ReadAll(io.LimitReader(f, maxMark+1))
	var r audit.Run
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	// Only white space may follow the object: dec.More() is false before a
	// stray '}' or ']' as well as at the end.
	if err != nil || len(b) > maxMark || dec.Decode(&r) != nil || len(bytes.TrimSpace(b[dec.InputOffset():])) > 0 || r.ID != id {
		return audit.Run{ID: id}
	}
	return r
}
