package state

import (
	"time"

	"github.com/airlock-dev/airlock/internal/execution/upstream"
	"github.com/airlock-dev/airlock/store"
)

// Lent is a running engine's hold on its state directory, lent to the
// operator's API for the orders that arrive through the server (the web
// console): its own store connection, clock and upstream connector, so an
// approval, a phase change or the kill switch means one thing whichever way
// it comes, and a console refresh lists a stdio upstream exactly as the
// runner's calls do (its sandbox, egress resolver and log).
//
// Its contents are read with [Borrow], a function of this package rather
// than a method, so that a package holding a *Lent (the server, which
// passes it on) cannot reach the store through it without importing this
// package, which only the runner and the operator's API may do.
type Lent struct {
	db        *store.DB
	dir       string
	now       func() time.Time
	upstreams *upstream.Connector
}

// Lend is the runner's side: what it lends.
func Lend(db *store.DB, dir string, now func() time.Time, upstreams *upstream.Connector) *Lent {
	return &Lent{db: db, dir: dir, now: now, upstreams: upstreams}
}

// Borrow is the operator's side: what l holds. The store stays the
// engine's: the borrower must not close it.
func Borrow(l *Lent) (db *store.DB, dir string, now func() time.Time, upstreams *upstream.Connector) {
	return l.db, l.dir, l.now, l.upstreams
}
