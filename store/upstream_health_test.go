package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/store"
	"github.com/airlock-dev/airlock/store/pgtest"
)

// healthConformance: each instance writes its own row per upstream, an
// update replaces it, and any handle reads every instance's rows.
func healthConformance(t *testing.T, a, b *store.DB) {
	ctx := context.Background()
	at := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	put := func(db *store.DB, h store.UpstreamHealth) {
		t.Helper()
		if err := db.PutUpstreamHealth(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	put(a, store.UpstreamHealth{Upstream: "mem", Warm: 1, Calls: 1, Latency: 1500 * time.Microsecond, UpdatedAt: at})
	put(a, store.UpstreamHealth{Upstream: "mem", Warm: 2, Restarts: 1, Calls: 5, Errors: 1, LastError: "exited: exit 3",
		LastErrorAt: at.Add(time.Second), Latency: 800 * time.Microsecond, UpdatedAt: at.Add(2 * time.Second)})
	put(b, store.UpstreamHealth{Upstream: "mem", Calls: 2, UpdatedAt: at})
	rows, err := b.UpstreamHealthRows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.UpstreamHealth{
		{Instance: "serve-a", Upstream: "mem", Warm: 2, Restarts: 1, Calls: 5, Errors: 1, LastError: "exited: exit 3",
			LastErrorAt: at.Add(time.Second), Latency: 800 * time.Microsecond, UpdatedAt: at.Add(2 * time.Second)},
		{Instance: "serve-b", Upstream: "mem", Calls: 2, UpdatedAt: at},
	}
	if len(rows) != len(want) {
		t.Fatalf("rows: %+v", rows)
	}
	for i := range want {
		if rows[i] != want[i] {
			t.Errorf("row %d: %+v, want %+v", i, rows[i], want[i])
		}
	}
}

func TestUpstreamHealth(t *testing.T) {
	a, path := openTemp(t, &store.Options{Instance: "serve-a"})
	b := openPathWith(t, path, &store.Options{Instance: "serve-b"})
	healthConformance(t, a, b)
}

func TestPostgresUpstreamHealth(t *testing.T) {
	dsn := pgtest.DSN(t)
	healthConformance(t, openPG(t, dsn, &store.Options{Instance: "serve-a"}), openPG(t, dsn, &store.Options{Instance: "serve-b"}))
}
