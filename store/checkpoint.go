package store

import (
	"context"
	"database/sql"
	"os"
	"sync"
	"time"
)

// What a governed call costs on disk (issue 11): its audit record's commit,
// shared by the group, is the one fdatasync on the call's path. Two things
// used to add to it and are moved off here:
//
//   - SQLite's automatic WAL checkpoint runs on the committing connection
//     whenever the WAL passes 1000 pages: every few hundred calls one
//     commit also copied the WAL into the database and fsynced it. The
//     writer runs with wal_autocheckpoint=0 and a checkpointer goroutine,
//     on a connection of its own, checkpoints (PASSIVE: it never waits for
//     the writer nor makes it wait) after every checkpointRecords records
//     and every checkpointEvery. Once per walRestartBytes of WAL it runs a
//     RESTART pass, which holds new commits while it copies the frames
//     written since the PASSIVE pass (a few) — so that the WAL starts over
//     instead of growing; that short wait is all that is left of the
//     checkpoint on the commit path.
//   - Per-call state writes (limit usage, session touches) are written
//     without an fsync of their own ([DB.beginDeferred]) and made durable
//     by the next audit commit: the WAL (and PostgreSQL's) is one ordered
//     log, so an fsync of a later commit flushes every earlier one. A call
//     is only answered after its audit record committed, which is after
//     its usage update in the log, so an answered call's usage is on disk
//     whenever its record is (TestDurableAcrossSIGKILL).

const (
	// checkpointRecords is how many committed records wake the
	// checkpointer early: about 1000 WAL pages, SQLite's own default.
	checkpointRecords = 256
	// checkpointEvery bounds how long a quiet store leaves its WAL
	// un-checkpointed.
	checkpointEvery = 2 * time.Second
	// walTruncateBytes bounds the WAL file: a PASSIVE checkpoint that
	// readers held back leaves it growing, so past this size the
	// checkpointer runs one TRUNCATE checkpoint, which waits (up to the
	// busy timeout) for readers and writers and resets the file. It is the
	// only case where the checkpoint can delay a commit.
	walTruncateBytes = 64 << 20
	// walRestartBytes is the WAL size past which the checkpointer
	// restarts the WAL: about SQLite's own 1000 pages.
	walRestartBytes = 4 << 20
	// checkpointBusy is how long a RESTART or TRUNCATE waits for the
	// writer or readers: new commits wait behind it meanwhile.
	checkpointBusy = 50 * time.Millisecond
)

// checkpointer runs SQLite WAL checkpoints off the commit path.
type checkpointer struct {
	conn    *sql.DB
	wal     string
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	pending int64 // records committed since the last checkpoint
	runs    int64 // checkpoints run (tests)
}

// startCheckpointer opens a connection for checkpoints and starts the
// goroutine. The writer's connection has wal_autocheckpoint=0.
func (db *DB) startCheckpointer() error {
	p, err := openPool(db.path, "rw", checkpointBusy, "", nil)
	if err != nil {
		return err
	}
	p.SetMaxOpenConns(1)
	c := &checkpointer{conn: p, wal: db.path + "-wal", kick: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	db.ckpt = c
	go c.loop()
	return nil
}

// committed counts n records onto the WAL and wakes the checkpointer once
// enough have gathered. It never blocks the writer.
func (c *checkpointer) committed(n int) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.pending += int64(n)
	wake := c.pending >= checkpointRecords
	c.mu.Unlock()
	if wake {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
}

func (c *checkpointer) loop() {
	defer close(c.done)
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-c.kick:
		case <-t.C:
		}
		c.mu.Lock()
		idle := c.pending == 0
		c.pending = 0
		c.mu.Unlock()
		if idle {
			continue
		}
		c.checkpoint("PASSIVE")
		// SQLite starts the WAL over (writes from its beginning again
		// instead of growing the file) only when a write transaction
		// begins after a checkpoint that copied every frame. Under a
		// steady stream of commits a PASSIVE pass always ends a few
		// frames short, and a growing WAL makes every commit dearer
		// (extending writes, a larger index): past walRestartBytes a
		// RESTART pass copies those last frames, holding new commits
		// for that long, and lets the next commit start the WAL over.
		// Its short busy timeout keeps a long reader (a verify) from
		// holding commits: it gives up instead, and the WAL grows until
		// the reader is done (TRUNCATE past walTruncateBytes).
		if st, err := os.Stat(c.wal); err == nil {
			switch {
			case st.Size() > walTruncateBytes:
				c.checkpoint("TRUNCATE")
			case st.Size() > walRestartBytes:
				c.checkpoint("RESTART")
			}
		}
	}
}

// checkpoint runs one checkpoint and reports whether it copied every
// frame of the WAL. A failure is not the caller's problem:
// the WAL keeps every committed record whether or not it was copied into
// the database, and the next round tries again.
func (c *checkpointer) checkpoint(mode string) (complete bool) {
	var busy, log, done int64
	err := c.conn.QueryRow(`PRAGMA wal_checkpoint(`+mode+`)`).Scan(&busy, &log, &done)
	c.mu.Lock()
	c.runs++
	c.mu.Unlock()
	return err == nil && busy == 0 && log == done
}

func (c *checkpointer) close() error {
	if c == nil {
		return nil
	}
	close(c.stop)
	<-c.done
	return c.conn.Close()
}

// execDeferred runs one writing statement in a deferred-durability
// transaction (see beginDeferred) and returns how many rows it changed.
func (db *DB) execDeferred(ctx context.Context, what, query string, args ...any) (n int64, err error) {
	err = db.inTx(ctx, what, txOpts{deferred: true}, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, query, args...)
		if err == nil {
			n, err = res.RowsAffected()
		}
		if err != nil {
			return writeError(ctx, what, err)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}
