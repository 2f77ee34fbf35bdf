package store

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/audit/witness"
	"github.com/airlock-dev/airlock/internal/kit/atomicfile"
)

// A segment is a sealed file of audit records rotated out of the store
// (issue 11: retention that keeps the chain verifiable). Its layout, all
// integers big-endian:
//
//	magic      "airlock-audit-segment-v1\n"
//	first      8 bytes: the seq of its first record
//	last       8 bytes: the seq of its last record
//	prev       32 bytes: the hash of record first-1 (zeros for seq 1)
//	records    last-first+1 times: a uvarint length, the record's
//	           canonical encoding (audit.Record.Canonical: it carries the seq),
//	           its 32-byte hash
//	head       32 bytes: the hash of record last
//	checkpoint a witness line (witness.Checkpoint, seq last, head) signed
//	           with the witness key, newline included; nothing after it
//
// Each record's hash is recomputed from its bytes and the hash before it,
// so an edited, removed, inserted or reordered record breaks the segment;
// the signed checkpoint binds first..last and the head to the witness key,
// which is not in the database. Segments chain to one another (prev = the
// previous segment's head) and the store's anchor chains to the newest, so
// a segment removed from the middle, or the newest one, shows as a gap.
const segmentMagic = "airlock-audit-segment-v1\n"

// SegmentSuffix ends every segment file's name.
const SegmentSuffix = ".auditseg"

// maxSegmentRecord bounds one record's encoding in a segment (a record's
// fields are bounded by what the server accepts; this bounds a parser fed
// a corrupt length).
const maxSegmentRecord = 64 << 20

// ErrSegment marks every problem found in a segment or between segments:
// test with errors.Is; a *SegmentError says where.
var ErrSegment = errors.New("audit segment broken")

// SegmentError locates a problem in a segment file.
type SegmentError struct {
	File    string // base name
	Seq     int64  // the first record concerned, 0 if none
	Problem string
}

func (e *SegmentError) Error() string {
	if e.Seq != 0 {
		return fmt.Sprintf("%s: record %d: %s", e.File, e.Seq, e.Problem)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Problem)
}

func (e *SegmentError) Unwrap() error { return ErrSegment }

// Segment is what a verified segment vouches for.
type Segment struct {
	File        string
	First, Last int64
	Prev, Head  string   // hex
	Hashes      [][]byte // of records First..Last
	Sealed      time.Time
}

// HashAt returns the hash of seq if the segment holds it.
func (s *Segment) HashAt(seq int64) (string, bool) {
	if seq < s.First || seq > s.Last {
		return "", false
	}
	return hex.EncodeToString(s.Hashes[seq-s.First]), true
}

// segmentName is the file name of the segment holding first..last: fixed
// width, so names sort in chain order.
func segmentName(first, last int64) string {
	return fmt.Sprintf("audit-%020d-%020d%s", first, last, SegmentSuffix)
}

// segmentWriter streams records into a new segment file.
type segmentWriter struct {
	f           *os.File
	w           *bufio.Writer
	first, next int64
	prev        []byte
	buf         []byte
}

func newSegmentWriter(dir string, first int64, prevHex string) (*segmentWriter, error) {
	f, err := os.CreateTemp(dir, ".segment-*")
	if err != nil {
		return nil, err
	}
	s := &segmentWriter{f: f, w: bufio.NewWriterSize(f, 1<<20), first: first, next: first, prev: hashBytes(prevHex)}
	if len(s.prev) != 32 {
		s.abort()
		return nil, fmt.Errorf("store: segment: previous hash %q is not a hash", prevHex)
	}
	return s, nil
}

