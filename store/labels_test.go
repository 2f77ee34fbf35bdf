package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/store"
)

// TestAppendLabelledMatchesRecordContent: labels recorded with their
// call's record end as they would one RecordContent at a time — the same
// seqs, the same rows evicted (older rows and, within one call, the
// call's own earlier labels), the record naming each label's seq and how
// many rows it evicted — and the chain verifies.
func TestAppendLabelledMatchesRecordContent(t *testing.T) {
	ctx := context.Background()
	const cap = 100
	calls := [][]int{{40}, {40}, {30, 30}, {90}, {10, 20, 150}, {5}}
	mk := func(call, i, n int) *store.ContentLabel {
		return &store.ContentLabel{ContextID: "c1", Source: fmt.Sprintf("att_%d_%d", call, i), Kind: "comm.fetch",
			Integrity: store.IntegrityUntrusted, Text: strings.Repeat(string(rune('a'+call)), n), CreatedAt: ctxEpoch}
	}
	one, _ := openTemp(t, nil)
	batched, _ := openTemp(t, nil)
	for c, sizes := range calls {
		var want []int
		ls := &store.Labels{MaxBytes: cap}
		for i, n := range sizes {
			ev, err := one.RecordContent(ctx, mk(c, i, n), cap)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, ev)
			ls.List = append(ls.List, mk(c, i, n))
		}
		rec := sample(c)
		if err := batched.AppendLabelled(ctx, rec, ls); err != nil {
			t.Fatalf("call %d: %v", c, err)
		}
		var extra struct {
			Labels []struct {
				Seq     int64 `json:"seq"`
				Evicted int   `json:"evicted"`
			} `json:"labels"`
		}
		if err := json.Unmarshal(rec.Extra, &extra); err != nil || len(extra.Labels) != len(sizes) {
			t.Fatalf("call %d: record extra %s: %v", c, rec.Extra, err)
		}
		for i, l := range extra.Labels {
			if l.Seq != ls.List[i].Seq || l.Evicted != want[i] {
				t.Errorf("call %d label %d: record says seq %d evicted %d, want seq %d evicted %d", c, i, l.Seq, l.Evicted, ls.List[i].Seq, want[i])
			}
		}
	}
	a, err := one.ContextProvenance(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := batched.ContextProvenance(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Content) != len(b.Content) {
		t.Fatalf("%d rows batched, %d one at a time", len(b.Content), len(a.Content))
	}
	for i := range a.Content {
		x, y := a.Content[i], b.Content[i]
		if x.Seq != y.Seq || x.Evicted != y.Evicted || x.Text != y.Text || x.SHA256 != y.SHA256 || x.Bytes != y.Bytes {
			t.Errorf("row %d: batched %+v, one at a time %+v", i, y, x)
		}
	}
	mustVerify(t, batched, int64(len(calls)))
}

// TestLabelsNotKeptWithoutTheirRecord: a call's labels are committed with
// its record or not at all. Here the record cannot be written (the file
// may not grow by its 256 KiB of arguments) while the small label could:
// before issue 27 the label was committed on its own first, so the store
// kept content no answered call had handed out.
func TestLabelsNotKeptWithoutTheirRecord(t *testing.T) {
	ctx := context.Background()
	full := fullAfter(t, 1)
	rec := sample(1)
	rec.Args = json.RawMessage(`{"x":"` + strings.Repeat("y", 256<<10) + `"}`)
	l := &store.ContentLabel{ContextID: "c1", Source: "att_1", Kind: "comm.fetch", Integrity: store.IntegrityUntrusted, Text: "small", CreatedAt: ctxEpoch}
	if err := full.AppendLabelled(ctx, rec, &store.Labels{List: []*store.ContentLabel{l}, MaxBytes: 1 << 20}); err == nil {
		t.Fatal("AppendLabelled of a record the file cannot hold: nil error")
	}
	p, err := full.ContextProvenance(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Content) != 0 {
		t.Fatalf("%d labels kept without their record: %+v", len(p.Content), p.Content[0])
	}
	mustVerify(t, full, 1)
}

// TestAppendLabelledRefusesBadLabels: a label the store could not keep
// exactly is refused before anything is queued, record included.
func TestAppendLabelledRefusesBadLabels(t *testing.T) {
	db, _ := openTemp(t, nil)
	bad := &store.ContentLabel{ContextID: "c1", Source: "s", Integrity: "maybe", Text: "x"}
	if err := db.AppendLabelled(context.Background(), sample(0), &store.Labels{List: []*store.ContentLabel{bad}, MaxBytes: 10}); err == nil {
		t.Fatal("unknown integrity accepted")
	}
	mustVerify(t, db, 0)
}

// TestAppendAfterAnotherHandleMovedTheHead: the writer remembers the head
// it committed (issue 27) but another process appended since; its next
// batch must link to the other's records, not to its own last one — the
// guarded head update refuses the stale link and the batch is retried
// from the row, so the caller sees nothing but success.
func TestAppendAfterAnotherHandleMovedTheHead(t *testing.T) {
	a, path := openTemp(t, nil)
	b := openPath(t, path)
	for i, db := range []*store.DB{a, b, b, a, a, b, a} {
		if err := db.Append(context.Background(), sample(i)); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	mustVerify(t, a, 7)
	mustBeContiguous(t, a)
}
