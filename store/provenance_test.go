package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/store"
)

// provenanceContract is what both dialects keep: a round trip of every
// field (bytes included), per-context seqs, oldest-first eviction under
// the cap with the label kept, bounds refused, and a second handle (the
// other process) seeing every write.
func provenanceContract(t *testing.T, a, b *store.DB) {
	ctx := context.Background()
	task := "Pay the bill to IBAN DE89 3704 0044 0532 0130 00.\x00 and \xff raw bytes"
	if err := a.AddTrustedInput(ctx, &store.TrustedInput{ContextID: "c1", ID: "task", Kind: "task", Text: task, AddedBy: "operator:o", CreatedAt: ctxEpoch}); err != nil {
		t.Fatal(err)
	}
	// A task is given once.
	if err := b.AddTrustedInput(ctx, &store.TrustedInput{ContextID: "c1", ID: "task", Kind: "task", Text: "other", AddedBy: "operator:o"}); !errors.Is(err, store.ErrProvenanceInvalid) {
		t.Fatalf("second task: %v, want ErrProvenanceInvalid", err)
	}
	if err := a.AddTrustedInput(ctx, &store.TrustedInput{ContextID: "c1", ID: "big", Kind: "task", Text: strings.Repeat("x", store.MaxTrustedInputBytes+1)}); !errors.Is(err, store.ErrProvenanceInvalid) {
		t.Fatalf("oversized task: %v", err)
	}
	const cap = 100
	labels := []*store.ContentLabel{
		{ContextID: "c1", Source: "att_1", Kind: "comm.mcp", Integrity: store.IntegrityUntrusted, Text: strings.Repeat("a", 40), CreatedAt: ctxEpoch},
		{ContextID: "c1", Source: "pool:p/x.md#00", Kind: "pool_file", Integrity: store.IntegrityTrusted, Readers: []string{"alice"}, Text: strings.Repeat("b", 40), CreatedAt: ctxEpoch},
		{ContextID: "c2", Source: "att_2", Kind: "comm.fetch", Integrity: store.IntegrityUntrusted, Readers: []string{}, Text: "other context", CreatedAt: ctxEpoch},
	}
	for _, l := range labels {
		if n, err := b.RecordContent(ctx, l, cap); err != nil || n != 0 {
			t.Fatalf("RecordContent %s: %d, %v", l.Source, n, err)
		}
	}
	if labels[0].Seq != 1 || labels[1].Seq != 2 || labels[2].Seq != 1 {
		t.Fatalf("seqs %d %d %d, want 1 2 1 (per context)", labels[0].Seq, labels[1].Seq, labels[2].Seq)
	}
	if _, err := a.RecordContent(ctx, &store.ContentLabel{ContextID: "c1", Source: "s", Integrity: "maybe", Text: "x"}, cap); !errors.Is(err, store.ErrProvenanceInvalid) {
		t.Fatalf("unknown integrity: %v", err)
	}
	// Over the cap: the oldest loses its text, keeps its label.
	third := &store.ContentLabel{ContextID: "c1", Source: "att_3", Kind: "comm.mcp", Integrity: store.IntegrityUntrusted, Text: strings.Repeat("c", 40), CreatedAt: ctxEpoch}
	if n, err := a.RecordContent(ctx, third, cap); err != nil || n != 1 {
		t.Fatalf("RecordContent over cap: evicted %d, %v; want 1", n, err)
	}
	// A label larger than the cap keeps its first cap bytes.
	huge := &store.ContentLabel{ContextID: "c3", Source: "att_4", Integrity: store.IntegrityUntrusted, Text: strings.Repeat("é", cap)}
	if _, err := a.RecordContent(ctx, huge, cap); err != nil || huge.Bytes > cap || huge.Bytes < cap-1 {
		t.Fatalf("huge label: %d bytes, %v", huge.Bytes, err)
	}
	if err := b.AddEndorsement(ctx, &store.Endorsement{ContextID: "c1", ID: "e1", Value: "DE89370400440532013000", By: "operator:o", Reason: "the bill", CreatedAt: ctxEpoch}); err != nil {
		t.Fatal(err)
	}
	if err := b.AddEndorsement(ctx, &store.Endorsement{ContextID: "c1", ID: "e2", Value: ""}); !errors.Is(err, store.ErrProvenanceInvalid) {
		t.Fatalf("empty endorsement: %v", err)
	}

	for name, db := range map[string]*store.DB{"writer": a, "other": b} {
		p, err := db.ContextProvenance(ctx, "c1")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(p.Inputs) != 1 || p.Inputs[0].Text != task || p.Inputs[0].AddedBy != "operator:o" || !p.Inputs[0].CreatedAt.Equal(ctxEpoch) || p.Inputs[0].Readers != nil {
			t.Errorf("%s: inputs %+v", name, p.Inputs)
		}
		if len(p.Content) != 3 {
			t.Fatalf("%s: %d labels, want 3", name, len(p.Content))
		}
		if c := p.Content[0]; !c.Evicted || c.Text != "" || c.Source != "att_1" || c.Bytes != 40 {
			t.Errorf("%s: oldest label %+v, want evicted with its label", name, c)
		}
		if c := p.Content[1]; c.Evicted || c.Text != labels[1].Text || c.Integrity != store.IntegrityTrusted || len(c.Readers) != 1 || c.Readers[0] != "alice" {
			t.Errorf("%s: second label %+v", name, c)
		}
		if !p.EvictedUntrusted {
			t.Errorf("%s: EvictedUntrusted not set", name)
		}
		if len(p.Endorsements) != 1 || p.Endorsements[0].Value != "DE89370400440532013000" {
			t.Errorf("%s: endorsements %+v", name, p.Endorsements)
		}
		p2, err := db.ContextProvenance(ctx, "c2")
		if err != nil || len(p2.Content) != 1 || p2.Content[0].Readers == nil || len(p2.Content[0].Readers) != 0 {
			t.Errorf("%s: c2 %+v %v (readers nobody must stay non-nil)", name, p2, err)
		}
	}
}

func TestProvenanceSQLite(t *testing.T) { onSQLite(t, provenanceContract) }

// TestProvenanceSurvivesRestart: labels written by one process are read
// by the next one to open the file.
func TestProvenanceSurvivesRestart(t *testing.T) {
	a, path := openTemp(t, nil)
	ctx := context.Background()
	if _, err := a.RecordContent(ctx, &store.ContentLabel{ContextID: "c1", Source: "att_1", Integrity: store.IntegrityUntrusted, Text: "IBAN GB29NWBK60161331926819"}, 1<<20); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b := openPath(t, path)
	p, err := b.ContextProvenance(ctx, "c1")
	if err != nil || len(p.Content) != 1 || !strings.Contains(p.Content[0].Text, "GB29") {
		t.Fatalf("after restart: %+v, %v", p, err)
	}
	ro := openRO(t, path)
	if p, err := ro.ContextProvenance(ctx, "c1"); err != nil || len(p.Content) != 1 {
		t.Fatalf("read-only: %+v, %v", p, err)
	}
	if _, err := ro.RecordContent(ctx, &store.ContentLabel{ContextID: "c1", Integrity: store.IntegrityUntrusted}, 1); !errors.Is(err, store.ErrReadOnly) {
		t.Fatalf("read-only write: %v", err)
	}
}

func TestPostgresProvenance(t *testing.T) { onPostgres(t, provenanceContract) }
