package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/execution/runner"
	"github.com/airlock-dev/airlock/server"
)

// watchConfig reloads the configuration on SIGHUP, and when the config
// file or a token file changes (checked every interval). A configuration
// that does not load or apply is refused, logged and audited; the running
// one stays in force.
func watchConfig(ctx context.Context, path string, r *runner.Runner, srv *server.Server, log *slog.Logger, interval time.Duration) {
	newWatcher(path, r, srv, log).run(ctx, interval)
}

// watcher holds the fingerprint of the inputs in force. The invariant that
// makes it race-free: every fingerprint is taken no later than the files it
// describes were read, so a write that lands after a read always differs
// from the stored fingerprint and is picked up on the next check, instead of
// being absorbed into the baseline as already applied.
type watcher struct {
	path string
	r    *runner.Runner
	srv  *server.Server
	log  *slog.Logger
	last string
}

// newWatcher takes the baseline. The configuration and tokens in force were
// read before the watcher exists (serve starts it on its own goroutine after
// building the server), so a token file rewritten in between would be in
// the baseline yet never applied. Hence the config part is the bytes
// actually in force, not the file on disk, and the tokens are re-read after
// they have been fingerprinted.
func newWatcher(path string, r *runner.Runner, srv *server.Server, log *slog.Logger) *watcher {
	w := &watcher{path: path, r: r, srv: srv, log: log}
	cfg := r.Config()
	var conf content
	if path != "" {
		conf.data = cfg.Bytes()
	}
	w.last = fingerprint(path, conf, cfg)
	if err := srv.Reload(); err != nil {
		log.Error("reloading tokens failed; keeping the previous ones", "err", err)
	}
	return w
}

func (w *watcher) run(ctx context.Context, interval time.Duration) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
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
			if fingerprint(w.path, readContent(w.path), w.r.Config()) == w.last {
				continue
			}
		}
		w.last = reload(ctx, w.path, w.r, w.srv, w.log, by)
	}
}

// reload applies the configuration at path, then re-reads the tokens of
// whichever configuration is in force afterwards: a refused configuration
// must not keep a revoked token alive, and the fingerprint it returns already
// counts the token files as read. That fingerprint describes the inputs as
// they were before this reload read them (see watcher).
func reload(ctx context.Context, path string, r *runner.Runner, srv *server.Server, log *slog.Logger, by string) string {
	// Before loading, so a write racing the load differs afterwards; replaced
	// by the exact bytes parsed once the load succeeds.
	conf := readContent(path)
	refused := false
	if path != "" { // the embedded demo cannot change; tokens from env can
		cfg, err := config.Load(path)
		if err == nil {
			conf = content{data: cfg.Bytes()}
			err = r.Reload(ctx, cfg, by)
		} else {
			r.RecordReloadFailure(ctx, by, err)
		}
		if err != nil {
			refused = true
			log.Error("configuration reload refused; the previous configuration stays in force", "trigger", by, "err", err)
		}
	}
	fp := fingerprint(path, conf, r.Config())
	if err := srv.Reload(); err != nil {
		log.Error("reloading tokens failed; keeping the previous ones", "trigger", by, "err", err)
		return fp
	}
	if path != "" && !refused {
		log.Info("configuration reloaded", "trigger", by, "config", path)
	}
	return fp
}

// content is a file's bytes as read, or why it could not be read.
type content struct {
	data []byte
	err  error
}

func readContent(path string) content {
	if path == "" {
		return content{}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return content{err: fmt.Errorf("reading %s: %w", path, err)}
	}
	return content{data: b}
}

// fingerprint digests conf, the config file's content, and the content of
// every token file cfg names. Content rather than mtime and size: a
// same-size rewrite (one token for another) within one timestamp tick would
// otherwise look unchanged for good. The files are small and read once per
// interval; only the digest is kept, never the tokens.
func fingerprint(path string, conf content, cfg *config.Config) string {
	h := sha256.New()
	digest(h, path, conf)
	// In name order: map order varies between calls, and with token files in
	// two roles an unchanged set of files would fingerprint differently and
	// trigger a reload.
	for _, name := range slices.Sorted(maps.Keys(cfg.Roles)) {
		for _, t := range cfg.Roles[name].Tokens {
			if t.File != "" {
				digest(h, t.File, readContent(t.File))
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// digest writes one file into h, length-prefixed so that no two sequences
// of files hash alike; a missing or unreadable file counts as a state of
// its own, so its disappearance or return is a change too.
func digest(h hash.Hash, path string, c content) {
	state := "ok"
	switch {
	case errors.Is(c.err, os.ErrNotExist):
		state = "missing"
	case c.err != nil:
		state = "error"
	}
	fmt.Fprintf(h, "%d:%s %s %d\n", len(path), path, state, len(c.data))
	h.Write(c.data)
}
