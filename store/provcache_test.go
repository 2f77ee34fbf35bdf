package store_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/store"
)

// provenanceCacheContract: a handle that read a context's provenance
// before (a, its cache warm) reads after every kind of write made through
// another handle (b, the other process) exactly what a full read returns —
// a new trusted input, content, an eviction under the cap, an endorsement
// — and a caller changing what it got changes nothing cached. A cache
// that missed any of these would let a value the agent saw elsewhere
// pass as its own.
func provenanceCacheContract(t *testing.T, a, b *store.DB) {
	ctx := context.Background()
	const cap = 100
	content := func(src, text string, integrity string) func() error {
		return func() error {
			_, err := b.RecordContent(ctx, &store.ContentLabel{ContextID: "cc", Source: src, Kind: "comm.mcp", Integrity: integrity,
				Readers: []string{"alice"}, Text: text, CreatedAt: ctxEpoch}, cap)
			return err
		}
	}
	steps := []struct {
		name  string
		write func() error
	}{
		{"nothing yet", func() error { return nil }},
		{"trusted input", func() error {
			return b.AddTrustedInput(ctx, &store.TrustedInput{ContextID: "cc", ID: "task", Kind: "task", Text: "pay IBAN DE89370400440532013000", AddedBy: "operator:o", CreatedAt: ctxEpoch})
		}},
		{"first content", content("att_1", strings.Repeat("a", 40)+" GB29NWBK60161331926819", store.IntegrityUntrusted)},
		{"no change", func() error { return nil }},
		{"content of the parent", func() error {
			_, err := b.RecordContent(ctx, &store.ContentLabel{ContextID: "parent", Source: "att_p", Kind: "comm.fetch", Integrity: store.IntegrityUntrusted,
				Text: "parent's page", CreatedAt: ctxEpoch}, cap)
			return err
		}},
		{"second content", content("att_2", strings.Repeat("b", 30), store.IntegrityTrusted)},
		{"eviction of the oldest", content("att_3", strings.Repeat("c", 60), store.IntegrityUntrusted)},
		{"endorsement", func() error {
			return b.AddEndorsement(ctx, &store.Endorsement{ContextID: "cc", ID: "e1", Value: "FR7630006000011234567890189", By: "operator:o", Reason: "r", CreatedAt: ctxEpoch})
		}},
		{"second trusted input", func() error {
			return b.AddTrustedInput(ctx, &store.TrustedInput{ContextID: "cc", ID: "note", Kind: "task", Text: "n", AddedBy: "operator:o", CreatedAt: ctxEpoch})
		}},
		{"eviction of every earlier row", content("att_4", strings.Repeat("d", 99), store.IntegrityUntrusted)},
		// A lost transaction (a storage fault, PostgreSQL with
		// synchronous_commit off) takes the newest label with it and the
		// next label takes its seq: same count, same MAX(seq), another row.
		{"newest label lost and its seq reused", func() error {
			if err := store.LoseNewestContent(b, "cc"); err != nil {
				return err
			}
			return content("att_5", strings.Repeat("e", 99), store.IntegrityUntrusted)()
		}},
	}
	// full is a full read of context id (b's cache forgotten first).
	full := func(step, id string) *store.Provenance {
		t.Helper()
		store.ForgetProvenance(b)
		p, err := b.ContextProvenance(ctx, id)
		if err != nil {
			t.Fatalf("%s: full read of %s: %v", step, id, err)
		}
		return p
	}
	for _, s := range steps {
		if err := s.write(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		got, err := a.ContextProvenance(ctx, "cc")
		if err != nil {
			t.Fatalf("%s: cached read: %v", s.name, err)
		}
		want := full(s.name, "cc")
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: cached read differs from a full read:\n got %s\nwant %s", s.name, dump(got), dump(want))
		}
		// The chain (the context and its parent) in one snapshot reads
		// what each context's own read does.
		chain, err := a.ChainProvenance(ctx, []string{"cc", "parent"})
		if err != nil {
			t.Fatalf("%s: chain read: %v", s.name, err)
		}
		if parent := full(s.name, "parent"); !reflect.DeepEqual(chain, []*store.Provenance{want, parent}) {
			t.Fatalf("%s: chain read differs:\n got %s | %s\nwant %s | %s", s.name, dump(chain[0]), dump(chain[1]), dump(want), dump(parent))
		}
		// What a caller does to its copy is not the cache's.
		for _, l := range got.Content {
			l.Text, l.Readers[0] = "changed", "mallory"
		}
		got.Content = append(got.Content, &store.ContentLabel{Source: "forged"})
		got.Inputs = nil
	}
	if n := store.ProvenanceCached(a); n != 2 {
		t.Fatalf("a caches %d contexts, want 2", n)
	}
	last, err := a.ContextProvenance(ctx, "cc")
	if err != nil || len(last.Content) != 4 || !last.EvictedUntrusted || last.Content[3].Text != strings.Repeat("e", 99) || len(last.Inputs) != 2 {
		t.Fatalf("final read: %s, %v", dump(last), err)
	}
}

