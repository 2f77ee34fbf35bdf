package sources

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"mime"
	"os"
	"path"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// sniffLen is how much of a file decides whether it is binary.
const sniffLen = 8 << 10

// copyBuffers recycles the buffers that stream files through the hash.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 8*chunkSize); return &b }}

// ReadResult is one page of a verified file.
type ReadResult struct {
	PoolID, Path string
	Trust        Trust
	Data         []byte
	Offset       int64 // where Data starts
	NextOffset   int64 // Offset+len(Data): where the next page starts
	Size         int64 // bytes in the whole file
	EOF          bool  // NextOffset == Size
	SHA256       string
	MIMEType     string
	Binary       bool // NUL byte or invalid UTF-8 in the first 8 KiB
	// Readers is who may see the pool's content (PoolConfig.Readers; nil
	// is public), for the page's provenance label. A copy.
	Readers []string
}

// Read returns the window [offset, offset+limit) of a file of a bound pool,
// after checking it against the manifest: the first read of a file version
// hashes the whole file, later ones only the chunks the window overlaps
// (see readChunks). limit 0
// means Options.MaxReadBytes, and larger limits are cut to it. For text, the
// window is shortened to end on a UTF-8 rune boundary (unless that would
// leave it empty), so NextOffset can be smaller than offset+limit.
//
// Refusals, in the order they are checked (each is a *violation.Error):
//   - UNKNOWN_POOL_ID, POOL_NOT_SELECTED: the pool id.
//   - PATH_OUTSIDE_POOLS: name is not a canonical relative path.
//   - INTEGRITY_FAILURE: name is not in the manifest (the disk is not touched).
//   - INVALID_ARGUMENTS: negative offset or limit.
//   - UNAVAILABLE: the Registry was closed.
//   - PATH_OUTSIDE_POOLS: the name resolves, through a symlink, outside the pool.
//   - INTEGRITY_FAILURE: the file is missing, not a regular file or unreadable.
//   - LIMIT_EXCEEDED: the file is larger than Options.MaxFileBytes.
//   - INTEGRITY_FAILURE: the content does not match the manifest (the whole
//     file, or a chunk of the window since the version was verified); no
//     data is returned.
//   - INVALID_ARGUMENTS: offset is beyond the end of the file (offset equal
//     to the size gives an empty page with EOF set).
func (c *Context) Read(poolID, name string, offset, limit int64) (*ReadResult, error) {
	res, mark, err := c.read(poolID, name, offset, limit)
	c.finish(OpRead, poolID, name, err, mark)
	if err != nil {
		return nil, err
	}
	return res, nil
}

func (c *Context) read(poolID, name string, offset, limit int64) (*ReadResult, integrityMark, error) {
	p, err := c.resolve(poolID)
	if err != nil {
		return nil, markNone, err
	}
	if err := checkName(name); err != nil {
		return nil, markNone, violation.Wrap(violation.PathOutsidePools, err,
			"path must be a canonical relative path inside pool %s", short(poolID))
	}
	want, ok := p.manifest.Lookup(name)
	if !ok {
		// Only manifest names are readable, so a file added to the pool
		// directory after the manifest was made is unreachable.
		return nil, markNone, violation.New(violation.IntegrityFailure, "file is not in the manifest of pool %s", short(poolID))
	}
	if offset < 0 || limit < 0 {
		return nil, markNone, violation.New(violation.InvalidArguments, "offset and limit must not be negative")
	}
	if c.reg.closed.Load() {
		return nil, markNone, violation.Wrap(violation.Unavailable, ErrClosed, "source pools are closed")
	}
	opts := &c.reg.opts
	if limit == 0 || limit > opts.MaxReadBytes {
		limit = opts.MaxReadBytes
	}

	f, info, err := openRegular(p.root, name, opts.MaxFileBytes)
	if err != nil {
		return nil, markFor(err), c.fileViolation(poolID, err)
	}
	defer f.Close()
	key, cacheable := versionOf(p, name, info)
	if cacheable {
		if v, ok := c.reg.digests.get(key); ok {
			return c.readChunks(p, f, key, v, want.SHA256, offset, limit)
		}
	}
	return c.readWhole(p, f, name, info.Size(), key, cacheable, want.SHA256, offset, limit)
}

