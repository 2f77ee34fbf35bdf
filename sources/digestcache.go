package sources

import (
	"container/list"
	"sync"
)

// DefaultMaxDigestBytes bounds the chunk digests kept for verified files
// (Options.MaxDigestBytes): 16 MiB holds the digests of 8 GiB of files.
const DefaultMaxDigestBytes = 16 << 20

// entryOverhead is what one cached file costs beside its digests (the key,
// the list element, the map slot), so that many tiny files cannot grow the
// cache past its bound.
const entryOverhead = 256

// versionKey names one version of one file of one pool. A pool never
// changes once opened (its manifest is fixed), so the pool pointer stands
// for its manifest. The stat fields come from the open descriptor; any
// change of inode, size, mtime or ctime is a new version and is verified
// whole again. The key only decides when the whole-file check may be
// skipped: every page is still checked against the chunk digests, so a
// write that leaves the stat unchanged (a write within one timestamp tick,
// or mtime restored with utimes) is still caught
// (TestChunkTamperSameStat).
type versionKey struct {
	pool         *pool
	name         string
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // nanoseconds
}

// verifiedFile is what the whole-file check of one file version leaves
// behind: the SHA-256 chaining value after each whole chunk of the bytes
// that matched the manifest (chunks.go), and whether those bytes sniffed as
// binary (a later page cannot see the head).
type verifiedFile struct {
	size   int64
	sums   [][32]byte
	binary bool
}

func (v *verifiedFile) cost(name string) int64 {
	return int64(len(v.sums))*32 + int64(len(name)) + entryOverhead
}

// digestCache is a least-recently-used map from file versions to their
// verified chunk digests, bounded by the bytes those digests take. Safe for
// concurrent use; entries are never modified once stored.
type digestCache struct {
	mu    sync.Mutex
	max   int64
	used  int64
	order *list.List // of *cacheEntry, most recent first
	byKey map[versionKey]*list.Element
}

type cacheEntry struct {
	key  versionKey
	file *verifiedFile
	cost int64
}

func newDigestCache(max int64) *digestCache {
	return &digestCache{max: max, order: list.New(), byKey: make(map[versionKey]*list.Element)}
}

// fits reports whether a file of size bytes could be cached at all; when it
// cannot, the whole-file check need not keep chunk digests.
func (d *digestCache) fits(name string, size int64) bool {
	return size/chunkSize*32+int64(len(name))+entryOverhead <= d.max
}

func (d *digestCache) get(k versionKey) (*verifiedFile, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.byKey[k]
	if !ok {
		return nil, false
	}
	d.order.MoveToFront(e)
	return e.Value.(*cacheEntry).file, true
}

func (d *digestCache) put(k versionKey, v *verifiedFile) {
	c := v.cost(k.name)
	if c > d.max {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.byKey[k]; ok { // a concurrent first read stored it already
		d.order.MoveToFront(e)
		return
	}
	for d.used+c > d.max {
		d.removeLocked(d.order.Back())
	}
	d.byKey[k] = d.order.PushFront(&cacheEntry{key: k, file: v, cost: c})
	d.used += c
}

// drop forgets a version whose chunk check failed, so that the next read
// verifies the whole file again rather than trusting stale digests.
func (d *digestCache) drop(k versionKey) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.byKey[k]; ok {
		d.removeLocked(e)
	}
}

func (d *digestCache) removeLocked(e *list.Element) {
	ce := d.order.Remove(e).(*cacheEntry)
	delete(d.byKey, ce.key)
	d.used -= ce.cost
}
