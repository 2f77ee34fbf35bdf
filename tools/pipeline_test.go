package tools

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/execution/sandbox"
	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/policy/limits"
)

func TestCapLimits(t *testing.T) {
	tests := []struct {
		name string
		in   sandbox.Limits
		pol  limits.Spec
		cpu  time.Duration
		mem  int64
	}{
		{"policy lowers", sandbox.Limits{CPU: 30 * time.Second, MemoryBytes: 1 << 30}, limits.Spec{MaxCPUTimeMS: 5000, MaxMemoryBytes: 1 << 20}, 5 * time.Second, 1 << 20},
		{"policy fills defaults", sandbox.Limits{}, limits.Spec{MaxCPUTimeMS: 5000, MaxMemoryBytes: 1 << 20}, 5 * time.Second, 1 << 20},
		{"pipeline already lower", sandbox.Limits{CPU: time.Second, MemoryBytes: 1 << 10}, limits.Spec{MaxCPUTimeMS: 5000, MaxMemoryBytes: 1 << 20}, time.Second, 1 << 10},
		{"no policy limit", sandbox.Limits{CPU: time.Second}, limits.Spec{}, time.Second, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.in
			capLimits(&l, tc.pol)
			if l.CPU != tc.cpu || l.MemoryBytes != tc.mem {
				t.Fatalf("got cpu %v mem %d", l.CPU, l.MemoryBytes)
			}
		})
	}
}

func TestCheckParams(t *testing.T) {
	p := config.Pipeline{Name: "p", Parameters: map[string]config.Param{
		"region": {Type: "string", Enum: []string{"north", "south"}},
		"n":      {Type: "integer", Required: true},
		"flag":   {Type: "boolean"},
		"word":   {Type: "string", Pattern: "[a-z]+", MaxLength: 5},
	}}
	tests := []struct {
		name string
		in   map[string]any
		ok   bool
	}{
		{"valid", map[string]any{"n": 3.0, "region": "north", "flag": true, "word": "abc"}, true},
		{"negative integer (an option to the program)", map[string]any{"n": -1.0}, false},
		{"negative zero", map[string]any{"n": math.Copysign(0, -1)}, false},
		{"zero", map[string]any{"n": 0.0}, true},
		{"missing required", map[string]any{"region": "north"}, false},
		{"not in enum", map[string]any{"n": 1.0, "region": "up"}, false},
		{"fraction for integer", map[string]any{"n": 1.5}, false},
		{"string for integer", map[string]any{"n": "1"}, false},
		{"too long", map[string]any{"n": 1.0, "word": "abcdef"}, false},
		{"pattern", map[string]any{"n": 1.0, "word": "ab1"}, false},
		{"leading dash", map[string]any{"n": 1.0, "word": "-x"}, false},
		{"control char", map[string]any{"n": 1.0, "region": "north\n"}, false},
		{"undeclared", map[string]any{"n": 1.0, "other": "x"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := checkParams(p, tc.in)
			if tc.ok != (err == nil) {
				t.Fatalf("err = %v", err)
			}
			if err != nil && !errors.Is(err, violation.New(violation.InvalidArguments, "")) {
				t.Fatalf("err = %v, want INVALID_ARGUMENTS", err)
			}
		})
	}
}

// TestBuildSpecStablePaths (issue #10 item 10): every token and environment
// variable names a stable sandbox path, never a host path of the run or of
// a pool; the pools carry exactly the manifest's names (item 8) and the
// disk quota is passed on (item 9).
func TestBuildSpecStablePaths(t *testing.T) {
	p := config.Pipeline{
		Name: "p", AllowTemp: true, Stdin: "none",
		Argv:   []string{"/bin/sh", "/opt/p.sh", "{pool.sales}/regions.csv", "out={out}/r.md", "{tmp}", "{param.region}"},
		Files:  []string{"/opt/p.sh"},
		Limits: config.PipelineLimits{DiskBytes: 1 << 20},
	}
	pools := []sandbox.Pool{{ID: "sales", Dir: "/srv/host/pools/sales", Files: []string{"regions.csv"}}}
	spec, err := buildSpec(p, map[string]string{"region": "north"}, pools)
	if err != nil {
		t.Fatal(err)
	}
	wantArgv := []string{"/bin/sh", "/opt/p.sh", "/pools/sales/regions.csv", "out=/out/r.md", "/tmp", "north"}
	wantEnv := []string{"AIRLOCK_OUT=/out", "AIRLOCK_POOL_SALES=/pools/sales", "AIRLOCK_TMP=/tmp", "HOME=/out", "LANG=C.UTF-8", "TMPDIR=/tmp"}
	switch {
	case !slices.Equal(spec.Argv, wantArgv):
		t.Errorf("argv %q, want %q", spec.Argv, wantArgv)
	case !slices.Equal(spec.Env, wantEnv):
		t.Errorf("env %q, want %q", spec.Env, wantEnv)
	case spec.Dir != "/out" || !spec.Temp || spec.Limits.DiskBytes != 1<<20:
		t.Errorf("dir %q temp %v disk %d", spec.Dir, spec.Temp, spec.Limits.DiskBytes)
	case len(spec.Pools) != 1 || !slices.Equal(spec.Pools[0].Files, []string{"regions.csv"}):
		t.Errorf("pools %+v", spec.Pools)
	case !slices.Equal(spec.ReadOnly, []string{"/opt/p.sh"}):
		t.Errorf("read-only %q", spec.ReadOnly)
	}
	for _, s := range append(spec.Argv, spec.Env...) {
		if strings.Contains(s, "/srv/host") {
			t.Errorf("host path in %q", s)
		}
	}
}
