package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/store"
	"github.com/airlock-dev/airlock/store/pgtest"
)

// TestWritable (issue 12 item 2, /readyz): the probe passes on a healthy
// store and commits nothing; it fails with ErrUnavailable when the file
// cannot grow (max_page_count, as with a full disk) and when another
// process holds the write lock past the probe's deadline; a read-only
// handle is ErrReadOnly.
func TestWritable(t *testing.T) {
	ctx := context.Background()
	var batches []int
	var mu sync.Mutex
	db, path := openTemp(t, &store.Options{OnBatch: func(n int, took time.Duration, failed bool) {
		mu.Lock()
		defer mu.Unlock()
		if !failed && took > 0 {
			batches = append(batches, n)
		}
	}})
	appendN(t, db, 0, 3)
	if err := db.Writable(ctx); err != nil {
		t.Fatalf("healthy store: %v", err)
	}
	var probes int
	if err := store.RawOpen(t, path).QueryRow(`SELECT count(*) FROM settings WHERE name = 'airlock.ready-probe'`).Scan(&probes); err != nil || probes != 0 {
		t.Fatalf("the probe left %d rows (%v)", probes, err)
	}
	mu.Lock()
	if len(batches) == 0 || sum(batches) != 3 {
		t.Errorf("OnBatch saw %v, want batches of 3 records in all", batches)
	}
	mu.Unlock()

	t.Run("locked by another process", func(t *testing.T) {
		conn := store.HoldWriteLock(t, store.RawOpen(t, path))
		pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		if err := db.Writable(pctx); !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("locked store: %v, want ErrUnavailable", err)
		}
		conn.ExecContext(ctx, "ROLLBACK")
		if err := db.Writable(ctx); err != nil {
			t.Fatalf("after the lock is released: %v", err)
		}
	})

	t.Run("full", func(t *testing.T) {
		db.Close()
		full := openFull(t, path)
		if err := full.Writable(ctx); !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("full store: %v, want ErrUnavailable", err)
		}
	})

	t.Run("read-only", func(t *testing.T) {
		ro := openRO(t, path)
		if err := ro.Writable(ctx); !errors.Is(err, store.ErrReadOnly) {
			t.Fatalf("read-only handle: %v, want ErrReadOnly", err)
		}
	})
}

func sum(xs []int) (n int) {
	for _, x := range xs {
		n += x
	}
	return n
}

// TestPostgresWritable: the probe is the same on the PostgreSQL backend:
// it passes, leaves nothing behind, and fails while another session holds
// the settings table locked past the probe's deadline.
func TestPostgresWritable(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	db := openPG(t, dsn, nil)
	if err := db.Writable(ctx); err != nil {
		t.Fatalf("healthy store: %v", err)
	}
	raw := rawPG(t, dsn)
	var n int
	if err := raw.QueryRow(`SELECT count(*) FROM settings WHERE name = 'airlock.ready-probe'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("the probe left %d rows (%v)", n, err)
	}
	tx, err := raw.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `LOCK TABLE settings IN EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := db.Writable(pctx); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("locked: %v, want ErrUnavailable", err)
	}
	tx.Rollback()
	if err := db.Writable(ctx); err != nil {
		t.Fatalf("after the lock is released: %v", err)
	}
}
