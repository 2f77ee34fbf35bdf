package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/edge/tracing"
	"github.com/airlock-dev/airlock/internal/execution/runner"
	"github.com/airlock-dev/airlock/internal/kit/metrics"
	"github.com/airlock-dev/airlock/server"
)

func runServe(ctx context.Context, args []string, io Streams) (err error) {
	fs := newFlags("serve", io)
	cfgPath := fs.String("config", "", "configuration file (default: the embedded demo configuration)")
	state := fs.String("state", "", "state directory (default $AIRLOCK_STATE, else $XDG_STATE_HOME/airlock)")
	addr := fs.String("http", "", "serve streamable HTTP at /mcp and SSE at /sse on this address instead of stdio")
	level := fs.String("log-level", "info", "log level: debug, info, warn, error")
	format := fs.String("log-format", "text", "log format: text or json (one object per line)")
	ctxHandle := fs.String("context", "", "stdio: run in the child context with this handle (from `airlock context create`)")
	if err := parse(fs, args); err != nil {
		return err
	}
	log, err := newLogger(io.Err, *level, *format)
	if err != nil {
		return err
	}
	defer func() { err = stopped(ctx, log, *format, err) }()
	cfg, dir, release, err := loadConfigAndState(*cfgPath, *state)
	if err != nil {
		return err
	}
	defer release() // after the runner closes: its pools live there
	var m *metrics.Metrics
	if *addr != "" { // served at /metrics on the HTTP listener only
		m = metrics.New()
	}
	// Traces (issue 12 item 3): off unless the config or OTEL_* ask; the
	// exporter flushes what is batched when serve stops.
	tr, err := tracing.New(ctx, cfg.Tracing, &tracing.Options{Getenv: os.Getenv, ReadSecret: config.TokenSource.Read, Version: server.Version})
	if err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := tr.Shutdown(sctx); err != nil {
			log.Warn("flushing traces", "err", err)
		}
	}()
	if tr != nil {
		log.Info("tracing on: a span per call over OTLP/HTTP")
	}
	r, err := runner.New(cfg, dir, &runner.Options{Logger: log, Metrics: m, Tracer: tr})
	if err != nil {
		return err
	}
	defer r.Close()
	srv, err := server.New(r, &server.Options{Logger: log, StdioContext: *ctxHandle, Metrics: m})
	if err != nil {
		return err
	}
	defer srv.Close()
	log.Info("airlock starting", "config", cfg.File(), "state", dir)
	go watchConfig(ctx, *cfgPath, r, srv, log, 2*time.Second)
	say := banner{Streams: io, log: log, json: *format == "json"}
	if *addr == "" {
		say.stdio(cfg, *cfgPath, *state, *ctxHandle)
		return srv.ServeStdio(ctx, io.In, io.Out)
	}
	return serveHTTP(ctx, *addr, srv, cfg, say)
}

// loadConfigAndState resolves the state directory, then loads the config
// (or the embedded demo).
// release is loadConfig's.
func loadConfigAndState(cfgPath, stateFlag string) (*config.Config, string, func(), error) {
	dir, err := stateDir(stateFlag)
	if err != nil {
		return nil, "", nil, err
	}
	cfg, release, err := loadConfig(cfgPath)
	return cfg, dir, release, err
}

// loadConfig loads path, or materialises the embedded demo in a fresh
// directory of this process under the system temp directory. release
// removes it; call it when the command is done with the configuration
// (issue 24 item 10: every serve, doctor and demo-loading command used to
// leave one behind). A directory of its own: Demo rewrites what it is
// given, which would pull the pools from under another process serving
// the same state directory. Nothing else needs the demo's location: the
// sandbox binds pool files as root, wherever they are (issue 24 item 11).
func loadConfig(path string) (cfg *config.Config, release func(), err error) {
	if path != "" {
		cfg, err = config.Load(path)
		return cfg, func() {}, err
	}
	dir, err := os.MkdirTemp("", "airlock-demo-")
	if err != nil {
		return nil, nil, fmt.Errorf("preparing the demo pools: %w", err)
	}
	release = func() { _ = os.RemoveAll(dir) }
	if cfg, err = config.Demo(dir); err != nil {
		release()
		return nil, nil, err
	}
	return cfg, release, nil
}

func serveHTTP(ctx context.Context, addr string, srv *server.Server, cfg *config.Config, say banner) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	defer ln.Close()
	say.http(cfg, ln.Addr())
	return srv.ServeHTTP(ctx, ln)
}

// stopped is how serve ends: Ctrl-C (or SIGTERM) is a clean stop, not
// "airlock: context canceled"; under --log-format json an error is a JSON
// record too, which main then does not print again as text.
func stopped(ctx context.Context, log *slog.Logger, format string, err error) error {
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		err = nil
	}
	if err == nil {
		log.Info("airlock stopped")
		return nil
	}
	if format != "json" {
		return err
	}
	log.Error("airlock stopped", "err", err)
	return reported{err}
}

// reported is an error already written to the log (see Reported).
type reported struct{ error }

func (r reported) Unwrap() error { return r.error }

// Reported says err was already written to the log as JSON, so main must
// not print it as a plain line.
func Reported(err error) bool {
	var r reported
	return errors.As(err, &r)
}
