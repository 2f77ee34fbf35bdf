//go:build linux

package sandbox_test

import (
	"context"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/sandbox"
)

func TestProbeReport(t *testing.T) {
	s := newSandbox(t)
	rep := s.Report()
	t.Logf("\n%s", rep)
	if !rep.Ready() {
		t.Fatalf("not ready: %v", rep.Missing())
	}
}

func TestRunIDs(t *testing.T) {
	s := newSandbox(t)
	d := newRunDirs(t)
	res, err := s.Run(context.Background(), sandbox.Spec{
		Argv:     []string{hostilePath, "ids"},
		ReadOnly: []string{fixtureDir},
		Writable: []string{d.out},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	if !strings.Contains(string(res.Stdout), "uid=65534 euid=65534 gid=65534 groups=[] pid=1") {
		t.Errorf("stdout %q", res.Stdout)
	}
}

func TestScratch(t *testing.T) {
	s := newSandbox(t)
	d := newRunDirs(t)
	for _, argv := range [][]string{
		{"/bin/sh", fixtureDir + "/csv_summary.sh", d.pool + "/data.csv", d.out + "/summary.txt"},
		{"python3", fixtureDir + "/csv_summary.py", d.pool + "/data.csv", d.out + "/summary.json"},
		{"/bin/sh", "-c", "ls /proc /etc; cat /etc/hostname; id; echo $PATH; ls -la " + d.out},
	} {
		res, err := s.Run(context.Background(), sandbox.Spec{
			Argv:     argv,
			ReadOnly: []string{fixtureDir, d.pool},
			Writable: []string{d.out},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%v: exit %d %s\nstdout: %s\nstderr: %s", argv, res.ExitCode, res.Signal, res.Stdout, res.Stderr)
	}
}
