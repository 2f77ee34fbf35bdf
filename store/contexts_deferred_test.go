package store_test

import (
	"context"
	"testing"

	"github.com/airlock-dev/airlock/internal/policy/contexts"
	"github.com/airlock-dev/airlock/store"
)

// TestUpdateContextDeferred: the deferred update (a run's output pool
// listed in its context, derived.Pools.Add) is UpdateContext without its
// own fsync: the same write, seen by the same and by another handle, and
// the writer is back to durable commits afterwards (the next write's
// commit is what makes it durable). On SQLite and on PostgreSQL.
func TestUpdateContextDeferred(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) (*store.DB, *store.DB){"sqlite": twoSQLite, "postgres": twoPG} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			db, other := open(t)
			seedContexts(t, db)
			got, err := db.UpdateContextDeferred(ctx, "c1", func(c *contexts.Context) error {
				c.Env = map[string]string{"derived_pools": "run-1"}
				return nil
			})
			if err != nil || got.Env["derived_pools"] != "run-1" {
				t.Fatalf("UpdateContextDeferred = %+v, %v", got, err)
			}
			if _, err := db.UpdateContext(ctx, "c1", func(c *contexts.Context) error { c.Env["k"] = "v"; return nil }); err != nil {
				t.Fatal(err)
			}
			c, err := other.GetContext(ctx, "c1")
			if err != nil || c.Env["derived_pools"] != "run-1" || c.Env["k"] != "v" {
				t.Errorf("another handle reads %+v, %v", c, err)
			}
		})
	}
}
