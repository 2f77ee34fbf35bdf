package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"
)

// KeySize is the length of every key [DB.Key] returns.
const KeySize = 32

// keyCache remembers keys already read: a key never changes once created.
type keyCache struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (c *keyCache) get(name string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.m[name]
	return k, ok
}

func (c *keyCache) put(name string, k []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string][]byte)
	}
	c.m[name] = k
}

// Key returns the persisted 32-byte secret named name, creating it from
// crypto/rand on first use. Concurrent first uses, from goroutines or
// processes, all get the same key: each tries INSERT ... ON CONFLICT DO
// NOTHING with its own random candidate and then reads back whichever row
// won. The caller gets its own copy. On a read-only handle a missing key is
// ErrNotFound.
//
// The keys are used for the redaction HMAC and attribution signing; they
// live in the store file, which is why it is created 0600.
func (db *DB) Key(ctx context.Context, name string) ([]byte, error) {
	if name == "" {
		return nil, errors.New("store: key: empty name")
	}
	if db.isClosed() {
		return nil, fmt.Errorf("store: key %q: %w", name, ErrClosed)
	}
	if k, ok := db.keys.get(name); ok {
		return clone(k), nil
	}
	k, err := db.readKey(ctx, name)
	if errors.Is(err, ErrNotFound) && db.w != nil {
		k, err = db.createKey(ctx, name)
	}
	if err != nil {
		return nil, err
	}
	db.keys.put(name, k)
	return clone(k), nil
}

func (db *DB) readKey(ctx context.Context, name string) ([]byte, error) {
	var h string
	err := db.r.QueryRowContext(ctx, sqlGetKey, name).Scan(&h)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("store: key %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: key %q: %w", name, err)
	}
	k, err := hex.DecodeString(h)
	if err != nil || len(k) != KeySize {
		return nil, fmt.Errorf("store: key %q is corrupt (want %d hex-encoded bytes)", name, KeySize)
	}
	return k, nil
}

func (db *DB) createKey(ctx context.Context, name string) ([]byte, error) {
	candidate := make([]byte, KeySize)
	rand.Read(candidate) // never fails; crashes the program rather than return weak bytes
	_, err := db.w.ExecContext(ctx, sqlInsertKey, name, hex.EncodeToString(candidate), formatTime(time.Now()))
	if err != nil {
		return nil, fmt.Errorf("store: creating key %q: %w: %w", name, ErrUnavailable, err)
	}
	// Whoever inserted first won; read the row back either way.
	return db.readKey(ctx, name)
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }
