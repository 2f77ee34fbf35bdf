package store

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/airlock-dev/airlock/store/pgtest"
)

// openOn opens a store on each engine, closed at the end of the test; the
// PostgreSQL one is skipped where there is no database.
var openOn = map[string]func(t *testing.T) *DB{
	"sqlite": func(t *testing.T) *DB {
		db, err := Open(filepath.Join(t.TempDir(), "a.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	},
	"postgres": func(t *testing.T) *DB {
		db, err := OpenPostgres(pgtest.DSN(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	},
}

// TestInTx: the one transaction helper commits what its callback wrote
// when it returns nil, and nothing otherwise — errRollback is no error,
// any other error comes back as it was; a failure of its own wraps
// ErrUnavailable, except the caller's cancellation, unless the
// transaction appends to the chain. On both engines, durable and
// deferred.
func TestInTx(t *testing.T) {
	for name, open := range openOn {
		t.Run(name, func(t *testing.T) {
			db := open(t)
			ctx := context.Background()
			mine := errors.New("mine")
			for _, o := range []txOpts{{}, {deferred: true}, {locks: []string{"a", "b"}}} {
				for _, c := range []struct {
					ret     error
					wantErr error
					stored  bool
				}{
					{nil, nil, true},
					{errRollback, nil, false},
					{mine, mine, false},
				} {
					key := "tx-test"
					err := db.inTx(ctx, "test", o, func(tx *sql.Tx) error {
						if _, err := tx.ExecContext(ctx, sqlUpsertSetting, key, "v", "by", "why", "at"); err != nil {
							t.Fatal(err)
						}
						return c.ret
					})
					if err != c.wantErr {
						t.Errorf("%+v, callback %v: inTx = %v, want %v", o, c.ret, err, c.wantErr)
					}
					var v string
					err = db.r.QueryRowContext(ctx, sqlGetSetting, key).Scan(&v)
					if stored := err == nil; stored != c.stored {
						t.Errorf("%+v, callback %v: stored %v (%v), want %v", o, c.ret, stored, err, c.stored)
					}
					if _, err := db.w.ExecContext(ctx, `DELETE FROM settings WHERE name = $1`, key); err != nil {
						t.Fatal(err)
					}
				}
			}
			cancelled, cancel := context.WithCancel(ctx)
			cancel()
			ran := false
			for _, o := range []txOpts{{}, {deferred: true}, {chain: true}} {
				err := db.inTx(cancelled, "test", o, func(*sql.Tx) error { ran = true; return nil })
				if !errors.Is(err, context.Canceled) || errors.Is(err, ErrUnavailable) != o.chain {
					t.Errorf("%+v, cancelled: %v; want context.Canceled, ErrUnavailable only for the chain", o, err)
				}
			}
			if ran {
				t.Error("the callback ran in a transaction that never began")
			}
		})
	}
}
