package store

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/internal/audit/audit"
)

// Rotation (issue 11): [DB.Rotate] moves the oldest records into a sealed
// segment file (segment.go) and deletes them from the store, leaving an
// anchor — the first seq the store still holds and the hash of the record
// before it, with an HMAC under the witness key — so that the store's
// chain verifies on its own from the anchor, and segments plus store
// verify as one chain from record 1 (ReadSegments, then the anchor must
// continue the newest segment).
//
// The anchor's MAC is what keeps "records deleted from the start" from
// passing as a rotation: whoever can write the database but not read the
// witness key cannot make an anchor [CheckAnchor] accepts.

// Anchor is where the store's chain starts: First, after PrevHash. A store
// that was never rotated has the genesis anchor (1, 64 zeros, no MAC).
type Anchor struct {
	First    int64
	PrevHash string
	MAC      string
}

// Rotated reports whether records were rotated out of the store.
func (a Anchor) Rotated() bool { return a.First > 1 }

// anchorMAC is the HMAC of an anchor under the witness key.
func anchorMAC(key []byte, first int64, prev string) string {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "airlock-anchor-v1 first=%d prev=%s", first, prev)
	return hex.EncodeToString(m.Sum(nil))
}

// ErrBadAnchor: the store's anchor is not signed by the witness key (or
// the key is not the one it was signed with).
var ErrBadAnchor = errors.New("audit anchor not signed by the witness key")

// CheckAnchor checks a's MAC under key; the genesis anchor needs none.
func CheckAnchor(a Anchor, key []byte) error {
	if !a.Rotated() && a.PrevHash == genesisHash && a.MAC == "" {
		return nil
	}
	if !hmac.Equal([]byte(a.MAC), []byte(anchorMAC(key, a.First, a.PrevHash))) {
		return fmt.Errorf("store: anchor at record %d: %w", a.First, ErrBadAnchor)
	}
	return nil
}

// readAnchor reads the anchor through q (the genesis one when there is no
// row).
func readAnchor(ctx context.Context, q querier) (Anchor, error) {
	var a Anchor
	err := q.QueryRowContext(ctx, sqlReadAnchor).Scan(&a.First, &a.PrevHash, &a.MAC)
	if errors.Is(err, sql.ErrNoRows) {
		return Anchor{First: 1, PrevHash: genesisHash}, nil
	}
	return a, err
}

// Anchor returns the store's anchor.
func (db *DB) Anchor(ctx context.Context) (Anchor, error) {
	if err := db.auditReadable(ctx, "anchor"); err != nil {
		return Anchor{}, err
	}
	a, err := readAnchor(ctx, db.r)
	if err != nil {
		return Anchor{}, fmt.Errorf("store: anchor: %w", err)
	}
	return a, nil
}

// RotateOptions says what [DB.Rotate] moves and how it seals it.
type RotateOptions struct {
	// UpTo is the last seq to move; records anchor.First..UpTo go.
	UpTo int64
	// Dir receives the segment file (it must exist).
	Dir string
	// Key is the witness key: it signs the segment's checkpoint and the
	// new anchor.
	Key []byte
	// Instance names the rotating process in the checkpoint
	// (witness.NewInstance).
	Instance string
	// By names the operator in the rotation's audit record.
	By string
}

// Rotation is what [DB.Rotate] did.
type Rotation struct {
	Segment     string // path of the sealed segment
	First, Last int64  // the records it holds
	Head        string // hash of record Last
	Record      *audit.Record
}

// ErrNothingToRotate: no record at or before UpTo is still in the store.
var ErrNothingToRotate = errors.New("no records to rotate")

