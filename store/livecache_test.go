package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/audit/audit"
)

// TestAppendLabelledAcrossHandles: the writer's memory of provenance_live
// (livecache.go) never decides anything a read of the row would decide
// otherwise. Two handles on one file (two processes) label one context
// through their writers, interleaved at random, and RecordContent (which
// bypasses the memory) labels it between them; every label's seq and
// eviction count, the live rows and the stored totals are the plain
// model's (labelAcrossHandles).
func TestAppendLabelledAcrossHandles(t *testing.T) {
	labelAcrossHandles(t, rand.New(rand.NewPCG(23, 27)), 300, func(rng *rand.Rand, dbs []*DB, l *ContentLabel, cap int64) int {
		k := rng.IntN(8)
		if k == 0 {
			n, err := dbs[1].RecordContent(context.Background(), l, cap)
			must(t, err)
			return n
		}
		db := dbs[0]
		if k < 3 {
			db = dbs[1]
		}
		ls := &Labels{List: []*ContentLabel{l}, MaxBytes: cap}
		must(t, db.AppendLabelled(context.Background(), &audit.Record{Tool: "read_pool_file", Outcome: audit.OutcomeOK}, ls))
		return ls.evicted[0]
	})
}

// TestAppendLabelledRemembersLiveRows: a writer labelling one context call
// after call reads its provenance_live row once, not once a call — and
// still reads it again after another handle moved it.
func TestAppendLabelledRemembersLiveRows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "airlock.db")
	db, other := openAt(t, path, nil), openAt(t, path, nil)
	ctx := context.Background()
	label := func(d *DB, i int) {
		t.Helper()
		l := &ContentLabel{ContextID: "c", Source: fmt.Sprint(i), Kind: "k", Integrity: IntegrityTrusted, Text: strings.Repeat("z", 100)}
		must(t, d.AppendLabelled(ctx, &audit.Record{Tool: "read_pool_file", Outcome: audit.OutcomeOK}, &Labels{List: []*ContentLabel{l}, MaxBytes: 1000}))
	}
	for i := range 50 {
		label(db, i)
	}
	if n := db.liveReads.Load(); n != 1 {
		t.Fatalf("50 labels read the live row %d times, want 1", n)
	}
	label(other, 50)
	label(db, 51) // remembered row stale: the guard fails, the batch retries from the row
	label(db, 52)
	if n := db.liveReads.Load(); n != 2 {
		t.Fatalf("after another handle's label: %d reads of the live row, want 2", n)
	}
	// A row moved back without an insert the writer would collide with:
	// the newest label lost and the totals recomputed (what a PostgreSQL
	// crash can leave). Only the guard sees it; the next label takes the
	// lost seq, and the totals count what is stored.
	must(t, LoseNewestContent(other, "c"))
	l := &ContentLabel{ContextID: "c", Source: "after", Kind: "k", Integrity: IntegrityTrusted, Text: strings.Repeat("z", 100)}
	must(t, db.AppendLabelled(ctx, &audit.Record{Tool: "read_pool_file", Outcome: audit.OutcomeOK}, &Labels{List: []*ContentLabel{l}, MaxBytes: 1000}))
	var next, bytes, oldest int64
	must(t, db.r.QueryRowContext(ctx, sqlGetLive, "c").Scan(&next, &bytes, &oldest))
	if l.Seq != 53 || next != 54 || bytes != 1000 || oldest != 44 {
		t.Fatalf("after a lost label: seq %d, totals next %d bytes %d oldest %d; want 53, 54, 1000, 44", l.Seq, next, bytes, oldest)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestLabelledAppendPrepared: the statements of a labelled call's commit —
// the live rows read, guarded and evicted, the labels and the record
// inserted, the chain head moved — are all prepared once for the writer;
// none is parsed per call (a query added to the path and forgotten in
// writerQueries fails this).
func TestLabelledAppendPrepared(t *testing.T) {
	path := filepath.Join(t.TempDir(), "airlock.db")
	db, other := openAt(t, path, nil), openAt(t, path, nil)
	var missed []string
	h := func(q string) { missed = append(missed, q) }
	db.unpreparedHook.Store(&h)
	ctx := context.Background()
	for i := range 40 {
		if i == 20 { // the guard fails once: the retry's reads too
			must(t, other.AppendLabelled(ctx, &audit.Record{Tool: "read_pool_file", Outcome: audit.OutcomeOK},
				&Labels{List: []*ContentLabel{{ContextID: "c", Source: "o", Kind: "k", Integrity: IntegrityTrusted, Text: "other"}}, MaxBytes: 500}))
		}
		l := &ContentLabel{ContextID: "c", Source: fmt.Sprint(i), Kind: "k", Integrity: IntegrityTrusted, Text: strings.Repeat("p", 60)}
		must(t, db.AppendLabelled(ctx, &audit.Record{Tool: "read_pool_file", Outcome: audit.OutcomeOK}, &Labels{List: []*ContentLabel{l}, MaxBytes: 500}))
	}
	if len(missed) > 0 {
		t.Fatalf("%d statements parsed on the call's path, first %q", len(missed), missed[0])
	}
}
