package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/airlock-dev/airlock/internal/audit/audit"
)

func TestTail(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t, nil)
	if recs, err := db.Tail(ctx, 5); err != nil || len(recs) != 0 {
		t.Fatalf("empty Tail = %d, %v", len(recs), err)
	}
	appendN(t, db, 1, 7)
	tests := []struct {
		n         int
		wantFirst int64
		wantLen   int
	}{
		{0, 0, 0},
		{-3, 0, 0},
		{1, 7, 1},
		{3, 5, 3},
		{7, 1, 7},
		{100, 1, 7},
	}
	for _, tt := range tests {
		recs, err := db.Tail(ctx, tt.n)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != tt.wantLen {
			t.Fatalf("Tail(%d) = %d records, want %d", tt.n, len(recs), tt.wantLen)
		}
		for i, r := range recs {
			if r.Seq != tt.wantFirst+int64(i) {
				t.Fatalf("Tail(%d)[%d].Seq = %d, want ascending from %d", tt.n, i, r.Seq, tt.wantFirst)
			}
			if d := sameRecord(&r, withChain(sample(int(r.Seq)), r)); d != "" {
				t.Fatalf("Tail(%d)[%d]: %s", tt.n, i, d)
			}
		}
	}
}

func TestScan(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t, nil)
	const total = 1300 // more than two internal pages
	appendConcurrently(t, db, total, 16)

	tests := []struct {
		after int64
		want  int
	}{
		{0, total},
		{-5, total},
		{511, total - 511},
		{512, total - 512},
		{1299, 1},
		{total, 0},
		{total + 10, 0},
	}
	for _, tt := range tests {
		var got []int64
		err := db.Scan(ctx, tt.after, func(r *audit.Record) error {
			got = append(got, r.Seq)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != tt.want {
			t.Fatalf("Scan(after %d) saw %d records, want %d", tt.after, len(got), tt.want)
		}
		for i, s := range got {
			if want := max(tt.after, 0) + 1 + int64(i); s != want {
				t.Fatalf("Scan(after %d)[%d] = seq %d, want %d", tt.after, i, s, want)
			}
		}
	}

	stop := errors.New("stop")
	n := 0
	err := db.Scan(ctx, 0, func(*audit.Record) error {
		n++
		if n == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 3 {
		t.Fatalf("Scan stopping early: err %v after %d", err, n)
	}
}

// TestScanFollow is how tail --follow polls: Scan from the last seq seen
// picks up exactly the new records.
func TestScanFollow(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t, nil)
	var last int64
	var seen []int64
	poll := func() {
		if err := db.Scan(ctx, last, func(r *audit.Record) error {
			seen = append(seen, r.Seq)
			last = r.Seq
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 3 {
		appendN(t, db, round*10, round+1)
		poll()
	}
	poll()
	if len(seen) != 6 || seen[5] != 6 {
		t.Fatalf("follow saw %v, want 1..6", seen)
	}
}

func TestLastSeq(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t, nil)
	for want := range int64(4) {
		if got, err := db.LastSeq(ctx); err != nil || got != want {
			t.Fatalf("LastSeq = %d, %v; want %d", got, err, want)
		}
		appendN(t, db, 0, 1)
	}
}

// withChain returns want with got's chain fields, for comparing contents.
func withChain(want *audit.Record, got audit.Record) *audit.Record {
	want.Seq, want.PrevHash, want.Hash = got.Seq, got.PrevHash, got.Hash
	return want
}
