package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/airlock-dev/airlock/config"
	"github.com/airlock-dev/airlock/runner"
	"github.com/airlock-dev/airlock/server"
)

// watchConfig reloads the configuration on SIGHUP, and when the config
// file or a token file changes (checked every interval). A configuration
// that does not load or apply is refused, logged and audited; the running
// one stays in force.
func watchConfig(ctx context.Context, path string, r *runner.Runner, srv *server.Server, log *slog.Logger, interval time.Duration) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	last := fingerprint(path, r.Config())
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		by := "file-change"
		select {
		case <-ctx.Done():
			return
		case <-hup:
			by = "sighup"
		case <-tick.C:
			if fp := fingerprint(path, r.Config()); fp == last {
				continue
			}
		}
		last = fingerprint(path, r.Config())
		reload(ctx, path, r, srv, log, by)
		last = fingerprint(path, r.Config())
	}
}

func reload(ctx context.Context, path string, r *runner.Runner, srv *server.Server, log *slog.Logger, by string) {
	if path == "" { // the embedded demo cannot change; tokens from env can
		if err := srv.ReloadTokens(); err != nil {
			log.Error("reloading tokens failed; keeping the previous ones", "err", err)
		}
		return
	}
	cfg, err := config.Load(path)
	if err == nil {
		err = r.Reload(ctx, cfg, by)
	} else {
		r.RecordReloadFailure(ctx, by, err)
	}
	if err == nil {
		err = srv.ReloadTokens()
	}
	if err != nil {
		log.Error("configuration reload refused; the previous configuration stays in force", "trigger", by, "err", err)
		return
	}
	log.Info("configuration reloaded", "trigger", by, "config", path)
}

// fingerprint summarises the modification times of the config file and of
// every token file it names, so a change to either triggers a reload.
func fingerprint(path string, cfg *config.Config) string {
	fp := mtime(path)
	for _, role := range cfg.Roles {
		for _, t := range role.Tokens {
			if t.File != "" {
				fp += "|" + mtime(t.File)
			}
		}
	}
	return fp
}

func mtime(path string) string {
	if path == "" {
		return ""
	}
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return "missing"
	}
	if err != nil {
		return "error"
	}
	return fmt.Sprintf("%d/%d", fi.ModTime().UnixNano(), fi.Size())
}
