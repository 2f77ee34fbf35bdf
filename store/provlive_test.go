package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestRecordContentCostFlat: a label's bookkeeping reads a bounded number
// of rows however long the context's history is. Before issue 27 it read
// every live row of the context on every label (~1 ms a call at 1,500
// rows, the largest share of a stdio read's CPU).
func TestRecordContentCostFlat(t *testing.T) {
	db := openAt(t, filepath.Join(t.TempDir(), "airlock.db"), nil)
	var walked atomic.Int64
	h := func(n int) { walked.Add(int64(n)) }
	db.walkedHook.Store(&h)
	ctx := context.Background()
	const cap, labels = 64 << 10, 600 // ~1 KiB labels: the cap holds 64 of them
	for i := range labels {
		before := walked.Load()
		l := &ContentLabel{ContextID: "c", Source: fmt.Sprintf("s%d", i), Kind: "pool_file", Integrity: IntegrityTrusted, Text: strings.Repeat("x", 1000+i%48)}
		if _, err := db.RecordContent(ctx, l, cap); err != nil {
			t.Fatal(err)
		}
		// The context's totals are kept in provenance_live (labels.go):
		// each label reads only the oldest rows it evicts (one or two
		// here), asked for two at a time.
		if got := walked.Load() - before; got > 3 {
			t.Fatalf("label %d read %d rows, want at most 3", i, got)
		}
	}
}

// TestRecordContentAcrossHandles: two handles (two processes) interleave
// labels of one context at random; every eviction count and the final set
// of live rows are those of the plain model (evict the oldest until the
// live bytes fit), however stale one handle's memory of the context is.
func TestRecordContentAcrossHandles(t *testing.T) {
	labelAcrossHandles(t, rand.New(rand.NewPCG(27, 1)), 200, func(rng *rand.Rand, dbs []*DB, l *ContentLabel, cap int64) int {
		db := dbs[rng.IntN(2)]
		if rng.IntN(4) == 0 {
			db = dbs[0] // runs of one handle keep its memory warm
		}
		got, err := db.RecordContent(context.Background(), l, cap)
		if err != nil {
			t.Fatal(err)
		}
		return got
	})
}

// labelAcrossHandles labels one context per case n times through label,
// given two handles on one file, and checks each label's seq and
// evictions, the live rows and the stored totals against the plain model.
func labelAcrossHandles(t *testing.T, rng *rand.Rand, n int, label func(rng *rand.Rand, dbs []*DB, l *ContentLabel, cap int64) (evicted int)) {
	path := filepath.Join(t.TempDir(), "airlock.db")
	dbs := []*DB{openAt(t, path, nil), openAt(t, path, nil)}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		cap  int64
		n    int
	}{{"small cap", 100, n}, {"roomy cap", 1000, n}, {"label over cap", 30, n / 4}} {
		t.Run(tc.name, func(t *testing.T) {
			var model []int64 // live bytes, oldest first
			var total int64
			for i := range tc.n {
				text := strings.Repeat("y", 1+rng.IntN(40))
				l := &ContentLabel{ContextID: tc.name, Source: "s", Kind: "k", Integrity: IntegrityUntrusted, Text: text, CreatedAt: time.Unix(0, 0)}
				got := label(rng, dbs, l, tc.cap)
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
			if err := dbs[0].r.QueryRowContext(ctx, sqlGetLive, tc.name).Scan(&next, &bytes, &oldest); err != nil {
				t.Fatal(err)
			}
			if want := int64(tc.n) + 1; next != want || bytes != total || oldest != want-int64(len(model)) {
				t.Fatalf("stored totals next %d bytes %d oldest %d, want %d, %d, %d", next, bytes, oldest, want, total, want-int64(len(model)))
			}
			p, err := dbs[1].ContextProvenance(ctx, tc.name)
			if err != nil {
				t.Fatal(err)
			}
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

// TestEvictionSeeksItsRows: the eviction's UPDATE walks the context's key
// from the oldest live seq, not from the context's first row — otherwise
// every label re-reads every row the context ever evicted (issue 27).
func TestEvictionSeeksItsRows(t *testing.T) {
	db := openAt(t, filepath.Join(t.TempDir(), "airlock.db"), nil)
	rows, err := db.r.Query(`EXPLAIN QUERY PLAN `+sqlEvictRange, "c", 5, 9, []byte{})
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan strings.Builder
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(detail + "\n")
	}
	if !strings.Contains(plan.String(), "seq>? AND seq<?") {
		t.Fatalf("eviction plan does not bound seq on both sides:\n%s", plan.String())
	}
}
