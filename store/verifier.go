package store

import (
	"bytes"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/airlock-dev/airlock/internal/audit/audit"
)

// verifier checks a stream of audit rows (issue 11: a full verify of a
// million records in under 2 s). A record's hash depends only on its own
// row — its fields and its stored prev_hash — so the hashing, the costly
// part, runs in parallel workers over batches of rows, while one goroutine
// reads the rows and makes the cheap sequential checks: seqs contiguous and
// prev_hash[i] == hash[i-1]. The verdict is the same as checking record by
// record in seq order (TestVerifyParallelMatchesSerial): the first bad row
// in stream order wins, and within a row the checks rank as the serial
// loop ran them — unreadable, seq, link, hash.
type verifier struct {
	strs    map[int64]string // when the ids are sparse
	dense   []string         // when they are not: strings by id
	has     []bool
	workers int
	packed  bool // rows come as sqlitePackedRow

	free, work chan *rowBatch
	wg         sync.WaitGroup

	mu  sync.Mutex
	bad *verdict
}

// verdict is a problem at stream position pos of chunk (rank orders the
// checks within a row).
type verdict struct {
	chunk   int
	pos     int64
	rank    int
	seq     int64
	problem string
}

func (d *verdict) before(e *verdict) bool {
	if d.chunk != e.chunk {
		return d.chunk < e.chunk
	}
	if d.pos != e.pos {
		return d.pos < e.pos
	}
	return d.rank < e.rank
}

const (
	rankUnreadable = iota
	rankSeq
	rankLink
	rankHash
)

// verifyBatch is how many rows one worker task holds.
const verifyBatch = 1024

type rowBatch struct {
	chunk int
	base  int64 // stream position of rows[0]
	rows  []rawRow
	want  []int64 // the seq each row should have had
	n     int
}

func newVerifier(strs map[int64]string, packed bool) *verifier {
	v := &verifier{packed: packed, workers: max(1, runtime.GOMAXPROCS(0))}
	v.setStrings(strs)
	return v
}

// setStrings indexes the strings by id: a slice when the ids are dense,
// as SQLite assigns them, which a million records' 17 lookups each notice.
func (v *verifier) setStrings(m map[int64]string) {
	var top int64
	for id := range m {
		top = max(top, id)
	}
	if top < int64(4*len(m)+1024) {
		v.dense = make([]string, top+1)
		v.has = make([]bool, top+1)
		for id, s := range m {
			if id >= 0 {
				v.dense[id], v.has[id] = s, true
			}
		}
		return
	}
	v.strs = m
}

func (v *verifier) str(id int64) (string, bool) {
	if v.dense != nil {
		if id < 0 || id >= int64(len(v.dense)) {
			return "", false
		}
		return v.dense[id], v.has[id]
	}
	s, ok := v.strs[id]
	return s, ok
}

// scan reads one row into r.
func (v *verifier) scan(rows *sql.Rows, r *rawRow) error {
	if !v.packed {
		return scanRaw(rows, r)
	}
	return scanPacked(rows, r)
}

// errPacked: a packed row whose parts do not add up (a hash not 32 bytes,
// fields that do not decode): only an edited row.
var errPacked = errors.New("row does not split into its columns")

// errHashSize: a stored hash or prev_hash that is not 32 bytes (a hash
// edited by hand, or a version-4 row's that was not 64 hex digits).
var errHashSize = errors.New("stored hash or prev_hash is not 32 bytes")

// scanPacked reads one row selected as sqlitePackedRow and splits it back
// into its columns; r's slices share one buffer.
func scanPacked(rows *sql.Rows, r *rawRow) error {
	var alen int64
	var body sql.RawBytes
	if err := rows.Scan(&r.seq, &r.at, &alen, &body); err != nil {
		return err
	}
	r.buf = append(r.buf[:0], body...)
	b := r.buf
	if alen == -1 {
		return errHashSize
	}
	if alen < 0 || len(b) < 64 {
		return errPacked
	}
	r.prevHash, r.hash, b = b[:32:32], b[32:64:64], b[64:]
	n := fieldsLen(b)
	if n < 0 || int64(len(b)-n) < alen {
		return errPacked
	}
	r.fields, b = b[:n:n], b[n:]
	r.args, r.extra = b[:alen:alen], b[alen:]
	return nil
}

// report keeps the earliest verdict.
func (v *verifier) report(d verdict) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.bad == nil || d.before(v.bad) {
		v.bad = &d
	}
}

func (v *verifier) first() *verdict {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.bad
}

