package store

import (
	"bytes"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"runtime"
	"sync"
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
	strs    map[int64]string
	workers int

	mu  sync.Mutex
	bad *verdict
}

// verdict is a problem at stream position pos (rank orders the checks
// within a row).
type verdict struct {
	pos     int64
	rank    int
	seq     int64
	problem string
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
	base int64 // stream position of rows[0]
	rows []rawRow
	want []int64 // the seq each row should have had
	n    int
}

func newVerifier(strs map[int64]string) *verifier {
	return &verifier{strs: strs, workers: max(1, runtime.GOMAXPROCS(0))}
}

// report keeps the earliest verdict.
func (v *verifier) report(d verdict) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.bad == nil || d.pos < v.bad.pos || (d.pos == v.bad.pos && d.rank < v.bad.rank) {
		v.bad = &d
	}
}

func (v *verifier) first() *verdict {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.bad
}

// run reads rows, checking them from wantSeq on with prev as the hash
// before the first; it returns how many rows there were and the last
// row's stored hash.
func (v *verifier) run(rows *sql.Rows, wantSeq int64, prev []byte) (n int64, last []byte, err error) {
	free := make(chan *rowBatch, 2*v.workers+2)
	for range cap(free) {
		free <- &rowBatch{rows: make([]rawRow, verifyBatch), want: make([]int64, verifyBatch)}
	}
	work := make(chan *rowBatch, cap(free))
	var wg sync.WaitGroup
	for range v.workers {
		wg.Go(func() {
			var rec Record
			var buf []byte
			for b := range work {
				buf = v.hashBatch(b, &rec, buf)
				free <- b
			}
		})
	}
	defer func() {
		close(work)
		wg.Wait()
	}()

	prev = bytes.Clone(prev)
	stopped := false // a structural problem was found: only count now
	b := <-free
	b.base, b.n = 0, 0
	for rows.Next() {
		if stopped {
			n++
			continue
		}
		r := &b.rows[b.n]
		if err := scanRaw(rows, r); err != nil {
			v.report(verdict{pos: n, rank: rankUnreadable, seq: wantSeq, problem: fmt.Sprintf("record unreadable: %v", err)})
			stopped = true
			n++
			continue
		}
		b.want[b.n] = wantSeq
		switch {
		case r.seq < wantSeq:
			v.report(verdict{pos: n, rank: rankSeq, seq: r.seq, problem: fmt.Sprintf("seq %d out of order after %d (inserted or duplicated record)", r.seq, wantSeq-1)})
			stopped = true
		case r.seq > wantSeq:
			v.report(verdict{pos: n, rank: rankSeq, seq: wantSeq, problem: fmt.Sprintf("seq %d missing (next record is %d)", wantSeq, r.seq)})
			stopped = true
		case !bytes.Equal(r.prevHash, prev):
			v.report(verdict{pos: n, rank: rankLink, seq: r.seq, problem: fmt.Sprintf("prev_hash does not match the hash of record %d (record removed, inserted or moved)", r.seq-1)})
			stopped = true
		}
		prev = append(prev[:0], r.hash...)
		wantSeq++
		n++
		b.n++
		if b.n == verifyBatch {
			work <- b
			b = <-free
			b.base, b.n = n, 0
		}
	}
	if err := rows.Err(); err != nil {
		return 0, nil, err
	}
	if b.n > 0 {
		work <- b
	}
	return n, prev, nil
}

// hashBatch decodes and hashes each row of b, reporting the first whose
// hash is not its contents'.
func (v *verifier) hashBatch(b *rowBatch, rec *Record, buf []byte) []byte {
	str := func(id int64) (string, bool) { s, ok := v.strs[id]; return s, ok }
	for i := range b.n {
		r := &b.rows[i]
		pos := b.base + int64(i)
		if err := r.decode(rec, str); err != nil {
			v.report(verdict{pos: pos, rank: rankUnreadable, seq: b.want[i], problem: fmt.Sprintf("record unreadable: %v", err)})
			return buf
		}
		// The hash covers prev_hash as its 64 hex digits (as stored text
		// if it was not a hash), then the canonical encoding.
		if len(r.prevHash) == 32 {
			buf = hex.AppendEncode(buf[:0], r.prevHash)
		} else {
			buf = append(buf[:0], r.prevHash...)
		}
		buf = rec.appendCanonical(buf)
		if sum := sha256.Sum256(buf); !bytes.Equal(sum[:], r.hash) {
			v.report(verdict{pos: pos, rank: rankHash, seq: r.seq, problem: "hash does not match the record's contents (record edited)"})
			return buf
		}
	}
	return buf
}