func dump(p *store.Provenance) string {
	if p == nil {
		return "<nil>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "evictedUntrusted=%v inputs:", p.EvictedUntrusted)
	for _, in := range p.Inputs {
		fmt.Fprintf(&b, " %+v", *in)
	}
	b.WriteString(" content:")
	for _, l := range p.Content {
		fmt.Fprintf(&b, " %+v", *l)
	}
	b.WriteString(" endorsements:")
	for _, e := range p.Endorsements {
		fmt.Fprintf(&b, " %+v", *e)
	}
	return b.String()
}

func TestProvenanceCacheContract(t *testing.T) { onSQLite(t, provenanceCacheContract) }

func TestPostgresProvenanceCache(t *testing.T) { onPostgres(t, provenanceCacheContract) }

// TestProvenanceCacheBounded: a handle caches at most a bounded number of
// contexts, whatever it reads.
func TestProvenanceCacheBounded(t *testing.T) {
	a, _ := openTemp(t, nil)
	ctx := context.Background()
	for i := range 200 {
		id := fmt.Sprint("c", i)
		if _, err := a.RecordContent(ctx, &store.ContentLabel{ContextID: id, Source: "s", Integrity: store.IntegrityUntrusted, Text: "t"}, 10); err != nil {
			t.Fatal(err)
		}
		if p, err := a.ContextProvenance(ctx, id); err != nil || len(p.Content) != 1 {
			t.Fatalf("%s: %+v, %v", id, p, err)
		}
	}
	if n := store.ProvenanceCached(a); n > 64 {
		t.Fatalf("%d contexts cached, want at most 64", n)
	}
}

// BenchmarkContextProvenance (issue 23, `make bench`): one traced need's
// read of a context that has handed the agent 200 results, after one more
// result was recorded (what every warm upstream call does): "full" reads
// the whole history as every read did before provcache.go, "incremental"
// what changed since the handle's last read.
func BenchmarkContextProvenance(b *testing.B) {
	ctx := context.Background()
	for _, side := range []string{"full", "incremental"} {
		b.Run(side, func(b *testing.B) {
			db, _ := openTemp(b, nil)
			if err := db.AddTrustedInput(ctx, &store.TrustedInput{ContextID: "cb", ID: "task", Kind: "task", Text: strings.Repeat("pay the bill ", 150), AddedBy: "operator:o"}); err != nil {
				b.Fatal(err)
			}
			record := func(i int) {
				if _, err := db.RecordContent(ctx, &store.ContentLabel{ContextID: "cb", Source: fmt.Sprint("att_", i), Kind: "comm.mcp",
					Integrity: store.IntegrityUntrusted, Text: fmt.Sprintf("result %d: %s", i, strings.Repeat("text ", 40))}, 4<<20); err != nil {
					b.Fatal(err)
				}
			}
			for i := range 200 {
				record(i)
			}
			if _, err := db.ContextProvenance(ctx, "cb"); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				record(1000 + i)
				if side == "full" {
					store.ForgetProvenance(db)
				}
				b.StartTimer()
				if _, err := db.ContextProvenance(ctx, "cb"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestProvenanceCacheConcurrent: readers sharing one handle's cache while
// another handle records each see a whole prefix of the context's content
// (seqs 1..n, every text), never fewer rows than they saw before.
func TestProvenanceCacheConcurrent(t *testing.T) {
	a, path := openTemp(t, nil)
	b := openPath(t, path)
	ctx := context.Background()
	const rows, readers = 30, 4
	errs, stop := make(chan error, readers+1), make(chan struct{})
	go func() {
		defer close(stop) // a failed writer ends the readers too
		for i := range rows {
			if _, err := b.RecordContent(ctx, &store.ContentLabel{ContextID: "cr", Source: fmt.Sprint("att_", i), Integrity: store.IntegrityUntrusted, Text: fmt.Sprint("text ", i)}, 1<<20); err != nil {
				errs <- err
				return
			}
		}
		errs <- nil
	}()
	for range readers {
		go func() {
			seen := 0
			for last := false; seen < rows; {
				if last {
					errs <- fmt.Errorf("the writer stopped at %d rows", seen)
					return
				}
				select {
				case <-stop:
					last = true // one more read sees everything written
				default:
				}
				p, err := a.ContextProvenance(ctx, "cr")
				if err != nil {
					errs <- err
					return
				}
				if len(p.Content) < seen {
					errs <- fmt.Errorf("read %d rows after %d", len(p.Content), seen)
					return
				}
				for i, l := range p.Content {
					if l.Seq != int64(i+1) || l.Text != fmt.Sprint("text ", i) {
						errs <- fmt.Errorf("row %d: seq %d text %q", i, l.Seq, l.Text)
						return
					}
				}
				seen = len(p.Content)
			}
			errs <- nil
		}()
	}
	for range readers + 1 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
