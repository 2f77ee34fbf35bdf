package sources

import (
	"bytes"
	"crypto/sha256"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// TestChunkHasher: whatever the write sizes, the chunk digests are those of
// the aligned chunks and the whole digest that of all the bytes.
func TestChunkHasher(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{0, 1, chunkSize - 1, chunkSize, chunkSize + 1, 3*chunkSize + 5, 8 * chunkSize} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		for _, step := range []int{1, 7, chunkSize - 1, chunkSize, 2*chunkSize + 3, size + 1} {
			checkChunkHasher(t, data, func(int) int { return step })
		}
	}
}

func checkChunkHasher(t *testing.T, data []byte, step func(int) int) {
	t.Helper()
	h := newChunkHasher(true, int64(len(data)))
	for rest := data; len(rest) > 0; {
		n := min(max(step(len(rest)), 1), len(rest))
		h.Write(rest[:n])
		rest = rest[n:]
	}
	whole, chain := h.finish()
	want := sha256.Sum256(data)
	if whole != want {
		t.Fatalf("size %d: whole digest differs", len(data))
	}
	if len(chain) != len(data)/chunkSize {
		t.Fatalf("size %d: %d chaining values, want %d", len(data), len(chain), len(data)/chunkSize)
	}
	for i := range chain {
		ref := sha256.New()
		ref.Write(data[:(i+1)*chunkSize])
		if cv, err := chainOf(ref, nil); err != nil || cv != chain[i] {
			t.Fatalf("size %d: chaining value after chunk %d differs (%v)", len(data), i, err)
		}
	}
	// Every span of chunks verifies as it is, and fails at the first chunk
	// holding a changed byte.
	size := int64(len(data))
	_, nchunks := chunkSpan(0, size)
	for first := int64(0); first < nchunks; first++ {
		for last := first + 1; last <= nchunks; last++ {
			lo, hi := first*chunkSize, min(last*chunkSize, size)
			buf := bytes.Clone(data[lo:hi])
			if bad, err := verifyChunks(buf, first, last, size, chain, want); bad != -1 || err != nil {
				t.Fatalf("size %d: chunks [%d,%d) as verified: bad %d, %v", len(data), first, last, bad, err)
			}
			at := int64(len(buf)) - 1 - int64(first+last)%int64(len(buf))
			buf[at] ^= 0x80
			if bad, _ := verifyChunks(buf, first, last, size, chain, want); bad != first+at/chunkSize {
				t.Fatalf("size %d: chunks [%d,%d) with byte %d changed: bad %d, want %d", len(data), first, last, lo+at, bad, first+at/chunkSize)
			}
		}
	}
}

