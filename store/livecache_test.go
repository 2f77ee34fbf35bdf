package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/audit/audit"
)

// TestAppendLabelledAcrossHandles: the writer's memory of provenance_live
// (livecache.go) never decides anything a read of the row would decide
// otherwise. Two handles on one file (two processes) label one context
// through their writers, interleaved at random, and RecordContent (which
// bypasses the memory) labels it between them; every label's seq and
// eviction count, the live rows and the stored totals are the plain
// model's (evict the oldest until the live bytes fit).
func TestAppendLabelledAcrossHandles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "airlock.db")
	dbs := []*DB{openAt(t, path, nil), openAt(t, path, nil)}
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(23, 27))
	for _, tc := range []struct {
		name string
		cap  int64
		n    int
	}{{"small cap", 100, 300}, {"roomy cap", 1000, 300}, {"label over cap", 30, 80}} {
		t.Run(tc.name, func(t *testing.T) {
			var model []int64 // live bytes, oldest first
			var total int64
			for i := range tc.n {
				text := strings.Repeat("y", 1+rng.IntN(40))
				l := &ContentLabel{ContextID: tc.name, Source: "s", Kind: "k", Integrity: IntegrityUntrusted, Text: text, CreatedAt: time.Unix(0, 0)}
				var got int
				switch k := rng.IntN(8); {
				case k == 0:
					n, err := dbs[1].RecordContent(ctx, l, tc.cap)
					must(t, err)
					got = n
				default:
					db := dbs[0]
					if k < 3 {
						db = dbs[1]
					}
					ls := &Labels{List: []*ContentLabel{l}, MaxBytes: tc.cap}
					must(t, db.AppendLabelled(ctx, &audit.Record{Tool: "read_pool_file", Outcome: audit.OutcomeOK}, ls))
					got = ls.evicted[0]
				}
				b := min(int64(len(text)), tc.cap)
				model, total = append(model, b), total+b
				want := 0
				for total > tc.cap {
					total -= model[0]
					model = model[1:]
					want++
				}
				if got != want || l.Seq != int64(i+1) {
					t.Fatalf("label %d: evicted %d seq %d, want %d and %d", i, got, l.Seq, want, i+1)
				}
			}
			var next, bytes, oldest int64
			must(t, dbs[0].r.QueryRowContext(ctx, sqlGetLive, tc.name).Scan(&next, &bytes, &oldest))
			if want := int64(tc.n) + 1; next != want || bytes != total || oldest != want-int64(len(model)) {
				t.Fatalf("stored totals next %d bytes %d oldest %d, want %d, %d, %d", next, bytes, oldest, want, total, want-int64(len(model)))
			}
			p, err := dbs[1].ContextProvenance(ctx, tc.name)
			must(t, err)
			live := 0
			for _, c := range p.Content {
				if !c.Evicted {
					live++
				}
			}
			if live != len(model) || p.Content[len(p.Content)-len(model)].Evicted {
				t.Fatalf("%d live rows, want the newest %d", live, len(model))
			}
		})
	}
	if _, err := dbs[0].Verify(ctx); err != nil {
		t.Fatalf("the chain: %v", err)
	}
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
