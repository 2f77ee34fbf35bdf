//go:build linux

package sandbox_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/execution/sandbox"
	"github.com/airlock-dev/airlock/internal/testkit/gobuild"
)

// BenchmarkSandboxStart and BenchmarkPlainExec run the same /bin/true; the
// difference is the sandbox's start-up cost (goal: at most 20 ms extra).
// The shared sandbox keeps a spare (spare.go) and the runs follow each
// other at once, so each run takes the spare being started for it: the
// figure is a saturated server's. `make bench`; figures are recorded in
// BENCHMARKS.md.
func BenchmarkSandboxStart(b *testing.B) {
	s := newSandbox(b)
	spec := sandbox.Spec{Argv: []string{"/bin/true"}}
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		res, err := s.Run(ctx, spec)
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("%v %+v", err, res)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/run")
}

func BenchmarkPlainExec(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/run")
}

// BenchmarkSandboxStartBinary is BenchmarkSandboxStart with the airlock
// binary itself as the trampoline, as serve runs it — the whole binary's
// package initialisation before the trampoline decides is part of every
// run started cold (issue 27) — against the minimal trampolinecmd, the
// sides interleaved run by run. (An older airlock binary cannot be a side:
// the trampoline speaks its own server's handoff, confine/handoff.go; the
// end-to-end BenchmarkPeersPipeline compares against one, each side with
// its own server.) The "airlock-spare" side is serve's
// configuration (Options.Spare, spare.go), measured when its spare is
// ready (the run waits for the previous run's refill first, untimed): the
// cost of a run on a server that is not already saturated. Internal
// figures; reports each side's median ms per run.
func BenchmarkSandboxStartBinary(b *testing.B) {
	newSandbox(b) // builds the fixtures, skips where the sandbox cannot run
	airlock := filepath.Join(fixtureDir, "airlock")
	gobuild.Build(b, airlock, filepath.Join("..", "..", ".."))
	type side struct {
		name, bin string
		spare     bool
	}
	sides := []side{{"trampolinecmd", trampolinePath, false}, {"airlock", airlock, false}, {"airlock-spare", airlock, true}}
	sbs := make([]*sandbox.Sandbox, len(sides))
	for i, s := range sides {
		sb, err := sandbox.New(&sandbox.Options{TrampolinePath: s.bin, Spare: s.spare})
		if err != nil {
			b.Fatalf("%s: %v", s.name, err)
		}
		b.Cleanup(func() { sb.Close() })
		sbs[i] = sb
	}
	spec := sandbox.Spec{Argv: []string{"/bin/true"}}
	ms := make([][]float64, len(sides))
	for b.Loop() {
		for i, sb := range sbs {
			sb.SpareSettled()
			start := time.Now()
			res, err := sb.Run(context.Background(), spec)
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("%s: %v %+v", sides[i].name, err, res)
			}
			ms[i] = append(ms[i], float64(time.Since(start).Microseconds())/1000)
		}
	}
	for i, s := range sides {
		slices.Sort(ms[i])
		b.ReportMetric(ms[i][len(ms[i])/2], s.name+"-ms/run")
	}
}
