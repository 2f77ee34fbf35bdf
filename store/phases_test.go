package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/airlock-dev/airlock/store"
)

func TestSessionPhases(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	db, err := store.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if err := db.SetSessionPhase(ctx, "s1", "execution", "ann", "go"); err != nil {
		t.Fatal(err)
	}
	if err := db.SetSessionPhase(ctx, "s1", "planning", "bob", "stop"); err != nil {
		t.Fatal(err)
	}
	ro, err := store.OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	got, err := ro.SessionPhases(ctx)
	if err != nil || len(got) != 1 || got["s1"] != "planning" {
		t.Fatalf("phases %v, %v", got, err)
	}
	if err := ro.SetSessionPhase(ctx, "s2", "execution", "x", "y"); !errors.Is(err, store.ErrReadOnly) {
		t.Fatalf("read-only write: %v", err)
	}
}
