// Package pipelinehost decides whether this host can run the configured
// pipelines, and prepares what run_pipeline runs them with: the sandbox and
// a runs directory the sandbox user can reach. serve (through the runner)
// and `airlock doctor` ([Check]) take the same decision by the same code.
//
// The invariant it keeps: when a run could not be confined (no network
// namespace, no Landlock, a cgo binary, ...) or the sandbox user could not
// reach the pools or the run directories, the host says why and every
// run_pipeline call is refused with that reason (fail closed); the server
// still starts, so reads and declarations work.
package pipelinehost

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
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

// ErrNotTraversable reports a directory the sandbox user cannot reach.
var ErrNotTraversable = errors.New("not traversable by the sandbox user")

// ErrNoPipelines is why run_pipeline is unavailable under a configuration
// that declares none.
var ErrNoPipelines = errors.New("no pipelines are configured")

// New prepares the sandbox when the configuration declares pipelines. If
// the host cannot confine a run (no network namespace, no Landlock, ...) or
// the sandbox user could not reach the pools or the run directories, the
// server still starts — reads and declarations work — but every
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
	var err error
	host.Marks = filepath.Join(stateDir, runsName)
	// The runs directory is not released on close, even a temporary one:
	// it holds published output pools the store still names, which the
	// next process serving the context must open (e2e inspector test:
	// three processes, one pool).
	if host.RunsDir, _, err = ReachableDir(stateDir, runsName); err != nil {
		host.Unavailable = fmt.Errorf("creating the runs directory: %w", err)
		return host
	}
	if err := checkReachable(cfg, host.RunsDir); err != nil {
		log.Warn("run_pipeline disabled", "err", err)
		host.Unavailable = err
		return host
	}
	sb, err := sandbox.New(&sandbox.Options{TrampolinePath: opts.SandboxTrampoline, Logger: log, OnRun: sandboxObserver(opts.Metrics)})
	if err != nil {
		log.Warn("run_pipeline disabled: the sandbox is unavailable", "err", err)
		host.Unavailable = err
		return host
	}
	host.Sandbox = sb
	return host
}

// runsName is the runs directory in the state directory: the runs'
// workspaces (unless it had to fall back, see ReachableDir) and always
// their marks (package runmark).
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
		return host.Sandbox.Report(), nil
	}
	var ue *sandbox.UnavailableError
	if errors.As(host.Unavailable, &ue) {
		return ue.Report, host.Unavailable
	}
	return sandbox.Report{}, host.Unavailable
}

// checkReachable verifies that every directory from the root down to the
// runs directory and to each pipeline input pool lets "others" search it:
// pipelines run as an unprivileged user, and a 0700 directory on the way
// (a mktemp directory, a private home) would make every run fail obscurely.
func checkReachable(cfg *config.Config, runsDir string) error {
	dirs := []string{runsDir}
	for _, p := range cfg.Pipelines {
		for _, in := range p.Inputs {
			for _, pc := range cfg.Pools {
				if pc.ID == in {
					dirs = append(dirs, pc.Path)
				}
			}
		}
	}
	for _, d := range dirs {
		if err := traversable(d); err != nil {
			return err
		}
	}
	return nil
}

// traversable reports whether "others" may search every directory from the
// root down to dir.
func traversable(dir string) error {
	for cur := dir; ; cur = filepath.Dir(cur) {
		fi, err := os.Stat(cur)
		if err != nil {
			return fmt.Errorf("checking %s: %w", cur, err)
		}
		if fi.Mode()&0o001 == 0 {
			return fmt.Errorf("%s (mode %04o) is on the path to %s and %w (uid 65534): make it o+x, or use another --state / pool location",
				cur, fi.Mode()&fs.ModePerm, dir, ErrNotTraversable)
		}
		if cur == filepath.Dir(cur) {
			return nil
		}
	}
}

// ReachableDir returns stateDir/name (created 0711) when the sandbox user
// can traverse to it. When it cannot — a state directory under a private
// home, the XDG default for root, a test's 0700 temporary directory — it
// returns a fresh directory under the system temp directory instead
// (random name, 0711, owned by us), so run workspaces and the demo pools
// stay reachable. release removes that directory, and must be called when
// the process is done with it: every serve, doctor and demo-loading
// command used to leave one behind (issue 24 item 10: hundreds after a day
// of tests). For stateDir/name it does nothing. Such a directory never
// holds evidence — the audit trail stays in stateDir — and one left by a
// killed process does not outlive a reboot.
func ReachableDir(stateDir, name string) (dir string, release func() error, err error) {
	dir = filepath.Join(stateDir, name)
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return "", nil, err
	}
	if traversable(dir) == nil {
		return dir, func() error { return nil }, nil
	}
	tmp, err := os.MkdirTemp("", "airlock-"+name+"-")
	if err != nil {
		return "", nil, err
	}
	release = func() error { return os.RemoveAll(tmp) }
	if err := os.Chmod(tmp, 0o711); err != nil {
		return "", nil, errors.Join(err, release())
	}
	return tmp, release, nil
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