// readWhole is the whole-file check: one pass hashes every byte, compares
// the digest with the manifest's and keeps the requested window, and, when
// the file version can be cached, the chunk digests later pages are checked
// against. The bytes hashed are the bytes returned, so the file cannot change
// between the check and the use.
func (c *Context) readWhole(p *pool, f *os.File, name string, statSize int64, key versionKey, cacheable bool, want [32]byte, offset, limit int64) (*ReadResult, integrityMark, error) {
	opts := &c.reg.opts
	poolID := p.cfg.ID
	keep := cacheable && c.reg.digests.fits(name, statSize)
	h := newChunkHasher(keep, statSize)
	w := newWindow(offset, limit, statSize)
	buf := copyBuffers.Get().(*[]byte)
	size, err := io.CopyBuffer(io.MultiWriter(h, w), io.LimitReader(f, opts.MaxFileBytes+1), *buf)
	copyBuffers.Put(buf)
	c.reg.hashed.Add(size)
	if err != nil {
		err = fmt.Errorf("reading %q: %w", name, err)
		return nil, markFailed, violation.Wrap(violation.IntegrityFailure, err, "file in pool %s could not be read", short(poolID))
	}
	if size > opts.MaxFileBytes {
		err = fmt.Errorf("%q grew past %d bytes: %w", name, opts.MaxFileBytes, errFileTooLarge)
		return nil, markNone, c.fileViolation(poolID, err)
	}
	sum, sums := h.finish()
	if sum != want {
		err = fmt.Errorf("%q has sha256 %x, manifest says %x", name, sum, want)
		return nil, markFailed, violation.Wrap(violation.IntegrityFailure, err,
			"file content does not match the manifest of pool %s", short(poolID))
	}
	binary := isBinary(w.head, size > int64(len(w.head)))
	// Only a version read to the size its stat announced is cached: a file
	// that grew or shrank while being read is another version, and its next
	// read verifies it whole again.
	if keep && size == statSize {
		c.reg.digests.put(key, &verifiedFile{size: size, sums: sums, binary: binary})
	}
	if offset > size {
		return nil, markNone, violation.New(violation.InvalidArguments, "offset %d is beyond the end of the file (%d bytes)", offset, size)
	}
	return c.page(p, name, want, w.buf, offset, size, binary), markVerified, nil
}

// readChunks serves a page of a file version already verified whole: it
// reads the aligned chunks the page overlaps, once, into the buffer it then
// both hashes and serves, and checks each chunk against the SHA-256 chain
// kept from the whole-file check (chunks.go). Cost is O(page), not O(file). A chunk that differs
// (the file was rewritten in place without its stat changing) is
// INTEGRITY_FAILURE like a whole-file mismatch, and the version is dropped
// from the cache so the next read verifies the whole file again
// (TestChunkTamperSameStat).
func (c *Context) readChunks(p *pool, f *os.File, key versionKey, v *verifiedFile, want [32]byte, offset, limit int64) (*ReadResult, integrityMark, error) {
	poolID, name := p.cfg.ID, key.name
	if offset > v.size {
		return nil, markNone, violation.New(violation.InvalidArguments, "offset %d is beyond the end of the file (%d bytes)", offset, v.size)
	}
	end := v.size
	if limit < v.size-offset {
		end = offset + limit
	}
	if end == offset { // offset == size: the empty last page
		return c.page(p, name, want, nil, offset, v.size, v.binary), markVerified, nil
	}
	first, last := chunkSpan(offset, end)
	lo, hi := first*chunkSize, min(last*chunkSize, v.size)
	buf := make([]byte, hi-lo)
	n, err := f.ReadAt(buf, lo)
	c.reg.hashed.Add(int64(n))
	if n < len(buf) {
		// The file is shorter than the version verified: a change the stat
		// did not show (or an I/O error).
		c.reg.digests.drop(key)
		err = fmt.Errorf("reading %q bytes %d-%d: got %d: %w", name, lo, hi, n, err)
		return nil, markFailed, violation.Wrap(violation.IntegrityFailure, err, "file in pool %s could not be read", short(poolID))
	}
	if bad, err := verifyChunks(buf, first, last, v.size, v.sums, want); bad >= 0 {
		c.reg.digests.drop(key)
		cause := fmt.Errorf("%q chunk %d (from byte %d) differs from the version that matched sha256 %x", name, bad, bad*chunkSize, want)
		if err != nil {
			cause = fmt.Errorf("%q chunk %d: %w", name, bad, err)
		}
		return nil, markFailed, violation.Wrap(violation.IntegrityFailure, cause,
			"file content does not match the manifest of pool %s", short(poolID))
	}
	return c.page(p, name, want, buf[offset-lo:end-lo], offset, v.size, v.binary), markVerified, nil
}

