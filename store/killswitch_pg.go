package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgKillMaxAge bounds how long a cached kill switch state is trusted even
// with the listener up. NOTIFY is the fast path (an instance sees a trip
// made on another one within milliseconds: TestPostgresKillSwitchAcrossInstances);
// the age bound covers a notification that never comes — the trigger
// disabled by someone with database access, a listener stuck on a dead
// TCP connection — at the cost of one read per second per instance.
const pgKillMaxAge = time.Second

// pgListenerName is the listener connection's application_name, so an
// operator (and a test) can tell it in pg_stat_activity.
const pgListenerName = "airlock-kill-listener"

// pgKillWatch is PostgreSQL's kill switch cache. A dedicated connection
// LISTENs on the channel the settings trigger NOTIFYs (migration 4); every
// notification, and every loss of that connection, invalidates the cache.
// While the listener is down, every check reads the row: fail toward
// fresh, never toward stale.
type pgKillWatch struct {
	r *sql.DB

	mu        sync.Mutex
	valid     bool
	on        bool
	readAt    time.Time
	gen       uint64 // bumped by each invalidation
	listening bool
	reads     int64 // setting reads, for tests

	cancel context.CancelFunc
	done   chan struct{}
	// notices is signalled (never blocking) on every invalidation, so a
	// watcher that keeps the switch in memory re-reads at once instead of
	// at its next poll (DB.KillSwitchNotices).
	notices chan struct{}
}

// startPgKillWatch connects the listener (so a store that cannot listen
// fails to open, loudly) and starts its goroutine.
func startPgKillWatch(dsn string, r *sql.DB) (*pgKillWatch, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("store: PostgreSQL DSN: %w", err)
	}
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["application_name"] = pgListenerName
	ctx, cancel := context.WithCancel(context.Background())
	w := &pgKillWatch{r: r, cancel: cancel, done: make(chan struct{}), notices: make(chan struct{}, 1)}
	conn, err := listen(ctx, cfg)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("store: kill switch listener: %w", err)
	}
	w.setListening(true)
	go w.run(ctx, cfg, conn)
	return w, nil
}

func listen(ctx context.Context, cfg *pgx.ConnConfig) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(cctx, "LISTEN "+pgKillChannel); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	return conn, nil
}

// run waits for notifications on conn, reconnecting with a capped backoff
// when it breaks, until close.
func (w *pgKillWatch) run(ctx context.Context, cfg *pgx.ConnConfig, conn *pgx.Conn) {
	defer close(w.done)
	backoff := 50 * time.Millisecond
	for {
		for conn != nil {
			if _, err := conn.WaitForNotification(ctx); err != nil {
				w.setListening(false)
				conn.Close(context.Background())
				conn = nil
				break
			}
			w.invalidate()
		}
		if ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		var err error
		if conn, err = listen(ctx, cfg); err != nil {
			conn = nil
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 50 * time.Millisecond
		// Listening again: anything missed while down is re-read.
		w.setListening(true)
	}
}

func (w *pgKillWatch) invalidate() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.valid = false
	w.gen++
	w.notify()
}

func (w *pgKillWatch) setListening(on bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.listening = on
	w.valid = false
	w.gen++
	w.notify()
}

func (w *pgKillWatch) notify() {
	select {
	case w.notices <- struct{}{}:
	default:
	}
}

// engaged answers from the cache while it is valid, the listener is up and
// the value is younger than pgKillMaxAge; otherwise it reads the row. On
// any error it reports engaged (fail closed).
func (w *pgKillWatch) engaged(ctx context.Context) (bool, error) {
	w.mu.Lock()
	if w.valid && w.listening && time.Since(w.readAt) < pgKillMaxAge {
		on := w.on
		w.mu.Unlock()
		return on, nil
	}
	gen := w.gen
	w.mu.Unlock()

	at := time.Now()
	on, err := readKillSwitch(ctx, w.r)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reads++
	if err != nil {
		w.valid = false
		return true, err
	}
	// A notification that arrived during the read may be about a change
	// the read missed: cache only if none did.
	if w.gen == gen {
		w.valid, w.on, w.readAt = true, on, at
	}
	return on, nil
}

func (w *pgKillWatch) close() error {
	if w == nil || w.cancel == nil {
		return nil
	}
	w.cancel()
	<-w.done
	return nil
}