// add appends r, which must be the next record and chain to the last.
func (s *segmentWriter) add(r *audit.Record) error {
	if r.Seq != s.next {
		return fmt.Errorf("store: segment: record %d where %d was due", r.Seq, s.next)
	}
	if s.next == s.first { // header, once the first record is known to exist
		s.w.WriteString(segmentMagic)
		s.w.Write(binary.BigEndian.AppendUint64(nil, uint64(s.first)))
		s.w.Write(make([]byte, 8)) // last: patched in seal
		s.w.Write(s.prev)
	}
	if hashText(s.prev) != r.PrevHash {
		return fmt.Errorf("store: segment: record %d does not chain to %d", r.Seq, r.Seq-1)
	}
	s.buf = r.AppendCanonical(s.buf[:0])
	h := hashBytes(r.Hash)
	if sum := sha256.Sum256(append([]byte(r.PrevHash), s.buf...)); !bytes.Equal(sum[:], h) {
		return fmt.Errorf("store: segment: record %d does not match its hash", r.Seq)
	}
	s.w.Write(binary.AppendUvarint(nil, uint64(len(s.buf))))
	s.w.Write(s.buf)
	s.w.Write(h)
	s.prev = h
	s.next++
	return nil
}

// seal writes the head and the signed checkpoint, makes the file durable
// under its final name in dir and returns that name.
func (s *segmentWriter) seal(dir string, key []byte, instance string, now time.Time) (string, error) {
	last := s.next - 1
	if last < s.first {
		s.abort()
		return "", errors.New("store: segment: no records")
	}
	s.w.Write(s.prev)
	line, err := witness.Checkpoint{Seq: last, Head: hashText(s.prev), Time: now.UTC(), Instance: instance}.Marshal(key)
	if err != nil {
		s.abort()
		return "", err
	}
	s.w.Write(line)
	if err := s.w.Flush(); err != nil {
		s.abort()
		return "", err
	}
	if _, err := s.f.WriteAt(binary.BigEndian.AppendUint64(nil, uint64(last)), int64(len(segmentMagic)+8)); err != nil {
		s.abort()
		return "", err
	}
	if err := s.f.Chmod(0o600); err != nil {
		s.abort()
		return "", err
	}
	if err := s.f.Sync(); err != nil {
		s.abort()
		return "", err
	}
	if err := s.f.Close(); err != nil {
		os.Remove(s.f.Name())
		return "", err
	}
	name := filepath.Join(dir, segmentName(s.first, last))
	if _, err := os.Lstat(name); err == nil {
		os.Remove(s.f.Name())
		return "", fmt.Errorf("store: segment %s already exists", name)
	}
	if err := os.Rename(s.f.Name(), name); err != nil {
		os.Remove(s.f.Name())
		return "", err
	}
	return name, atomicfile.SyncDir(dir)
}

func (s *segmentWriter) abort() {
	s.f.Close()
	os.Remove(s.f.Name())
}

// ParseSegment checks a segment's bytes: its framing, every record's seq
// and hash against the one before, the head, and the checkpoint's
// signature under key and its agreement with last and head. name is used
// in errors only.
func ParseSegment(name string, data, key []byte) (*Segment, error) {
	bad := func(seq int64, format string, a ...any) error {
		return &SegmentError{File: name, Seq: seq, Problem: fmt.Sprintf(format, a...)}
	}
	if !bytes.HasPrefix(data, []byte(segmentMagic)) {
		return nil, bad(0, "not an audit segment")
	}
	b := data[len(segmentMagic):]
	if len(b) < 48 {
		return nil, bad(0, "truncated header")
	}
	first := int64(binary.BigEndian.Uint64(b))
	last := int64(binary.BigEndian.Uint64(b[8:]))
	prev := b[16:48:48]
	b = b[48:]
	if first < 1 || last < first || last-first >= int64(len(b)/33) {
		return nil, bad(0, "header names records %d..%d, which the file cannot hold", first, last)
	}
	seg := &Segment{File: name, First: first, Last: last, Prev: hex.EncodeToString(prev),
		Hashes: make([][]byte, 0, last-first+1)}
	var buf []byte
	for seq := first; seq <= last; seq++ {
		n, k := binary.Uvarint(b)
		// One encoding per segment: a length in more bytes than it needs
		// is malformed, not another spelling of the same file.
		if k <= 0 || k != uvarintLen(n) || n > maxSegmentRecord || uint64(len(b)-k) < n+32 {
			return nil, bad(seq, "truncated or malformed record")
		}
		enc, h := b[k:k+int(n)], b[k+int(n):k+int(n)+32:k+int(n)+32]
		if got, ok := audit.CanonicalSeq(enc); !ok || got != seq {
			return nil, bad(seq, "record out of place (it carries seq %d)", got)
		}
		buf = hex.AppendEncode(buf[:0], prev)
		buf = append(buf, enc...)
		if sum := sha256.Sum256(buf); !bytes.Equal(sum[:], h) {
			return nil, bad(seq, "hash does not match the record's contents or the record before (edited, removed or moved)")
		}
		seg.Hashes = append(seg.Hashes, h)
		prev, b = h, b[k+int(n)+32:]
	}
	if len(b) < 32 || !bytes.Equal(b[:32], prev) {
		return nil, bad(last, "head hash does not match the last record")
	}
	seg.Head = hex.EncodeToString(prev)
	line, rest, ok := bytes.Cut(b[32:], []byte("\n"))
	if !ok || len(rest) != 0 {
		return nil, bad(0, "no sealing checkpoint at the end, or bytes after it")
	}
	cp, err := witness.ParseLine(line, key)
	if err != nil {
		return nil, bad(0, "sealing checkpoint: %v", err)
	}
	if cp.Seq != last || cp.Head != seg.Head {
		return nil, bad(0, "sealing checkpoint names record %d, the segment ends at %d", cp.Seq, last)
	}
	seg.Sealed = cp.Time
	return seg, nil
}

