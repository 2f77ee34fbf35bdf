package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/store"
)

// openTemp opens a new store in a fresh temporary directory.
func openTemp(t testing.TB, opts *store.Options) (*store.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state", "airlock.db")
	return openPathWith(t, path, opts), path
}

// twoSQLite opens two handles on one new SQLite file, as two processes
// would.
func twoSQLite(t *testing.T) (*store.DB, *store.DB) {
	db, path := openTemp(t, nil)
	return db, openPath(t, path)
}

// onSQLite runs a contract between two handles on one SQLite file; its
// twin onPostgres runs the same contract on PostgreSQL.
func onSQLite(t *testing.T, contract func(t *testing.T, a, b *store.DB)) {
	a, b := twoSQLite(t)
	contract(t, a, b)
}

// openPath opens the store at path, another handle on it when it is open
// already (as another process would); it is closed when the test ends.
func openPath(t testing.TB, path string) *store.DB {
	t.Helper()
	return openPathWith(t, path, nil)
}

func openPathWith(t testing.TB, path string, opts *store.Options) *store.DB {
	t.Helper()
	db, err := store.Open(path, opts)
	return opened(t, "Open", db, err)
}

// openRO opens the store at path read-only; it is closed when the test
// ends.
func openRO(t testing.TB, path string) *store.DB {
	t.Helper()
	db, err := store.OpenReadOnly(path)
	return opened(t, "OpenReadOnly", db, err)
}

// opened is every open helper's end: the open (named by how) failing
// fails the test, else the handle is closed when the test ends.
func opened(t testing.TB, how string, db *store.DB, err error) *store.DB {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", how, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// writeTemplate appends records 1 to 10 to the store just opened (the
// open failing fails the test) and closes it: the chain each tamper case
// copies, SQLite or PostgreSQL alike.
func writeTemplate(t *testing.T, db *store.DB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, db, 1, 10)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// sample returns a filled-in record whose contents depend on i.
func sample(i int) *audit.Record {
	return &audit.Record{
		Time:           time.Date(2026, 6, 7, 12, 0, 0, 0, time.UTC).Add(time.Duration(i) * 1500 * time.Microsecond),
		SessionID:      fmt.Sprintf("sess-%d", i%3),
		ContextID:      "ctx-1",
		Principal:      "alice",
		Role:           "analyst",
		Transport:      "stdio",
		Tool:           "read_pool_file",
		Capability:     "pool.read",
		Tier:           "read",
		Phase:          "planning",
		Decision:       "allow",
		RuleID:         "allow-pool-read",
		Reason:         fmt.Sprintf("call %d", i),
		Args:           json.RawMessage(fmt.Sprintf(`{"pool":"p1","path":"f%d.csv"}`, i)),
		Outcome:        audit.OutcomeOK,
		DurationMicros: int64(100 + i),
		OutputBytes:    int64(4096 * i),
		Truncated:      i%2 == 0,
		Extra:          json.RawMessage(`{"sha256":"ab"}`),
	}
}

// appendN appends n sample records serially, numbered from base.
func appendN(t testing.TB, db *store.DB, base, n int) {
	t.Helper()
	for i := range n {
		if err := db.Append(context.Background(), sample(base+i)); err != nil {
			t.Fatalf("Append %d: %v", base+i, err)
		}
	}
}

// appendTail appends n sample records numbered from 1 and returns them as
// Tail reads them back.
func appendTail(t testing.TB, db *store.DB, n int) []audit.Record {
	t.Helper()
	appendN(t, db, 1, n)
	recs, err := db.Tail(context.Background(), n)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// fullAfter appends n records to a new store, closes it and opens it
// again full (openFull).
func fullAfter(t testing.TB, n int) *store.DB {
	t.Helper()
	db, path := openTemp(t, nil)
	appendN(t, db, 0, n)
	db.Close()
	return openFull(t, path)
}

// openFull opens the closed store at path capped at its current size
// (Options.MaxPageCount), so that SQLite fails any write needing a new
// page with SQLITE_FULL; it is closed when the test ends.
func openFull(t testing.TB, path string) *store.DB {
	t.Helper()
	var pages int64
	if err := store.RawOpen(t, path).QueryRow(`PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	full, err := store.Open(path, &store.Options{MaxPageCount: pages})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { full.Close() })
	return full
}

// mustVerify fails the test unless the chain verifies with want records.
func mustVerify(t testing.TB, db *store.DB, want int64) {
	t.Helper()
	res, err := db.Verify(context.Background())
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if !res.OK || res.Records != want {
		t.Fatalf("Verify = %+v, want OK with %d records", res, want)
	}
}

// verifyWhile verifies db again and again while appends runs, failing at
// the first verdict that is not OK (a reader that does not see one
// snapshot reports a false "deleted from the end"), and once more when
// appends is done, for want records.
func verifyWhile(t *testing.T, db *store.DB, want int64, appends func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		appends()
	}()
	for {
		res, err := db.Verify(context.Background())
		if err != nil || !res.OK {
			t.Fatalf("Verify during appends = %+v, %v", res, err)
		}
		select {
		case <-done:
			mustVerify(t, db, want)
			return
		default:
		}
	}
}

// allSeqs returns every record's seq in Scan order and fails unless they
// are exactly 1..len.
func mustBeContiguous(t testing.TB, db *store.DB) int {
	t.Helper()
	n := 0
	err := db.Scan(context.Background(), 0, func(r *audit.Record) error {
		n++
		if r.Seq != int64(n) {
			return fmt.Errorf("record %d has seq %d", n, r.Seq)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// sameRecord reports how got differs from want, or "" when equal. Times are
// compared as instants and must be UTC.
func sameRecord(got, want *audit.Record) string {
	if !got.Time.Equal(want.Time) || got.Time.Location() != time.UTC {
		return fmt.Sprintf("time %v, want %v (UTC)", got.Time, want.Time)
	}
	g, w := *got, *want
	g.Time, w.Time = time.Time{}, time.Time{}
	if len(g.Args) == 0 && len(w.Args) == 0 {
		g.Args, w.Args = nil, nil
	}
	if len(g.Extra) == 0 && len(w.Extra) == 0 {
		g.Extra, w.Extra = nil, nil
	}
	if !reflect.DeepEqual(g, w) {
		return fmt.Sprintf("\n got %+v\nwant %+v", g, w)
	}
	return ""
}

// copyStore copies a closed store's file(s) into a new directory.
func copyStore(t testing.TB, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "airlock.db")
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(src + suffix)
		if os.IsNotExist(err) && suffix != "" {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst+suffix, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}
