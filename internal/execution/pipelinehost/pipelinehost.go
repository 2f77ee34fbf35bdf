// Package pipelinehost decides whether this host can run the configured
// pipelines, and prepares what run_pipeline runs them with: the sandbox and
// the runs directory. serve (through the runner) and `airlock doctor`
// ([Check]) take the same decision by the same code.
//
// The invariant it keeps: when a run could not be confined (no network
// namespace, no Landlock, a cgo binary, ...) the host says why and every
// run_pipeline call is refused with that reason (fail closed); the server
// still starts, so reads and declarations work.
//
// Where pools and the state directory live is not part of that decision:
// the sandbox user never walks a host path. The trampoline binds each
// pool's manifest files as root, before it drops to that user, and the
// pipeline writes to its own tmpfs, which the server collects through its
// own descriptor (package sandbox). So a pool below a private (0700)
// directory — a user's home — runs like any other, and the runs directory
// stays inside the (0700) state directory (issue 24 item 11). What the
// sandbox user still needs is read permission on each pool file itself: a
// bind keeps the file's owner and mode, and a file it cannot read refuses
// the run with [sandbox.ErrPoolUnreadable].
package pipelinehost

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/execution/runmark"
	"github.com/airlock-dev/airlock/internal/execution/sandbox"
	"github.com/airlock-dev/airlock/internal/execution/toolkit"
	"github.com/airlock-dev/airlock/internal/kit/metrics"
)

// Options configure the host; nil means defaults.
type Options struct {
	// SandboxTrampoline is the cgo-free binary the sandbox re-executes
	// (default: this executable).
	SandboxTrampoline string
	// Metrics counts the pipeline runs; nil counts none.
	Metrics *metrics.Metrics
}

// ErrNoPipelines is why run_pipeline is unavailable under a configuration
// that declares none.
var ErrNoPipelines = errors.New("no pipelines are configured")

// New prepares the sandbox when the configuration declares pipelines. If
// the host cannot confine a run (no network namespace, no Landlock, ...),
// the server still starts — reads and declarations work — but every
// run_pipeline call is refused with the reason: fail closed.
func New(cfg *config.Config, stateDir string, opts *Options, log *slog.Logger) toolkit.PipelineHost {
	if opts == nil {
		opts = &Options{}
	}
	host := toolkit.PipelineHost{}
	if len(cfg.Pipelines) == 0 {
		host.Unavailable = ErrNoPipelines
		return host
	}
	// The runs directory holds the marks and the published output pools
	// the store names, which the next process serving the context opens
	// (e2e inspector test: three processes, one pool). Only the server
	// reads or writes it, so it stays in the state directory however
	// private that is, and 0700 (server TestPipelinePoolUnderPrivateHome,
	// cli TestDemoLeavesNoTempDir).
	host.RunsDir = filepath.Join(stateDir, runsName)
	host.Marks = host.RunsDir
	if err := os.MkdirAll(host.RunsDir, 0o700); err != nil {
		host.Unavailable = fmt.Errorf("creating the runs directory: %w", err)
		return host
	}
	// Spare: each run takes a trampoline started in advance (its own
	// fresh namespaces, used by that run only), so a run does not wait
	// for the trampoline's start (issue 27; sandbox spare.go). The runner
	// stops it with the kill switch and closes it at shutdown.
	sb, err := sandbox.New(&sandbox.Options{TrampolinePath: opts.SandboxTrampoline, Logger: log, OnRun: sandboxObserver(opts.Metrics), Spare: true})
	if err != nil {
		log.Warn("run_pipeline disabled: the sandbox is unavailable", "err", err)
		host.Unavailable = err
		return host
	}
	host.Sandbox = sb
	return host
}

// runsName is the runs directory in the state directory: the runs'
// workspaces, their published outputs and their marks (package runmark).
const runsName = "runs"

// Recover records, at start, each pipeline run an earlier process on
// stateDir left unfinished — it died while the run lasted — as
// interrupted in db's trail (audit.RunInterrupted), and removes its
// workspace (package runmark). A record the store cannot take leaves the
// run for the next start; both are logged, neither stops the start.
func Recover(ctx context.Context, stateDir string, db audit.Appender, now func() time.Time, log *slog.Logger) {
	n, err := runmark.Recover(filepath.Join(stateDir, runsName), func(r audit.Run) error {
		return db.Append(ctx, audit.RunInterrupted(now().UTC(), r))
	})
	if n > 0 {
		log.Warn("pipeline runs interrupted by the last stop recorded", "runs", n)
	}
	if err != nil {
		log.Error("recording interrupted pipeline runs", "err", err)
	}
}

// Check is serve's decision about run_pipeline for cfg and stateDir on
// this host, for `airlock doctor`: nil when pipelines will run, else the
// reason every run_pipeline call will be refused with. It is New itself
// (one code path: the sandbox's self-test, which catches a binary built
// with cgo, included), so doctor cannot call a host ready that serve then
// refuses. The report lists the sandbox's mechanisms whenever
// sandbox.New got as far as checking them.
func Check(cfg *config.Config, stateDir string, opts *Options) (sandbox.Report, error) {
	host := New(cfg, stateDir, opts, slog.New(slog.DiscardHandler))
	if host.Sandbox != nil {
		defer host.Sandbox.Close() // its spare: doctor runs nothing
		return host.Sandbox.Report(), nil
	}
	var ue *sandbox.UnavailableError
	if errors.As(host.Unavailable, &ue) {
		return ue.Report, host.Unavailable
	}
	return sandbox.Report{}, host.Unavailable
}

// sandboxObserver counts pipeline runs, kills and limit hits.
func sandboxObserver(m *metrics.Metrics) func(*sandbox.Result, error) {
	if m == nil {
		return nil
	}
	return func(res *sandbox.Result, err error) {
		switch {
		case res == nil:
			m.SandboxRun(metrics.RunError, nil)
		case res.Killed:
			m.SandboxRun(metrics.RunKilled, res.LimitsHit)
		case err != nil:
			m.SandboxRun(metrics.RunError, res.LimitsHit)
		case res.ExitCode != 0:
			m.SandboxRun(metrics.RunFailed, res.LimitsHit)
		default:
			m.SandboxRun(metrics.RunOK, res.LimitsHit)
		}
	}
}