// Rotate moves the records from the anchor up to opts.UpTo into a sealed
// segment in opts.Dir, then, in one write transaction that first checks the
// anchor and record UpTo are as they were read, deletes them, moves the
// anchor past them and appends an audit record of the rotation. The
// segment is durable (fsynced, renamed, directory fsynced) before anything
// is deleted; a crash in between leaves a segment whose records are also
// still in the store, which the next rotation refuses to overwrite and a
// verify with --segments reports as an overlap. The caller verifies the
// chain first: Rotate re-checks each record's hash and link as it writes.
func (db *DB) Rotate(ctx context.Context, opts RotateOptions) (*Rotation, error) {
	if db.w == nil {
		return nil, fmt.Errorf("store: rotate: %w", ErrReadOnly)
	}
	if db.isClosed() {
		return nil, fmt.Errorf("store: rotate: %w", ErrClosed)
	}
	a, err := db.Anchor(ctx)
	if err != nil {
		return nil, err
	}
	head, _, err := db.Head(ctx)
	if err != nil {
		return nil, err
	}
	upTo := min(opts.UpTo, head)
	if upTo < a.First {
		return nil, fmt.Errorf("store: rotate up to %d: the store starts at %d: %w", opts.UpTo, a.First, ErrNothingToRotate)
	}
	sw, err := newSegmentWriter(opts.Dir, a.First, a.PrevHash)
	if err != nil {
		return nil, fmt.Errorf("store: rotate: %w", err)
	}
	err = db.Scan(ctx, a.First-1, func(r *audit.Record) error {
		if r.Seq > upTo {
			return errStopScan
		}
		return sw.add(r)
	})
	if err != nil && !errors.Is(err, errStopScan) {
		sw.abort()
		return nil, fmt.Errorf("store: rotate: %w", err)
	}
	if sw.next != upTo+1 {
		sw.abort()
		return nil, fmt.Errorf("store: rotate: records %d..%d are not all in the store", sw.next, upTo)
	}
	lastHash := hashText(sw.prev)
	path, err := sw.seal(opts.Dir, opts.Key, opts.Instance, time.Now())
	if err != nil {
		return nil, fmt.Errorf("store: rotate: sealing the segment: %w", err)
	}
	rec := audit.Rotation(opts.By, segmentName(a.First, upTo), a.First, upTo, lastHash)
	rec.Instance = db.opts.Instance
	if err := normalize(rec, time.Now()); err != nil {
		return nil, err
	}
	if err := db.commitRotation(ctx, a, upTo, lastHash, anchorMAC(opts.Key, upTo+1, lastHash), rec); err != nil {
		return nil, err
	}
	return &Rotation{Segment: path, First: a.First, Last: upTo, Head: lastHash, Record: rec}, nil
}

var errStopScan = errors.New("stop")

// commitRotation deletes records up to upTo and moves the anchor, in one
// write transaction that first checks nothing moved since the segment was
// written: the same anchor, and record upTo with the hash sealed.
func (db *DB) commitRotation(ctx context.Context, was Anchor, upTo int64, lastHash, mac string, rec *audit.Record) (err error) {
	var (
		last int64
		in   *interner
	)
	err = db.inTx(ctx, "rotation", txOpts{chain: true}, func(tx *sql.Tx) error {
		// PostgreSQL: the head row lock queues every append behind us.
		var seq int64
		var h string
		if err := tx.QueryRowContext(ctx, db.d.readHeadForUpdate).Scan(&seq, &h); err != nil {
			return unavailable("reading chain head", err)
		}
		now, err := readAnchor(ctx, tx)
		if err != nil {
			return unavailable("reading anchor", err)
		}
		var stored []byte
		if err := tx.QueryRowContext(ctx, sqlHashAt, upTo).Scan(&stored); err != nil || now != was || hashText(stored) != lastHash {
			return fmt.Errorf("store: rotate: the store changed while the segment was written (another rotation?); nothing deleted, remove the new segment")
		}
		if _, err := tx.ExecContext(ctx, sqlDeleteUpTo, upTo); err != nil {
			return unavailable("deleting rotated records", err)
		}
		if _, err := tx.ExecContext(ctx, sqlUpsertAnchor, upTo+1, lastHash, mac); err != nil {
			return unavailable("moving the anchor", err)
		}
		db.head.take(db.d)
		in = db.interner(sqlTx{db, tx})
		last, err = db.chainInTx(ctx, sqlTx{db, tx}, in, []*audit.Record{rec}, nil)
		return err
	})
	if err != nil {
		return err
	}
	in.commit()
	db.committed(last)
	return nil
}

// RotatedBefore is the first seq the store holds (1 unless rotated); with
// it *DB is a witness.RotatedChain.
func (db *DB) RotatedBefore(ctx context.Context) (int64, error) {
	a, err := db.Anchor(ctx)
	return a.First, err
}

// LastBefore returns the seq of the newest record stored with a time
// before t (0 if none): what `audit rotate --older-than` moves.
func (db *DB) LastBefore(ctx context.Context, t time.Time) (int64, error) {
	if db.isClosed() {
		return 0, fmt.Errorf("store: last before: %w", ErrClosed)
	}
	var seq sql.NullInt64
	if err := db.r.QueryRowContext(ctx, sqlLastBefore, t.UnixMicro()).Scan(&seq); err != nil {
		return 0, fmt.Errorf("store: last before: %w", err)
	}
	return seq.Int64, nil
}
