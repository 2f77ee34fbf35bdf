package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/internal/audit/audit"
)

// TestDeclarationsMigration: a file at schema version 1 (written before
// declarations existed) reads as having none through a read-only handle,
// is upgraded by the next Open with its audit chain intact, and the
// read-only handle opened before the upgrade then sees what is declared.
func TestDeclarationsMigration(t *testing.T) {
	ctx := context.Background()
	path, ro := openOldReadOnly(t, 1)
	if _, err := ro.Declarations().Get(ctx, "d1"); !errors.Is(err, declarations.ErrNotFound) {
		t.Errorf("Get on a version 1 file: %v, want ErrNotFound", err)
	}
	if list, err := ro.Declarations().List(ctx, declarations.Filter{}); err != nil || len(list) != 0 {
		t.Errorf("List on a version 1 file: %v, %v; want none", list, err)
	}

	db := openAt(t, path, nil)
	if err := db.Append(ctx, &audit.Record{Outcome: audit.OutcomeOK}); err != nil {
		t.Fatal(err)
	}
	d := &declarations.Declaration{ID: "d1", ContextID: "s1", State: declarations.StateDeclared, CreatedAt: time.Now()}
	if err := db.Declarations().Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	if got, err := ro.Declarations().Get(ctx, "d1"); err != nil || got.State != declarations.StateDeclared {
		t.Errorf("Get after the upgrade: %v, %v", got, err)
	}
	if res, err := db.Verify(ctx); err != nil || !res.OK || res.Records != 1 {
		t.Errorf("Verify after the upgrade: %+v, %v", res, err)
	}
}

// TestDeclarationsCorruptRow: a row edited behind the store's back so that
// it no longer decodes is an error for Get, List and Transition, never a
// guess, and Transition writes nothing.
func TestDeclarationsCorruptRow(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a.db")
	db := openAt(t, path, nil)
	st := db.Declarations()
	d := &declarations.Declaration{ID: "d1", ContextID: "s1", State: declarations.StateApproved, CreatedAt: time.Now()}
	if err := st.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	raw := RawOpen(t, path)
	for _, c := range []struct{ name, set string }{
		{"unknown need field", `need = '{"operation":"comm.fetch","extra":1}'`},
		{"trailing data", `history = '[] []'`},
		{"bad time", `expires_at = 'tomorrow'`},
		{"bad history time", `history = '[{"from":"","to":"declared","at":"x","by":"a"}]'`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := raw.Exec(`UPDATE declarations SET ` + c.set + ` WHERE id = 'd1'`); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Get(ctx, "d1"); err == nil || errors.Is(err, declarations.ErrNotFound) {
				t.Errorf("Get: %v, want a decoding error", err)
			}
			if _, err := st.List(ctx, declarations.Filter{}); err == nil {
				t.Error("List: no error")
			}
			_, err := st.Transition(ctx, "d1", []declarations.State{declarations.StateApproved}, declarations.StateExecuting, func(*declarations.Declaration) error {
				t.Error("mutate ran on an undecodable row")
				return nil
			})
			if err == nil || errors.Is(err, ErrUnavailable) {
				t.Errorf("Transition: %v, want a decoding error", err)
			}
			// Restore a decodable row for the next case.
			if _, err := raw.Exec(`UPDATE declarations SET need = $1, history = '[]', expires_at = NULL WHERE id = 'd1'`, string((&declarations.Need{}).Canonical())); err != nil {
				t.Fatal(err)
			}
		})
	}
}