// TestChainRoundTrip: a hash resumed from a kept chaining value continues
// exactly like the original; if crypto/sha256 ever changes how it marshals
// its state, this fails here rather than every cached page failing closed.
func TestChainRoundTrip(t *testing.T) {
	data := bytes.Repeat([]byte("airlock "), 3*chunkSize/8)
	orig := sha256.New()
	orig.Write(data[:2*chunkSize])
	cv, err := chainOf(orig, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := resume(cv, 2*chunkSize)
	if err != nil {
		t.Fatal(err)
	}
	h.Write(data[2*chunkSize:])
	if got, want := h.Sum(nil), sha256.Sum256(data); !bytes.Equal(got, want[:]) {
		t.Fatalf("resumed digest %x, want %x", got, want)
	}
}

// FuzzChunkHasher is the chunk-boundary property: for any bytes cut into
// writes at any points, the digests equal those computed directly.
func FuzzChunkHasher(f *testing.F) {
	f.Add([]byte("hello"), uint16(3), uint32(0))
	f.Add(bytes.Repeat([]byte{0xff}, chunkSize+1), uint16(chunkSize), uint32(1))
	f.Add(bytes.Repeat([]byte("ab"), chunkSize+7), uint16(1000), uint32(2*chunkSize))
	f.Fuzz(func(t *testing.T, data []byte, step uint16, pad uint32) {
		// pad stretches small inputs over chunk boundaries.
		data = append(data, bytes.Repeat([]byte{byte(pad)}, int(pad%(3*chunkSize)))...)
		seed := uint64(step)
		checkChunkHasher(t, data, func(rest int) int {
			seed = seed*6364136223846793005 + 1442695040888963407
			return int(seed>>33) % (2*chunkSize + 2)
		})
	})
}

// FuzzChunkedRead: a page served from the chunk digests (the second read of
// a file version) is byte for byte the page the whole-file check served
// (the first read), for any content, offset and limit.
func FuzzChunkedRead(f *testing.F) {
	f.Add([]byte("héllo wörld"), uint32(0), uint32(3), uint32(0))
	f.Add([]byte{0, 1, 2}, uint32(1), uint32(0), uint32(chunkSize))
	f.Add([]byte("日本語"), uint32(chunkSize-1), uint32(chunkSize+2), uint32(3*chunkSize))
	f.Fuzz(func(t *testing.T, seed []byte, offset, limit, grow uint32) {
		content := string(bytes.Repeat(append(seed, 'x'), 1+int(grow%(4*chunkSize))/(len(seed)+1)))
		reg, _ := onePool(t, map[string]string{"f": content}, &Options{MaxReadBytes: 3 * chunkSize})
		c := bindAll(t, reg)
		off, lim := int64(offset)%int64(len(content)+2), int64(limit)%(4*chunkSize)
		whole, err1 := c.Read("p", "f", off, lim)
		if n, _ := reg.digests.stats(); n != 1 {
			t.Fatalf("the first read cached %d versions, want 1", n)
		}
		chunked, err2 := c.Read("p", "f", off, lim)
		if codeOf(err1) != codeOf(err2) {
			t.Fatalf("whole: %v, chunked: %v", err1, err2)
		}
		if err1 != nil {
			return
		}
		if !bytes.Equal(whole.Data, chunked.Data) || whole.NextOffset != chunked.NextOffset || whole.EOF != chunked.EOF ||
			whole.Binary != chunked.Binary || whole.Size != chunked.Size || whole.SHA256 != chunked.SHA256 || whole.MIMEType != chunked.MIMEType {
			t.Fatalf("off %d lim %d: whole %+v\nchunked %+v", off, lim, whole, chunked)
		}
		if got, want := string(chunked.Data), content[off:chunked.NextOffset]; got != want {
			t.Fatalf("off %d lim %d: served bytes are not the file's", off, lim)
		}
	})
}

// forgeSameStat re-files the cached digests of name under the file's
// current stat: what happens when an in-place write lands in the same
// timestamp tick as the version verified (ctime cannot be set back from
// user space, so this is the only way to make the test deterministic). From
// then on only the per-chunk check stands between the write and the agent.
func forgeSameStat(t *testing.T, reg *Registry, dir, name string) {
	t.Helper()
	info, err := os.Stat(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	d := reg.digests
	d.mu.Lock()
	var v *verifiedFile
	for k, e := range d.byKey {
		if k.name == name {
			v = e.Value.(*cacheEntry).file
			d.removeLocked(e)
		}
	}
	d.mu.Unlock()
	if v == nil {
		t.Fatalf("%s has no cached digests", name)
	}
	p, _ := reg.lookup("p")
	key, ok := versionOf(p, name, info)
	if !ok {
		t.Skip("no file versions on this platform")
	}
	d.put(key, v)
}

// TestChunkTamperSameStat is the attack on the digest cache: the file is
// verified whole, then rewritten in place with the same size and its mtime
// restored. A page covering the changed chunk is INTEGRITY_FAILURE with no
// data, whether the stat gave the change away (ctime moved: the whole file
// is verified again) or not (forged: only the chunk check catches it); a
// page that does not cover it is served from the untouched chunks, and the
// change is caught when its chunk is read.
func TestChunkTamperSameStat(t *testing.T) {
	const size = 5*chunkSize + 100
	orig := bytes.Repeat([]byte("0123456789abcdef"), size/16+1)[:size]
	for _, tc := range []struct {
		name   string
		at     int64 // byte rewritten
		forged bool  // stat made to match the cached version
	}{
		{"real stat, covered chunk", 3*chunkSize + 7, false},
		{"real stat, last partial chunk", size - 1, false},
		{"same stat, covered chunk", 3*chunkSize + 7, true},
		{"same stat, last partial chunk", size - 1, true},
		{"same stat, first byte", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg, dir := onePool(t, map[string]string{"f.txt": string(orig)}, &Options{MaxReadBytes: chunkSize})
			c := bindAll(t, reg)
			if _, err := c.Read("p", "f.txt", 0, 100); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(dir, "f.txt")
			before, err := os.Stat(file)
			if err != nil {
				t.Fatal(err)
			}
			fh, err := os.OpenFile(file, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := fh.WriteAt([]byte{'#'}, tc.at); err != nil {
				t.Fatal(err)
			}
			fh.Close()
			if err := os.Chtimes(file, time.Time{}, before.ModTime()); err != nil {
				t.Fatal(err)
			}
			if tc.forged {
				forgeSameStat(t, reg, dir, "f.txt")
				// A page of other chunks is still served: O(page) means
				// only its own chunks are checked.
				other := (tc.at/chunkSize + 2) % (size/chunkSize + 1) * chunkSize
				r, err := c.Read("p", "f.txt", other, chunkSize/2)
				if err != nil || !bytes.Equal(r.Data, orig[other:other+int64(len(r.Data))]) {
					t.Fatalf("page at %d, away from the change: %v", other, err)
				}
			}
			// The page covering the change, starting mid-chunk before it.
			from := max(tc.at-chunkSize/2, 0)
			r, err := c.Read("p", "f.txt", from, chunkSize)
			if codeOf(err) != violation.IntegrityFailure || r != nil {
				t.Fatalf("page over the changed byte: data returned %v, err %v; want INTEGRITY_FAILURE and no data", r != nil, err)
			}
			if got := c.Pools()[0].Integrity; got != IntegrityFailed {
				t.Fatalf("pool integrity %s, want failed", got)
			}
			// The version is forgotten: even a page of untouched chunks now
			// verifies the whole file again, and fails.
			if _, err := c.Read("p", "f.txt", 0, 10); codeOf(err) != violation.IntegrityFailure {
				t.Fatalf("after the failure: %v, want INTEGRITY_FAILURE", err)
			}
		})
	}
}

// TestChunkShrunkSameStat: a file cut short behind a stat that still
// matches is INTEGRITY_FAILURE when a page reaches past the new end.
func TestChunkShrunkSameStat(t *testing.T) {
	content := bytes.Repeat([]byte{'z'}, 3*chunkSize)
	reg, dir := onePool(t, map[string]string{"f": string(content)}, nil)
	c := bindAll(t, reg)
	if _, err := c.Read("p", "f", 0, 1); err != nil {
		t.Fatal(err)
	}
	forgeSameStat(t, reg, dir, "f")
	if err := os.Truncate(filepath.Join(dir, "f"), 2*chunkSize+1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read("p", "f", 2*chunkSize, 10); codeOf(err) != violation.IntegrityFailure {
		t.Fatalf("read past the cut: %v, want INTEGRITY_FAILURE", err)
	}
}

// TestPageHashesOnlyItsChunks: after the first read of a file, a page costs
// its own bytes plus at most two partial chunks, not the whole file again,
// and reading the whole file page by page costs a small multiple of its
// size, not size²/page.
func TestPageHashesOnlyItsChunks(t *testing.T) {
	const size, page = 1 << 20, 64 << 10
	content := bytes.Repeat([]byte("abcdefghij"), size/10+1)[:size]
	reg, _ := onePool(t, map[string]string{"f.txt": string(content)}, &Options{MaxReadBytes: page})
	c := bindAll(t, reg)
	if _, err := c.Read("p", "f.txt", 0, page); err != nil {
		t.Fatal(err)
	}
	if got := reg.hashed.Load(); got != size {
		t.Fatalf("first page hashed %d bytes, want the whole file (%d)", got, size)
	}
	var got []byte
	for off := int64(0); ; {
		before := reg.hashed.Load()
		r, err := c.Read("p", "f.txt", off, page-3) // unaligned on purpose
		if err != nil {
			t.Fatal(err)
		}
		if cost := reg.hashed.Load() - before; cost > page+2*chunkSize {
			t.Fatalf("page at %d hashed %d bytes, want at most %d", off, cost, page+2*chunkSize)
		}
		got = append(got, r.Data...)
		if r.EOF {
			break
		}
		off = r.NextOffset
	}
	if !bytes.Equal(got, content) {
		t.Fatal("pages do not join back to the file")
	}
	if total := reg.hashed.Load(); total > 3*size {
		t.Fatalf("a full paged read hashed %d bytes for a %d-byte file", total, size)
	}
}

// TestDigestCacheBounded: the digests kept never pass MaxDigestBytes; the
// least recently used version goes first; a file whose digests cannot fit
// is verified whole on every page (slow, but never unchecked).
func TestDigestCacheBounded(t *testing.T) {
	files := map[string]string{}
	for _, n := range []string{"a", "b", "c", "d"} {
		files[n] = string(bytes.Repeat([]byte(n), 4*chunkSize))
	}
	files["big"] = string(bytes.Repeat([]byte("B"), 64*chunkSize))
	perFile := int64(4*32 + 1 + entryOverhead)
	reg, _ := onePool(t, files, &Options{MaxDigestBytes: 3 * perFile})
	c := bindAll(t, reg)
	for _, n := range []string{"a", "b", "c", "a", "d"} { // "a" used again: "b" is the oldest
		if _, err := c.Read("p", n, 0, 1); err != nil {
			t.Fatal(err)
		}
	}
	if n, used := reg.digests.stats(); n != 3 || used > 3*perFile {
		t.Fatalf("cache holds %d versions in %d bytes, want 3 in at most %d", n, used, 3*perFile)
	}
	before := reg.hashed.Load()
	if _, err := c.Read("p", "b", 0, 1); err != nil {
		t.Fatal(err)
	}
	if got := reg.hashed.Load() - before; got != 4*chunkSize {
		t.Fatalf("evicted file hashed %d bytes, want a whole-file check", got)
	}
	for range 2 {
		before := reg.hashed.Load()
		if _, err := c.Read("p", "big", 0, 1); err != nil {
			t.Fatal(err)
		}
		if got := reg.hashed.Load() - before; got != 64*chunkSize {
			t.Fatalf("uncacheable file hashed %d bytes, want the whole file", got)
		}
	}
}

// stats returns the entries and bytes the cache holds.
func (d *digestCache) stats() (entries int, bytes int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.byKey), d.used
}
