package sources

import (
	"crypto/sha256"
	"encoding"
	"encoding/binary"
	"errors"
	"hash"
)

// chunkSize is the unit in which a page of an already verified file is
// re-verified: the file is cut into aligned chunks of this many bytes (the
// last one shorter) and each chunk's SHA-256 is kept from the whole-file
// check. A page re-hashes only the chunks it overlaps, so a page of n bytes
// costs at most n+2*chunkSize bytes read and hashed, whatever the file size.
// 16 KiB keeps that overhead small for the default 64 KiB page while the
// digests stay at 1/512 of the file (2 MiB for a 1 GiB file).
const chunkSize = 16 << 10

// chunkSpan returns the chunks [first, last) that bytes [off, end) overlap;
// first == last when the range is empty.
func chunkSpan(off, end int64) (first, last int64) {
	if end <= off {
		return off / chunkSize, off / chunkSize
	}
	return off / chunkSize, (end + chunkSize - 1) / chunkSize
}

// The chunk digests are the whole-file SHA-256's own chaining values: the
// 32-byte state of the hash after each aligned chunk (chunkSize is a
// multiple of the 64-byte block, so the state at a chunk boundary is exactly
// the eight words of the Merkle-Damgård chain, with nothing buffered). The
// whole-file check gets them for free in its one pass, so the first page of
// a file costs one hashing pass, not two.
//
// A later page checks chunk i by restoring the state after chunk i-1,
// hashing the chunk's bytes as read now, and comparing the state reached
// with the one kept; the last chunk is checked by finishing the hash and
// comparing with the manifest's digest. Serving other bytes for a chunk
// would need a second preimage of SHA-256's compression function from a
// fixed chaining value over a fixed length: as hard as breaking SHA-256
// itself (the Merkle-Damgård argument rests on exactly that).

// stateLen is the size of crypto/sha256's marshalled state: magic, the eight
// chaining words, the block buffer and the length.
const (
	stateMagic = "sha\x03"
	stateLen   = len(stateMagic) + 32 + sha256.BlockSize + 8
)

// chainOf extracts the chaining value from a SHA-256 hash at a block
// boundary; scratch (may be nil) saves an allocation.
func chainOf(h hash.Hash, scratch []byte) ([32]byte, error) {
	var cv [32]byte
	b, err := h.(encoding.BinaryAppender).AppendBinary(scratch[:0])
	if err != nil {
		return cv, err
	}
	if len(b) != stateLen || string(b[:len(stateMagic)]) != stateMagic {
		return cv, errStateFormat
	}
	copy(cv[:], b[len(stateMagic):])
	return cv, nil
}

// resume returns a SHA-256 hash in the state it had after n bytes (a
// multiple of chunkSize) whose chaining value was cv; n == 0 is a fresh
// hash.
func resume(cv [32]byte, n int64) (hash.Hash, error) {
	h := sha256.New()
	if n == 0 {
		return h, nil
	}
	b := make([]byte, stateLen)
	copy(b, stateMagic)
	copy(b[len(stateMagic):], cv[:])
	binary.BigEndian.PutUint64(b[stateLen-8:], uint64(n))
	if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(b); err != nil {
		return nil, err
	}
	return h, nil
}

// errStateFormat: crypto/sha256 no longer marshals its state as this file
// expects. Every cached page then fails closed (TestChainRoundTrip guards
// against it ever shipping).
var errStateFormat = errors.New("unexpected crypto/sha256 state format")

// chunkHasher is the whole-file check: written the file's bytes in order (in
// writes of any size), it computes the SHA-256 of all of them, which is
// compared with the manifest, and keeps the chaining value at every chunk
// boundary, which later pages are checked against. Both come from the same
// bytes in the same pass, so the chain describes exactly the content that
// matched the manifest.
type chunkHasher struct {
	whole hash.Hash
	fill  int // bytes of the current chunk written
	sums  [][32]byte
	state [stateLen]byte // scratch for chainOf
	keep  bool           // keep chaining values (false: whole digest only)
	err   error
}

func newChunkHasher(keep bool, sizeHint int64) *chunkHasher {
	h := &chunkHasher{whole: sha256.New(), keep: keep}
	if keep && sizeHint > 0 {
		h.sums = make([][32]byte, 0, sizeHint/chunkSize)
	}
	return h
}

func (h *chunkHasher) Write(p []byte) (int, error) {
	if !h.keep {
		h.whole.Write(p)
		return len(p), nil
	}
	n := len(p)
	for len(p) > 0 {
		k := min(chunkSize-h.fill, len(p))
		h.whole.Write(p[:k])
		h.fill += k
		p = p[k:]
		if h.fill == chunkSize {
			cv, err := chainOf(h.whole, h.state[:])
			if err != nil && h.err == nil {
				h.err = err
			}
			h.sums = append(h.sums, cv)
			h.fill = 0
		}
	}
	return n, nil
}

// finish returns the whole-file digest and the chaining value after each
// whole chunk (nil unless keep, or if the state could not be read). The
// hasher must not be written to afterwards.
func (h *chunkHasher) finish() (whole [32]byte, chain [][32]byte) {
	h.whole.Sum(whole[:0])
	if !h.keep || h.err != nil {
		return whole, nil
	}
	return whole, h.sums
}

// verifyChunks checks buf, the bytes of chunks [first, last) of a file of
// size bytes as just read, against the chain kept by the whole-file check
// and the manifest digest want. It returns the index of the first chunk that
// differs, or -1.
func verifyChunks(buf []byte, first, last, size int64, chain [][32]byte, want [32]byte) (int64, error) {
	var prev [32]byte
	if first > 0 {
		prev = chain[first-1]
	}
	h, err := resume(prev, first*chunkSize)
	if err != nil {
		return first, err
	}
	var scratch [stateLen]byte
	for i := first; i < last; i++ {
		lo := (i - first) * chunkSize
		hi := min(lo+chunkSize, int64(len(buf)))
		h.Write(buf[lo:hi])
		if i*chunkSize+hi-lo == size {
			// The file's last chunk: the finished hash is the file digest.
			var sum [32]byte
			if h.Sum(sum[:0]); sum != want {
				return i, nil
			}
			continue
		}
		cv, err := chainOf(h, scratch[:])
		if err != nil {
			return i, err
		}
		if cv != chain[i] {
			return i, nil
		}
	}
	return -1, nil
}
