package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/policy/contexts"
)

// TestContextsMigration: a file at schema version 2 (written before
// runtime contexts) has none through a read-only handle, is upgraded by
// the next Open, and the read-only handle opened before the upgrade then
// sees what is stored.
func TestContextsMigration(t *testing.T) {
	ctx := context.Background()
	path, ro := openOldReadOnly(t, contextsVersion-1)
	if _, err := ro.GetContext(ctx, "c1"); !errors.Is(err, contexts.ErrNotFound) {
		t.Errorf("GetContext on a version 2 file: %v, want ErrNotFound", err)
	}
	if _, err := ro.GetSession(ctx, "s1"); !errors.Is(err, contexts.ErrNotFound) {
		t.Errorf("GetSession on a version 2 file: %v, want ErrNotFound", err)
	}
	if list, err := ro.ListContexts(ctx, ""); err != nil || len(list) != 0 {
		t.Errorf("ListContexts on a version 2 file: %v, %v; want none", list, err)
	}
	if list, err := ro.ListSessions(ctx, "", false); err != nil || len(list) != 0 {
		t.Errorf("ListSessions on a version 2 file: %v, %v; want none", list, err)
	}
	if v, err := ro.Usage(ctx, "k"); err != nil || v != nil {
		t.Errorf("Usage on a version 2 file: %q, %v; want nil", v, err)
	}

	db := openAt(t, path, nil)
	c := &contexts.Context{ID: "c1", Principal: "alice", Phase: contexts.PhasePlanning, CreatedAt: time.Now()}
	if err := db.CreateContext(ctx, c); err != nil {
		t.Fatal(err)
	}
	if got, err := ro.GetContext(ctx, "c1"); err != nil || got.Principal != "alice" {
		t.Errorf("GetContext after the upgrade: %v, %v", got, err)
	}
}