// start starts the hashing workers; stop waits for them.
func (v *verifier) start() {
	v.free = make(chan *rowBatch, 3*v.workers+4)
	for range cap(v.free) {
		v.free <- &rowBatch{rows: make([]rawRow, verifyBatch), want: make([]int64, verifyBatch)}
	}
	v.work = make(chan *rowBatch, cap(v.free))
	for range v.workers {
		v.wg.Go(func() {
			var rec audit.Record
			var buf []byte
			for b := range v.work {
				buf = v.hashBatch(b, &rec, buf)
				v.free <- b
			}
		})
	}
}

func (v *verifier) stop() {
	close(v.work)
	v.wg.Wait()
}

// chunkResult is what one reader saw.
type chunkResult struct {
	n         int64  // rows read
	firstSeq  int64  // the first row's seq
	lastSeq   int64  // the seq the chain had reached (wantSeq - 1)
	last      []byte // the last row's stored hash
	firstPrev []byte // the first row's prev_hash, when its link was left to the caller
	err       error
}

// read reads rows as chunk, checking them from wantSeq on with prev as the
// hash before the first — or, when prev is nil, leaving the first row's
// link to the caller (firstPrev), who knows it only once the chunk before
// is read.
func (v *verifier) read(rows *sql.Rows, chunk int, wantSeq int64, prev []byte) (res chunkResult) {
	deferLink := prev == nil
	prev = bytes.Clone(prev)
	stopped := false // a structural problem was found: only count now
	var n int64
	b := <-v.free
	b.chunk, b.base, b.n = chunk, 0, 0
	for rows.Next() {
		if stopped {
			n++
			continue
		}
		r := &b.rows[b.n]
		err := v.scan(rows, r)
		if err == nil && (len(r.prevHash) != 32 || len(r.hash) != 32) {
			err = errHashSize
		}
		if err != nil {
			v.report(verdict{chunk: chunk, pos: n, rank: rankUnreadable, seq: wantSeq, problem: fmt.Sprintf("record unreadable: %v", err)})
			stopped = true
			n++
			continue
		}
		b.want[b.n] = wantSeq
		if n == 0 {
			res.firstSeq = r.seq
		}
		switch {
		case r.seq < wantSeq:
			v.report(verdict{chunk: chunk, pos: n, rank: rankSeq, seq: r.seq, problem: fmt.Sprintf("seq %d out of order after %d (inserted or duplicated record)", r.seq, wantSeq-1)})
			stopped = true
		case r.seq > wantSeq:
			v.report(verdict{chunk: chunk, pos: n, rank: rankSeq, seq: wantSeq, problem: fmt.Sprintf("seq %d missing (next record is %d)", wantSeq, r.seq)})
			stopped = true
		case n == 0 && deferLink:
			res.firstPrev = bytes.Clone(r.prevHash)
		case !bytes.Equal(r.prevHash, prev):
			v.report(verdict{chunk: chunk, pos: n, rank: rankLink, seq: r.seq, problem: linkProblem(r.seq)})
			stopped = true
		}
		prev = append(prev[:0], r.hash...)
		wantSeq++
		n++
		b.n++
		if b.n == verifyBatch {
			v.work <- b
			b = <-v.free
			b.chunk, b.base, b.n = chunk, n, 0
		}
	}
	if b.n > 0 {
		v.work <- b
	} else {
		v.free <- b
	}
	res.n, res.lastSeq, res.last, res.err = n, wantSeq-1, prev, rows.Err()
	return res
}

func linkProblem(seq int64) string {
	return fmt.Sprintf("prev_hash does not match the hash of record %d (record removed, inserted or moved)", seq-1)
}

// hashBatch decodes and hashes each row of b, reporting the first whose
// hash is not its contents'.
func (v *verifier) hashBatch(b *rowBatch, rec *audit.Record, buf []byte) []byte {
	str := v.str
	for i := range b.n {
		r := &b.rows[i]
		pos := b.base + int64(i)
		if err := r.decode(rec, str); err != nil {
			v.report(verdict{chunk: b.chunk, pos: pos, rank: rankUnreadable, seq: b.want[i], problem: fmt.Sprintf("record unreadable: %v", err)})
			return buf
		}
		// The hash covers prev_hash as its 64 hex digits (as stored text
		// if it was not a hash), then the canonical encoding.
		if len(r.prevHash) == 32 {
			buf = hex.AppendEncode(buf[:0], r.prevHash)
		} else {
			buf = append(buf[:0], r.prevHash...)
		}
		buf = rec.AppendCanonical(buf)
		if sum := sha256.Sum256(buf); !bytes.Equal(sum[:], r.hash) {
			v.report(verdict{chunk: b.chunk, pos: pos, rank: rankHash, seq: r.seq, problem: "hash does not match the record's contents (record edited)"})
			return buf
		}
	}
	return buf
}
