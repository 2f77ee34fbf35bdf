package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHelpNeverRuns: -h, --help and help, anywhere in any command's
// arguments, print that command's help to stdout, exit 0, and run
// nothing — no server starts, no state directory is created, no switch
// trips.
func TestHelpNeverRuns(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	t.Setenv("AIRLOCK_STATE", state)
	var cases [][]string
	for name := range commands() {
		for _, h := range []string{"-h", "--help", "help", "-help"} {
			cases = append(cases, []string{name, h})
		}
	}
	cases = append(cases,
		[]string{"serve", "--http", "127.0.0.1:0", "-h"},
		[]string{"audit", "verify", "-h"}, []string{"audit", "tail", "--follow", "--help"},
		[]string{"config", "check", "-h"}, []string{"pools", "verify", "-h"}, []string{"pools", "manifest", "-h"},
		[]string{"kill", "--reason", "x", "-h"}, []string{"approvals", "approve", "decl_x", "-h"},
		[]string{"context", "create", "--parent", "x", "-h"}, []string{"phase", "ctx_x", "execution", "-h"},
		[]string{"policy", "explain", "f.yaml", "-h"}, []string{"attribution", "verify", "f.json", "-h"},
		[]string{"report", "sess", "-h"}, []string{"doctor", "-h"},
	)
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := Run(ctx, args, Streams{In: strings.NewReader(""), Out: &out, Err: &errOut})
			if err != nil || ExitCode(err) != 0 {
				t.Fatalf("err = %v", err)
			}
			if !strings.HasPrefix(out.String(), "Usage: airlock "+args[0]) {
				t.Fatalf("stdout = %q", out.String())
			}
			if errOut.Len() != 0 {
				t.Fatalf("stderr = %q", errOut.String())
			}
			if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
				t.Fatal("help created the state directory")
			}
		})
	}
}

// TestHelpNamesEveryFlag: every flag a command defines is in its help.
func TestHelpNamesEveryFlag(t *testing.T) {
	t.Setenv("AIRLOCK_STATE", t.TempDir())
	var seen []*flag.FlagSet
	flagSetHook = func(fs *flag.FlagSet) { seen = append(seen, fs) }
	defer func() { flagSetHook = nil }()
	// Arguments that reach each command's flag parsing, then fail there.
	for _, args := range [][]string{
		{"serve"}, {"audit", "verify"}, {"pools", "verify"}, {"kill"}, {"policy", "explain", "f"},
		{"report", "s"}, {"doctor"}, {"attribution", "verify", "f"}, {"approvals", "list"},
		{"phase", "c", "execution"}, {"context", "list"}, {"init"},
		{"policy", "test", "f", "c"}, {"policy", "fmt", "f"},
	} {
		seen = nil
		err := Run(context.Background(), append(args, "--zz-not-a-flag"), Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &bytes.Buffer{}})
		if !errors.Is(err, ErrUsage) || len(seen) == 0 {
			t.Fatalf("%v: err %v, %d flag sets", args, err, len(seen))
		}
		if !strings.Contains(err.Error(), "'airlock "+args[0]+" -h'") {
			t.Errorf("%v: usage error without the help hint: %v", args, err)
		}
		help := helpText[args[0]]
		seen[0].VisitAll(func(f *flag.Flag) {
			if !strings.Contains(help, "--"+f.Name+" ") && !strings.Contains(help, "-"+f.Name+" ") {
				t.Errorf("airlock %s -h does not mention --%s", args[0], f.Name)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	for _, arg := range []string{"--version", "version", "-version"} {
		var out bytes.Buffer
		if err := Run(context.Background(), []string{arg}, Streams{Out: &out, Err: &bytes.Buffer{}}); err != nil || !strings.HasPrefix(out.String(), "airlock "+Version) {
			t.Fatalf("%s: %q %v", arg, out.String(), err)
		}
	}
}

func TestTopLevelHelpGoesToStdout(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := Run(context.Background(), []string{"--help"}, Streams{Out: &out, Err: &errOut}); err != nil || !strings.Contains(out.String(), "Commands:") || errOut.Len() != 0 {
		t.Fatalf("airlock --help: %v %q %q", err, out.String(), errOut.String())
	}
	out.Reset()
	if err := Run(context.Background(), []string{"help", "kill"}, Streams{Out: &out, Err: &errOut}); err != nil || !strings.HasPrefix(out.String(), "Usage: airlock kill") {
		t.Fatalf("airlock help kill: %v %q", err, out.String())
	}
}
