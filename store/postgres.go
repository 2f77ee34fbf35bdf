package store

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// Pool sizes per handle. Every instance holds up to pgWriteConns +
// pgReadConns + 1 (the kill switch listener) connections.
const (
	pgWriteConns = 8
	pgReadConns  = 8
)

// OpenPostgres opens the PostgreSQL store at dsn (a postgres:// URL; a
// password is better left to PGPASSWORD or a .pgpass file than written in
// the configuration) and applies the migrations it lacks, like [Open] does
// for a file. Several instances may open the same database: they share one
// audit chain, serialised on its head row, and one set of contexts,
// declarations, usage, keys and kill switch.
//
// Options apply as on SQLite, except MaxPageCount (ignored) and
// BusyTimeout, which becomes the connections' lock_timeout: a write that
// waits longer for another instance's lock fails with ErrUnavailable.
// Durability is the server's: a commit returns once PostgreSQL says it is
// durable (synchronous_commit, on by default).
func OpenPostgres(dsn string, opts *Options) (*DB, error) {
	return openPostgres(dsn, opts, false)
}

// OpenPostgresReadOnly opens an existing PostgreSQL store for reading
// only, as the operator CLI does for verify, tail and export: no
// migrations run, and every connection has default_transaction_read_only
// on, so nothing written through it can reach the database.
func OpenPostgresReadOnly(dsn string) (*DB, error) {
	return openPostgres(dsn, nil, true)
}

func openPostgres(dsn string, opts *Options, readOnly bool) (*DB, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	db := &DB{path: redactDSN(dsn), opts: o, d: postgresDialect}
	ok := false
	defer func() {
		if !ok {
			db.closeAll()
		}
	}()
	ctx := context.Background()
	if db.r, err = pgPool(dsn, o, true, pgReadConns); err != nil {
		return nil, err
	}
	if !readOnly {
		if db.w, err = pgPool(dsn, o, false, pgWriteConns); err != nil {
			return nil, err
		}
		if err := db.migrate(); err != nil {
			return nil, err
		}
	}
	if _, err := db.schemaVersion(ctx, db.r); err != nil {
		return nil, err
	}
	if err := db.kill.open(db.r, true, !readOnly); err != nil {
		return nil, err
	}
	if !readOnly {
		if err := db.startWriter(); err != nil {
			return nil, err
		}
	}
	ok = true
	return db, nil
}

// pgPool opens a database/sql pool on dsn through pgx. Read pools have
// default_transaction_read_only on: a bug that sent a write their way
// fails instead of writing.
func pgPool(dsn string, o Options, readOnly bool, conns int) (*sql.DB, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("store: PostgreSQL DSN: %w", err)
	}
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["lock_timeout"] = strconv.FormatInt(o.BusyTimeout.Milliseconds(), 10)
	if _, set := cfg.RuntimeParams["application_name"]; !set {
		cfg.RuntimeParams["application_name"] = "airlock"
	}
	if readOnly {
		cfg.RuntimeParams["default_transaction_read_only"] = "on"
	}
	p := stdlib.OpenDB(*cfg)
	p.SetMaxOpenConns(conns)
	p.SetMaxIdleConns(conns)
	if err := p.Ping(); err != nil {
		p.Close()
		return nil, fmt.Errorf("store: connecting to %s: %w", redactDSN(dsn), err)
	}
	return p, nil
}

// redactDSN is dsn without a password, for messages and Path.
func redactDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "postgres://(unparsable DSN)"
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.String()
}