// page builds the result for verified bytes data at offset of a file of size.
func (c *Context) page(p *pool, name string, sum [32]byte, data []byte, offset, size int64, binary bool) *ReadResult {
	if !binary && offset+int64(len(data)) < size {
		if t := trimPartialRune(data); len(t) > 0 {
			data = t
		}
	}
	next := offset + int64(len(data))
	var digest [2 * sha256.Size]byte // on the stack: one allocation, the string (TestPageAllocations)
	hex.Encode(digest[:], sum[:])
	return &ReadResult{
		PoolID:     p.cfg.ID,
		Path:       name,
		Trust:      p.trust,
		Data:       data,
		Offset:     offset,
		NextOffset: next,
		Size:       size,
		EOF:        next == size,
		SHA256:     string(digest[:]),
		MIMEType:   mimeType(name, binary),
		Binary:     binary,
		Readers:    slices.Clone(p.cfg.Readers),
	}
}

// fileViolation maps a failure to open or bound a manifest-listed file.
func (c *Context) fileViolation(poolID string, err error) error {
	switch problemKind(err) {
	case ProblemOutsidePool:
		// os.Root refused: a symlink in the pool points outside it
		// (TestReadHostilePaths, TestSymlinkSwapRace).
		return violation.Wrap(violation.PathOutsidePools, err, "path resolves outside pool %s", short(poolID))
	case ProblemTooLarge:
		return violation.Wrap(violation.LimitExceeded, err, "file is larger than %d bytes", c.reg.opts.MaxFileBytes)
	case ProblemMissing:
		return violation.Wrap(violation.IntegrityFailure, err, "file listed in the manifest of pool %s is missing", short(poolID))
	default:
		return violation.Wrap(violation.IntegrityFailure, err, "file listed in the manifest of pool %s cannot be read", short(poolID))
	}
}

// markFor says what a failed open means for the pool's integrity: a listed
// file that is missing, unreadable or escaping breaks the manifest's promise;
// one that is merely too large does not.
func markFor(err error) integrityMark {
	if problemKind(err) == ProblemTooLarge {
		return markNone
	}
	return markFailed
}

// window keeps the bytes of [off, end) and the first sniffLen bytes of a
// stream written through it.
type window struct {
	off, end int64
	pos      int64
	buf      []byte
	head     []byte
}

func newWindow(offset, limit, sizeHint int64) *window {
	w := &window{off: offset, end: offset + limit}
	if w.end < offset { // overflow
		w.end = 1<<63 - 1
	}
	if n := min(limit, sizeHint-offset); n > 0 {
		w.buf = make([]byte, 0, n)
	}
	return w
}

func (w *window) Write(p []byte) (int, error) {
	if len(w.head) < sniffLen {
		w.head = append(w.head, p[:min(sniffLen-len(w.head), len(p))]...)
	}
	start, stop := w.pos, w.pos+int64(len(p))
	if stop > w.off && start < w.end {
		lo, hi := max(w.off, start)-start, min(w.end, stop)-start
		w.buf = append(w.buf, p[lo:hi]...)
	}
	w.pos = stop
	return len(p), nil
}

// isBinary reports NUL bytes or invalid UTF-8 in head. When the file goes on
// past head, a rune cut by the end of head is not held against it.
func isBinary(head []byte, truncated bool) bool {
	if bytes.IndexByte(head, 0) >= 0 {
		return true
	}
	if truncated {
		head = trimPartialRune(head)
	}
	return !utf8.Valid(head)
}

// trimPartialRune drops an incomplete UTF-8 sequence from the end of b.
func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			return b
		}
	}
	return b
}

// mimeType guesses from the extension only; content sniffing beyond the
// binary test is left out (net/http's sniffer is not available here).
func mimeType(name string, binary bool) string {
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	if binary {
		return "application/octet-stream"
	}
	return "text/plain; charset=utf-8"
}
