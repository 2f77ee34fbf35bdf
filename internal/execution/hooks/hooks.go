// Package hooks turns the configuration's notifications section into a
// serving process's notifier (package notify): its webhooks, and its
// command hooks — an operator's programs, run for each approval.pending /
// approval.expired event only in the sandbox (command.go), since only the
// sandbox starts processes in Airlock.
//
// The notifier is a process's delivery queues: the runner builds one at
// start and again when a reload changes the notifications section, and
// sends to it when a need waits for an operator or expires undecided.
package hooks

import (
	"log/slog"
	"os"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/execution/notify"
)

// Options configure Notifier; nil means defaults.
type Options struct {
	Logger *slog.Logger
	// SandboxTrampoline is the binary the sandbox re-executes for command
	// hooks (default: this executable).
	SandboxTrampoline string
	// OnOutcome is told how each event ended at each sink (metrics).
	OnOutcome func(kind, outcome string)
}

// Notifier builds the notifier of cfg's webhooks and command hooks; nil
// (which sends nothing) when it names none.
func Notifier(cfg *config.Config, opts *Options) *notify.Notifier {
	if opts == nil {
		opts = &Options{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if len(cfg.Notify.Webhooks) == 0 && len(cfg.Notify.Commands) == 0 {
		return nil
	}
	sinks := make([]notify.Sink, 0, len(cfg.Notify.Webhooks)+len(cfg.Notify.Commands))
	for _, w := range cfg.Notify.Webhooks {
		h := &notify.Webhook{URL: w.URL, Events: w.Events}
		if w.SecretEnv != "" {
			if v := os.Getenv(w.SecretEnv); v != "" {
				h.Secret = []byte(v)
			} else {
				log.Warn("webhook secret variable is unset: its notifications go unsigned", "variable", w.SecretEnv)
			}
		}
		sinks = append(sinks, h)
	}
	if len(cfg.Notify.Commands) > 0 {
		sb := &hookSandbox{trampoline: opts.SandboxTrampoline, log: log}
		for _, c := range cfg.Notify.Commands {
			sinks = append(sinks, &commandSink{cfg: c, sb: sb, log: log})
		}
	}
	return notify.NewSinks(sinks, &notify.Options{Logger: log, OnOutcome: opts.OnOutcome})
}