// ReadSegments reads and checks every segment file in dir and that they
// form one chain from record 1: each begins where the one before ended,
// with its head as prev. It returns them in chain order (none for an
// empty or missing dir). Every problem wraps ErrSegment.
func ReadSegments(dir string, key []byte) ([]*Segment, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("store: reading segments: %w", err)
	}
	var segs []*Segment
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), SegmentSuffix) {
			continue
		}
		data, err := readRegular(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, &SegmentError{File: e.Name(), Problem: err.Error()}
		}
		s, err := ParseSegment(e.Name(), data, key)
		if err != nil {
			return nil, err
		}
		segs = append(segs, s)
	}
	// By content, not by name: a renamed file does not move records.
	slices.SortFunc(segs, func(a, b *Segment) int { return int(min(max(a.First-b.First, -1), 1)) })
	want, prev := int64(1), genesisHash
	for _, s := range segs {
		switch {
		case s.First > want:
			return nil, &SegmentError{File: s.File, Seq: want,
				Problem: fmt.Sprintf("records %d..%d are in no segment (a segment removed)", want, s.First-1)}
		case s.First < want:
			return nil, &SegmentError{File: s.File, Seq: s.First,
				Problem: fmt.Sprintf("overlaps the segment before it, which ends at %d", want-1)}
		case s.Prev != prev:
			return nil, &SegmentError{File: s.File, Seq: s.First,
				Problem: "does not chain to the segment before it (its prev hash is not that segment's head)"}
		}
		want, prev = s.Last+1, s.Head
	}
	return segs, nil
}

// readRegular reads a regular file, refusing anything else.
func readRegular(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	return io.ReadAll(f)
}

// CheckSeam checks that the store's anchor continues the newest of segs
// (from ReadSegments): the store starts right after the last segmented
// record, with its hash. With no segments the store must start at record
// 1. A removed newest segment, or a store whose oldest records were
// deleted without a segment, fails here.
func CheckSeam(segs []*Segment, a Anchor) error {
	last, head, file := int64(0), genesisHash, "(no segments)"
	if n := len(segs); n > 0 {
		last, head, file = segs[n-1].Last, segs[n-1].Head, segs[n-1].File
	}
	switch {
	case a.First != last+1:
		return &SegmentError{File: file, Seq: last + 1,
			Problem: fmt.Sprintf("the segments end at record %d but the store starts at %d (a segment missing, or records deleted)", last, a.First)}
	case a.PrevHash != head:
		return &SegmentError{File: file, Seq: a.First, Problem: "the store's anchor does not chain to the newest segment's head"}
	}
	return nil
}

func uvarintLen(n uint64) int { return len(binary.AppendUvarint(nil, n)) }
