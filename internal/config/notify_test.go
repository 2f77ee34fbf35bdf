package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/airlock-dev/airlock/internal/config"
)

// TestCommandHooks: a command hook loads with its defaults and relative
// paths resolved; `config check` refuses, with the YAML line, a program it
// could not run as meant — relative, missing, not executable — and every
// event, id, timeout or variable it does not know.
func TestCommandHooks(t *testing.T) {
	dir := t.TempDir()
	noexec := filepath.Join(dir, "hook.txt")
	if err := os.WriteFile(noexec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ok := base + `notifications:
  commands:
    - id: pager
      argv: [/bin/sh, hooks/page.sh]
      read_only: [hooks]
      env: {PAGER_TOKEN: {file: pager.token}}
    - {id: log, argv: [/bin/cat], events: [approval.expired], timeout_ms: 500}
`
	if err := os.Mkdir(filepath.Join(dir, "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("airlock.yaml", []byte(ok), dir)
	if err != nil {
		t.Fatal(err)
	}
	hooks := cfg.Notify.Commands
	if len(hooks) != 2 || hooks[0].TimeoutMS != config.DefaultHookTimeoutMS || hooks[0].ReadOnly[0] != filepath.Join(dir, "hooks") ||
		hooks[0].Env["PAGER_TOKEN"].File != filepath.Join(dir, "pager.token") || hooks[1].TimeoutMS != 500 {
		t.Fatalf("hooks: %+v", hooks)
	}
	wantRefusals(t, "notifications:\n  commands:\n", []refusal{
		{"relative program", "    - {id: x, argv: [sh, -c, true]}\n", "not an absolute, clean path"},
		{"dotted program", "    - {id: x, argv: [/bin/../bin/sh]}\n", "not an absolute, clean path"},
		{"missing program", "    - {id: x, argv: [/nonexistent/airlock-hook]}\n", "no such file"},
		{"directory program", "    - {id: x, argv: [/bin]}\n", "not an executable file"},
		{"not executable", "    - {id: x, argv: [" + noexec + "]}\n", "not an executable file"},
		{"missing read_only", "    - {id: x, argv: [/bin/cat], read_only: [hooks]}\n", "not an absolute path that exists"},
		{"empty argv", "    - {id: x, argv: []}\n", "empty argv"},
		{"unknown event", "    - {id: x, argv: [/bin/cat], events: [approval.approved]}\n", `event "approval.approved"`},
		{"bad id", "    - {id: A.B, argv: [/bin/cat]}\n", "command hook id"},
		{"duplicate id", "    - {id: x, argv: [/bin/cat]}\n    - {id: x, argv: [/bin/cat]}\n", "command hook id"},
		{"timeout too long", "    - {id: x, argv: [/bin/cat], timeout_ms: 300001}\n", "timeout"},
		{"reserved env", "    - {id: x, argv: [/bin/cat], env: {PATH: {env: P}}}\n", "not a variable a hook may set"},
		{"token source both", "    - {id: x, argv: [/bin/cat], env: {A: {env: B, file: c}}}\n", "exactly one of env or file"},
	})
}
