package witness

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// KeySize is the length of the witness key.
const KeySize = 32

// Chain is the audit chain as the witness sees it. store.DB implements it;
// a PostgreSQL store would too. Implementations must be safe for concurrent
// use.
type Chain interface {
	// Head returns the seq and hash of the last record (0 and 64 zeros for
	// an empty chain), as committed at the moment of the call.
	Head(ctx context.Context) (seq int64, hash string, err error)
	// HashAt returns the hash of record seq; ok is false if there is none.
	HashAt(ctx context.Context, seq int64) (hash string, ok bool, err error)
}

// RotatedChain is a Chain whose oldest records may have been moved out of
// it (store rotation): RotatedBefore is the first seq it still holds. A
// checkpoint of an earlier seq that HashAt no longer knows is then not a
// rollback; [Check] skips it (it checks it when HashAt knows it, as a chain
// that includes the rotated segments does).
type RotatedChain interface {
	Chain
	RotatedBefore(ctx context.Context) (int64, error)
}

// LoadOrCreateKey reads the key file at path, creating it (0600, 32 random
// bytes hex-encoded, fsynced) if it does not exist. Two processes creating
// it at once end up with the same key: creation is O_EXCL and the loser
// reads the winner's file.
func LoadOrCreateKey(path string) ([]byte, error) {
	k, err := LoadKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return k, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("witness: key directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return LoadKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("witness: creating key: %w", err)
	}
	k = make([]byte, KeySize)
	rand.Read(k) // never fails; crashes rather than return weak bytes
	_, err = f.Write(append(hex.AppendEncode(nil, k), '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		return nil, fmt.Errorf("witness: writing key: %w", err)
	}
	return k, nil
}

// LoadKey reads an existing key file. A missing file wraps fs.ErrNotExist;
// a file that is not 64 hex digits (and an optional newline) is ErrBadKey.
func LoadKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("witness: reading key: %w", err)
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	k := make([]byte, KeySize)
	if n, err := hex.Decode(k, b); err != nil || n != KeySize || len(b) != 2*KeySize {
		return nil, fmt.Errorf("witness: key file %s: %w", filepath.Base(path), ErrBadKey)
	}
	return k, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Options tune a [Log]. Nil means defaults.
type Options struct {
	// Instance names this process in its checkpoints (default derived from
	// the host name, pid and a random suffix).
	Instance string
	// Mirrors are further witness files every checkpoint is appended to,
	// e.g. on another file system or an append-only (chattr +a) file. Each
	// is a full witness that [ReadFile] and [Check] accept on its own.
	Mirrors []string
}

// Log appends signed checkpoints to a witness file (and its mirrors). It is
// safe for concurrent use, and several processes may append to one file.
type Log struct {
	key      []byte
	instance string
	mu       sync.Mutex
	files    []*os.File // primary first
}

// OpenLog opens (creating, 0600) the witness file at path for appending.
func OpenLog(path string, key []byte, opts *Options) (*Log, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("witness: %w", ErrBadKey)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Instance == "" {
		o.Instance = NewInstance("airlock")
	}
	if !validInstance(o.Instance) {
		return nil, fmt.Errorf("witness: instance %q: %w", o.Instance, ErrMalformed)
	}
	l := &Log{key: bytes.Clone(key), instance: o.Instance}
	for _, p := range append([]string{path}, o.Mirrors...) {
		// O_APPEND: every write lands at the end even with other writers;
		// one checkpoint is one write of under MaxLine bytes.
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			l.Close()
			return nil, fmt.Errorf("witness: opening %s: %w", p, err)
		}
		l.files = append(l.files, f)
	}
	return l, nil
}

// NewInstance returns "<role>.<host>.<pid>.<random>", trimmed to what a
// checkpoint's instance field allows.
func NewInstance(role string) string {
	host, _ := os.Hostname()
	var r [3]byte
	rand.Read(r[:])
	s := fmt.Sprintf("%s.%s.%d.%x", role, host, os.Getpid(), r)
	b := []byte(s)
	for i, c := range b {
		if !validInstance(string(c)) {
			b[i] = '_'
		}
	}
	if len(b) > maxInstance {
		b = b[len(b)-maxInstance:]
	}
	return string(b)
}

// Checkpoint reads the chain head and appends a checkpoint of it with the
// given kill-switch state to every witness file, returning after fsync.
//
// The head is read while holding an exclusive flock on the primary file,
// so checkpoints from several processes appear in head order: a later line
// never names an older head unless the chain itself went back.
func (l *Log) Checkpoint(ctx context.Context, chain Chain, kill bool) (Checkpoint, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.files == nil {
		return Checkpoint{}, errors.New("witness: log is closed")
	}
	primary := l.files[0]
	if err := flock(ctx, primary); err != nil {
		return Checkpoint{}, fmt.Errorf("witness: locking: %w", err)
	}
	defer unix.Flock(int(primary.Fd()), unix.LOCK_UN)
	seq, head, err := chain.Head(ctx)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("witness: reading chain head: %w", err)
	}
	c := Checkpoint{Seq: seq, Head: head, Kill: kill, Time: time.Now().UTC(), Instance: l.instance}
	line, err := c.Marshal(l.key)
	if err != nil {
		return Checkpoint{}, err
	}
	var errs []error
	for _, f := range l.files {
		if _, err := f.Write(line); err != nil {
			errs = append(errs, fmt.Errorf("appending to %s: %w", f.Name(), err))
			continue
		}
		if err := f.Sync(); err != nil {
			errs = append(errs, fmt.Errorf("fsync %s: %w", f.Name(), err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("witness: %w", err)
	}
	return c, nil
}

// flock takes an exclusive lock, polling so that ctx can cancel the wait.
func flock(ctx context.Context, f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// Close closes the witness files.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	for _, f := range l.files {
		errs = append(errs, f.Close())
	}
	l.files = nil
	return errors.Join(errs...)
}

// ReadFile reads and checks every line of the witness file at path. A
// missing file is no checkpoints and no error: [Check] then decides whether
// the chain needed one.
func ReadFile(path string, key []byte) ([]Checkpoint, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("witness: reading: %w", err)
	}
	return Parse(b, key)
}

// ErrUnreachable: a witness file (the primary or a mirror) is no longer
// the file the log opened — its mount went away, or it was deleted or
// replaced — so checkpoints would not land where `audit verify` looks.
var ErrUnreachable = errors.New("witness file unreachable")

// Reachable checks, cheaply (two stats per file, no write), that each
// witness file is still reachable at its path and is the file the log
// has open. For /readyz; a write failure is still only seen when a
// checkpoint is written.
func (l *Log) Reachable() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.files == nil {
		return errors.New("witness: log is closed")
	}
	for _, f := range l.files {
		open, err := f.Stat()
		if err != nil {
			return fmt.Errorf("witness: %s: %w: %w", f.Name(), ErrUnreachable, err)
		}
		now, err := os.Stat(f.Name())
		if err != nil {
			return fmt.Errorf("witness: %s: %w: %w", f.Name(), ErrUnreachable, err)
		}
		if !os.SameFile(open, now) {
			return fmt.Errorf("witness: %s was replaced: %w", f.Name(), ErrUnreachable)
		}
	}
	return nil
}
