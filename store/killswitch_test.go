package store_test

import (
	"context"
	"testing"

	"github.com/airlock-dev/airlock/store"
)

func TestKillSwitch(t *testing.T) {
	ctx := context.Background()
	server, path := openTemp(t, nil)
	cli := openPath(t, path)
	ro := openRO(t, path)

	check := func(step string, want bool) {
		t.Helper()
		for name, db := range map[string]*store.DB{"server": server, "cli": cli, "read-only": ro} {
			for fn, get := range map[string]func(context.Context) (bool, error){
				"KillSwitch": db.KillSwitch, "KillSwitchEngaged": db.KillSwitchEngaged,
			} {
				if got, err := get(ctx); err != nil || got != want {
					t.Errorf("%s: %s.%s = %v, %v; want %v", step, name, fn, got, err, want)
				}
			}
		}
	}
	check("never set", false)
	for _, tt := range []struct {
		by     *store.DB
		engage bool
	}{
		{cli, true}, {cli, true}, {server, false}, {server, true}, {cli, false},
	} {
		if err := tt.by.SetKillSwitch(ctx, tt.engage, "op@example", "drill"); err != nil {
			t.Fatal(err)
		}
		check("after set", tt.engage)
	}
	var by, reason string
	if err := store.RawOpen(t, path).QueryRow(`SELECT updated_by, reason FROM settings WHERE name = 'kill_switch'`).Scan(&by, &reason); err != nil || by != "op@example" || reason != "drill" {
		t.Fatalf("settings row: %q %q %v", by, reason, err)
	}
}

func TestKillSwitchFailsClosed(t *testing.T) {
	ctx := context.Background()
	db, path := openTemp(t, nil)
	raw := store.RawOpen(t, path)
	if _, err := raw.Exec(`INSERT INTO settings VALUES ('kill_switch', 'garbage', 'x', 'x', 'x')`); err != nil {
		t.Fatal(err)
	}
	for name, get := range map[string]func(context.Context) (bool, error){
		"KillSwitch": db.KillSwitch, "KillSwitchEngaged": db.KillSwitchEngaged,
	} {
		if on, err := get(ctx); !on || err != nil {
			t.Errorf("%s with an unreadable value = %v, %v; want engaged", name, on, err)
		}
	}
	if _, err := raw.Exec(`DROP TABLE settings`); err != nil {
		t.Fatal(err)
	}
	for name, get := range map[string]func(context.Context) (bool, error){
		"KillSwitch": db.KillSwitch, "KillSwitchEngaged": db.KillSwitchEngaged,
	} {
		if on, err := get(ctx); !on || err == nil {
			t.Errorf("%s with no settings table = %v, %v; want engaged and an error", name, on, err)
		}
	}
}
