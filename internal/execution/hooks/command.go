package hooks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/execution/notify"
	"github.com/airlock-dev/airlock/internal/execution/sandbox"
)

// A command hook (notifications.commands) is an operator's program run for
// each approval.pending / approval.expired event. Only the sandbox starts
// processes in Airlock, so a hook runs there with a pipeline's confinement:
// its own root (system directories and its read_only paths, nothing of the
// state directory), no network, a non-root uid, its limits, and exactly the
// environment its config names. The event's JSON body — the webhook's body:
// ids and a masked target, never the agent's text — is its stdin. It is a
// notify.Sink, so it shares the webhooks' queue and retry discipline and
// never runs on a call's path (TestCommandHookSeesPendingAndExpired,
// TestCommandHookTimeoutThenNextEvent, TestCommandHookConfined).

// hookOutputBytes bounds what a hook's stdout and stderr leave in the log.
const hookOutputBytes = 1 << 10

// hookSandbox is the sandbox the hooks of one notifier share, built on the
// first delivery (its self-test is not on the start-up or the call path).
type hookSandbox struct {
	trampoline string
	log        *slog.Logger
	once       sync.Once
	sb         *sandbox.Sandbox
	err        error
}

func (h *hookSandbox) get() (*sandbox.Sandbox, error) {
	h.once.Do(func() {
		h.sb, h.err = sandbox.New(&sandbox.Options{TrampolinePath: h.trampoline, Logger: h.log})
		if h.err != nil {
			h.log.Error("command hooks cannot run: the sandbox is unavailable", "err", h.err)
		}
	})
	return h.sb, h.err
}

// commandSink is one configured command hook.
type commandSink struct {
	cfg config.CommandHook
	sb  *hookSandbox
	log *slog.Logger
}

var _ notify.Sink = (*commandSink)(nil)

// Errors of a hook's delivery (logged by the notifier; never an agent's).
var (
	errHookExit = errors.New("command hook failed")
)

func (c *commandSink) Kind() string { return "command" }

func (c *commandSink) Wants(event string) bool {
	return len(c.cfg.Events) == 0 || slices.Contains(c.cfg.Events, event)
}

// Deliver runs the hook once with body on stdin. A hook that outlives its
// timeout is killed with its whole PID namespace (notify.ErrTimeout); a
// non-zero exit or any other limit is errHookExit; either is retried by the
// notifier. Its output goes to the log only, bounded.
func (c *commandSink) Deliver(ctx context.Context, body []byte) error {
	sb, err := c.sb.get()
	if err != nil {
		return fmt.Errorf("hook %q: %w", c.cfg.ID, err)
	}
	vars, name, err := config.ReadEnv(c.cfg.Env)
	if err != nil {
		// The error names the variable or the file's base name, never
		// the value.
		return fmt.Errorf("hook %q: environment variable %s: %w", c.cfg.ID, name, err)
	}
	// HOME and TMPDIR in its scratch directory, then exactly what its
	// config names.
	env := append([]string{"HOME=" + sandbox.TempDir, "TMPDIR=" + sandbox.TempDir}, vars...)
	spec := sandbox.Spec{
		Argv: c.cfg.Argv, Env: env, ReadOnly: c.cfg.ReadOnly, Temp: true, Dir: sandbox.TempDir,
		Stdin: body,
		Limits: sandbox.Limits{Wall: time.Duration(c.cfg.TimeoutMS) * time.Millisecond, MemoryBytes: 256 << 20, Procs: 32,
			OutputBytes: hookOutputBytes, DiskBytes: 16 << 20, FileSizeBytes: 16 << 20},
	}
	res, err := sb.Run(ctx, spec)
	if err != nil {
		return fmt.Errorf("hook %q: %w", c.cfg.ID, err)
	}
	attrs := []any{"hook", c.cfg.ID, "exit", res.ExitCode, "duration", res.Duration.Round(time.Millisecond),
		"stdout", string(res.Stdout), "stderr", string(res.Stderr)}
	switch {
	case res.Killed && res.KillReason == sandbox.KillWallTime:
		c.log.Warn("command hook killed at its timeout", attrs...)
		return fmt.Errorf("hook %q killed after %d ms: %w", c.cfg.ID, c.cfg.TimeoutMS, notify.ErrTimeout)
	case res.Killed:
		c.log.Warn("command hook killed by a sandbox limit", append(attrs, "limit", res.KillReason)...)
		return fmt.Errorf("hook %q killed (%s): %w", c.cfg.ID, res.KillReason, errHookExit)
	case res.ExitCode != 0:
		c.log.Warn("command hook exited with an error", attrs...)
		return fmt.Errorf("hook %q exited %d: %w", c.cfg.ID, res.ExitCode, errHookExit)
	}
	c.log.Info("command hook ran", attrs...)
	return nil
}
