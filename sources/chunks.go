package sources

import (
	"crypto/sha256"
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

// chunkHasher is the whole-file check: written the file's bytes in order (in
// writes of any size), it computes the SHA-256 of all of them, which is
// compared with the manifest, and the SHA-256 of each aligned chunk, which
// later pages are checked against. Both come from the same bytes in the same
// pass, so the chunk digests describe exactly the content that matched the
// manifest.
type chunkHasher struct {
	whole hash.Hash
	part  hash.Hash // the chunk being filled
	fill  int       // bytes in part
	sums  [][32]byte
	keep  bool // compute chunk digests (false: whole digest only)
}

func newChunkHasher(keep bool, sizeHint int64) *chunkHasher {
	h := &chunkHasher{whole: sha256.New(), keep: keep}
	if keep {
		h.part = sha256.New()
		if sizeHint > 0 {
			h.sums = make([][32]byte, 0, (sizeHint+chunkSize-1)/chunkSize)
		}
	}
	return h
}

func (h *chunkHasher) Write(p []byte) (int, error) {
	h.whole.Write(p)
	if !h.keep {
		return len(p), nil
	}
	n := len(p)
	for len(p) > 0 {
		if h.fill == 0 && len(p) >= chunkSize {
			// The common case: a whole aligned chunk in one write.
			h.sums = append(h.sums, sha256.Sum256(p[:chunkSize]))
			p = p[chunkSize:]
			continue
		}
		k := min(chunkSize-h.fill, len(p))
		h.part.Write(p[:k])
		h.fill += k
		p = p[k:]
		if h.fill == chunkSize {
			h.flush()
		}
	}
	return n, nil
}

func (h *chunkHasher) flush() {
	var s [32]byte
	h.part.Sum(s[:0])
	h.sums = append(h.sums, s)
	h.part.Reset()
	h.fill = 0
}

// finish returns the whole-file digest and the chunk digests (nil unless
// keep). The hasher must not be written to afterwards.
func (h *chunkHasher) finish() (whole [32]byte, chunks [][32]byte) {
	h.whole.Sum(whole[:0])
	if !h.keep {
		return whole, nil
	}
	if h.fill > 0 {
		h.flush()
	}
	return whole, h.sums
}
