//go:build linux

package sandbox_test

import (
	"context"
	"os/exec"
	"testing"

	"github.com/airlock-dev/airlock/internal/execution/sandbox"
)

// BenchmarkSandboxStart and BenchmarkPlainExec run the same /bin/true; the
// difference is the sandbox's start-up cost (goal: at most 20 ms extra).
// `make bench`; figures are recorded in BENCHMARKS.md.
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
