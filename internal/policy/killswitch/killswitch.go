// Package killswitch keeps the kill switch in a file of its own in the
// state directory, so that tripping it needs no database lock and no
// database rollback can release it.
//
// # Invariants
//
//   - Tripping never waits for the audit store. [Write] replaces the file
//     atomically (temporary file, fsync, rename, fsync of the directory), so
//     `airlock kill` engages the switch even while another process holds
//     the store's write lock (issue 10 item 13); the audit record of the
//     change follows when the store can take it.
//   - Fail closed. A file that cannot be read or parsed reads as engaged
//     ([Switch.State] returns Engaged with the error); only a missing file
//     reads as released.
//   - Read by every call, by construction. [Switch.Check] looks at the
//     file on the caller's path — one stat(2), ~1.4 µs; the file is read
//     and parsed again only when its inode, size or times changed, and a
//     Write always makes a new inode — and asks the store's setting, so a
//     call that starts after `airlock kill` returned is refused whatever
//     the load: no watcher goroutine has to be scheduled first (issue 26
//     item 7, TestCheckSeesEveryChangeBeforeIt).
//   - Every change has an ID, carried into its audit record, so the change
//     is recorded exactly once however many processes notice it.
//
// # Limits
//
// Anyone who can write the state directory can trip or release the switch
// (operator authority is file access). The file is per machine: with
// several instances on one PostgreSQL store, the store's kill_switch row
// (which `airlock kill` also writes) is what every machine shares, and
// the file only trips the instances beside it. A release that bypasses
// `airlock kill --release` leaves no checkpoint, which `airlock audit verify`
// reports (package witness).
package killswitch

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/airlock-dev/airlock/internal/kit/strictjson"
)

// FileName is the kill switch's file in the state directory.
const FileName = "kill_switch.json"

// maxFile bounds the file; anything larger is corrupt (and engaged).
const maxFile = 16 << 10

// ErrCorrupt: the file is not a kill-switch state this package wrote.
var ErrCorrupt = errors.New("kill switch file is corrupt")

// State is the kill switch as written by the operator.
type State struct {
	Engaged bool      `json:"engaged"`
	By      string    `json:"by"`
	Reason  string    `json:"reason"`
	At      time.Time `json:"at"`
	// ID names this change (32 hex digits); its audit record carries it.
	ID string `json:"id"`
}

// NewID returns a fresh change ID.
func NewID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Parse decodes the file's contents strictly: one JSON object with exactly
// the known fields (no duplicates, nothing after it) and a well-formed ID.
// Anything else is ErrCorrupt.
func Parse(b []byte) (State, error) {
	var s State
	if len(b) > maxFile {
		return s, fmt.Errorf("%d bytes: %w", len(b), ErrCorrupt)
	}
	// Duplicate keys would let {"engaged":true,"engaged":false} mean
	// different things to different readers.
	if err := strictjson.Check(b, 4); err != nil {
		return s, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return State{}, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return State{}, fmt.Errorf("trailing data: %w", ErrCorrupt)
	}
	if id, err := hex.DecodeString(s.ID); err != nil || len(id) != 16 || s.ID != hex.EncodeToString(id) {
		return State{}, fmt.Errorf("id %q: %w", s.ID, ErrCorrupt)
	}
	return s, nil
}

// Write replaces the kill switch file in dir with s, durably: when it
// returns nil, every process's next [Switch.State] sees s, and so does a
// reader after a crash.
func Write(dir string, s State) error {
	if s.ID == "" {
		s.ID = NewID()
	}
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("killswitch: %w", err)
	}
	if _, err := Parse(b); err != nil {
		return fmt.Errorf("killswitch: refusing to write: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("killswitch: %w", err)
	}
	defer root.Close()
	tmp := "." + FileName + "." + NewID()[:12] + ".tmp"
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("killswitch: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, FileName)
	}
	if err != nil {
		root.Remove(tmp)
		return fmt.Errorf("killswitch: writing: %w", err)
	}
	// The rename is durable only once the directory is.
	d, err := root.Open(".")
	if err != nil {
		return fmt.Errorf("killswitch: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("killswitch: fsync of the directory: %w", err)
	}
	return nil
}

// Read returns the state in dir: released if there is no file, engaged
// (with the error) if it cannot be read or parsed.
func Read(dir string) (State, error) {
	s, _, err := readFile(filepath.Join(dir, FileName))
	return s, err
}

func readFile(path string) (State, bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return State{}, false, nil
	}
	if err != nil {
		return State{Engaged: true}, true, fmt.Errorf("killswitch: %w", err)
	}
	s, err := Parse(b)
	if err != nil {
		return State{Engaged: true}, true, fmt.Errorf("killswitch: %w", err)
	}
	return s, true, nil
}

// Switch is one process's view of the kill switch file, for the per-call
// check. It is safe for concurrent use.
type Switch struct {
	path  string
	stats atomic.Int64 // stat(2) calls, for tests

	mu    sync.Mutex
	valid bool
	stamp stamp
	state State
	err   error
}

// stamp identifies one version of the file.
type stamp struct {
	exists       bool
	dev, ino     uint64
	size         int64
	mtime, ctime syscall.Timespec
}

// Open returns the switch for state directory dir; nothing is read yet.
func Open(dir string) *Switch { return &Switch{path: filepath.Join(dir, FileName)} }

// State returns the current state. On error it returns an engaged state
// with the error, so a caller that looks only at Engaged fails closed.
func (s *Switch) State() (State, error) {
	s.stats.Add(1)
	st, err := statFile(s.path)
	if err != nil {
		s.mu.Lock()
		s.valid = false
		s.mu.Unlock()
		return State{Engaged: true}, fmt.Errorf("killswitch: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.valid && st == s.stamp {
		return s.state, s.err
	}
	// Stat before read: a change between the two is newer than the stamp
	// says and the next call reads again; never a stale state kept.
	state, _, err := readFile(s.path)
	s.valid, s.stamp, s.state, s.err = true, st, state, err
	return state, err
}

// Stats is how many times State has looked at the file (for tests: once
// per call).
func (s *Switch) Stats() int64 { return s.stats.Load() }

func statFile(path string) (stamp, error) {
	var st syscall.Stat_t
	err := syscall.Stat(path, &st)
	if errors.Is(err, syscall.ENOENT) {
		return stamp{}, nil
	}
	if err != nil {
		return stamp{}, err
	}
	return stamp{exists: true, dev: uint64(st.Dev), ino: st.Ino, size: st.Size, mtime: st.Mtim, ctime: st.Ctim}, nil
}
