package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/policy/pinning"
)

// TestWriterPreparesPinAndHealthStatements: the statements an upstream
// call runs in write transactions — an HTTP upstream's listing observed
// before every call (its pins read, a changed one written), each call's
// health row — are prepared once for the writer on SQLite (issue 23: they
// were parsed on every call), and the writes go through them: a pin
// observed, then observed unchanged, then its health, read back.
func TestWriterPreparesPinAndHealthStatements(t *testing.T) {
	ctx := context.Background()
	db := openAt(t, filepath.Join(t.TempDir(), "a.db"), nil)
	for _, q := range []string{sqlUpstreamPins, sqlUpsertPin, sqlUpsertUpstreamHealth} {
		if db.writes.lookup(q) == nil {
			t.Errorf("not prepared for the writer: %.60s…", q)
		}
	}
	def := pinning.Definition{Name: "echo", Description: "Echoes.", InputSchema: []byte(`{"type":"object"}`)}
	observe := func() (changed bool) {
		t.Helper()
		err := db.UpdateUpstreamPins(ctx, "up", func(cur map[string]*pinning.Pin) ([]*pinning.Pin, error) {
			p, ch, err := pinning.Observe("up", cur[def.Name], def)
			if err != nil || !ch {
				return nil, err
			}
			changed = true
			return []*pinning.Pin{p}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return changed
	}
	if !observe() || observe() {
		t.Fatal("the first listing must write the pin, the second (unchanged) nothing")
	}
	if p, err := db.UpstreamPin(ctx, "up", "echo"); err != nil || p.State != pinning.Pending {
		t.Fatalf("pin: %+v, %v", p, err)
	}
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	if err := db.PutUpstreamHealth(ctx, UpstreamHealth{Upstream: "up", Warm: 1, Calls: 3, UpdatedAt: at}); err != nil {
		t.Fatal(err)
	}
	if rows, err := db.UpstreamHealthRows(ctx); err != nil || len(rows) != 1 || rows[0].Calls != 3 {
		t.Fatalf("health: %+v, %v", rows, err)
	}
}
