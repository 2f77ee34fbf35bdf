package runmark

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/audit/audit"
)

const (
	live = "run_11111111-1111-4111-8111-111111111111"
	dead = "run_22222222-2222-4222-8222-222222222222"
)

func run(id string) audit.Run {
	return audit.Run{ID: id, Pipeline: "p", ContextID: "ctx", SessionID: "s", Principal: "alice", Role: "r", Transport: "stdio",
		StartedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

// abandon is a process dying with its mark held: the descriptor closes
// (the kernel drops the lock), the mark stays.
func abandon(h *Held) { h.f.Close() }

func workspace(t *testing.T, dir, id string) string {
	t.Helper()
	ws := filepath.Join(dir, id)
	if err := os.MkdirAll(filepath.Join(ws, "out"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "out", "half.csv"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	return ws
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// TestRecoverTakesOnlyDeadRuns: a mark whose holder is gone is recorded
// once, with what the run was, and its workspace and mark removed; a mark
// still held (a live run, even in this process) is left alone; a store
// that cannot take the record leaves everything for the next try.
func TestRecoverTakesOnlyDeadRuns(t *testing.T) {
	dir := t.TempDir()
	held, err := Begin(dir, run(live))
	if err != nil {
		t.Fatal(err)
	}
	defer held.End()
	gone, err := Begin(dir, run(dead))
	if err != nil {
		t.Fatal(err)
	}
	abandon(gone)
	liveWS, deadWS := workspace(t, dir, live), workspace(t, dir, dead)

	refuse := errors.New("store unavailable")
	if n, err := Recover(dir, func(audit.Run) error { return refuse }); n != 0 || !errors.Is(err, refuse) {
		t.Fatalf("with a failing store: %d, %v", n, err)
	}
	if !exists(deadWS) || !exists(filepath.Join(dir, dead+suffix)) {
		t.Fatal("a run whose record failed lost its mark or workspace")
	}
	var got []audit.Run
	n, err := Recover(dir, func(r audit.Run) error { got = append(got, r); return nil })
	if err != nil || n != 1 || len(got) != 1 || got[0] != run(dead) {
		t.Fatalf("recovered %d %+v, %v; want the dead run", n, got, err)
	}
	if exists(deadWS) || exists(filepath.Join(dir, dead+suffix)) {
		t.Fatal("the dead run's workspace or mark is left")
	}
	if !exists(liveWS) || !exists(filepath.Join(dir, live+suffix)) {
		t.Fatal("a live run's workspace or mark was touched")
	}
	if n, _ := Recover(dir, func(audit.Run) error { t.Fatal("recorded twice"); return nil }); n != 0 {
		t.Fatalf("a second pass recovered %d", n)
	}
	if err := held.End(); err != nil || exists(filepath.Join(dir, live+suffix)) {
		t.Fatalf("End: %v", err)
	}
}

// TestRecoverHostileMarks: a corrupt mark is still a run that started
// (recorded with the id its name gives, its contents not trusted); names
// that are not Airlock's run ids, directories and symlinks named like
// marks are left alone, and nothing outside dir is removed.
func TestRecoverHostileMarks(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	corrupt := "run_33333333-3333-4333-8333-333333333333"
	must(os.WriteFile(filepath.Join(dir, corrupt+suffix), []byte(`{"ID":"`+dead+`","Pipeline":"other"}`), 0o600))
	must(os.WriteFile(filepath.Join(dir, "x.run"), nil, 0o600))
	must(os.WriteFile(filepath.Join(dir, "run_zz.run"), nil, 0o600))
	must(os.Mkdir(filepath.Join(dir, "run_44444444-4444-4444-8444-444444444444"+suffix), 0o700))
	link := "run_55555555-5555-4555-8555-555555555555"
	must(os.WriteFile(filepath.Join(outside, "victim"), []byte("keep"), 0o600))
	must(os.Symlink(filepath.Join(outside, "victim"), filepath.Join(dir, link+suffix)))
	var ids []string
	n, _ := Recover(dir, func(r audit.Run) error {
		if r.Pipeline != "" {
			t.Errorf("a corrupt mark's contents were trusted: %+v", r)
		}
		ids = append(ids, r.ID)
		return nil
	})
	if n != 1 || !slices.Equal(ids, []string{corrupt}) {
		t.Fatalf("recovered %d %v, want the corrupt mark's run", n, ids)
	}
	if !exists(filepath.Join(outside, "victim")) || !exists(filepath.Join(dir, "x.run")) {
		t.Fatal("something that is not a mark was removed")
	}
	if _, err := Begin(dir, audit.Run{ID: "../escape"}); !errors.Is(err, ErrRunID) {
		t.Fatalf("Begin with a bad id: %v", err)
	}
}
