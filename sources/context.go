package sources

import (
	"encoding/hex"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// Integrity states of a pool within one Context.
const (
	IntegrityUnverified = "unverified" // no file of the pool read yet
	IntegrityVerified   = "verified"   // every file read so far matched the manifest
	IntegrityFailed     = "failed"     // some file was missing, unreadable, escaping or changed; sticky
)

// PoolInfo describes a bound pool. It is a copy; changing it changes nothing.
type PoolInfo struct {
	ID          string `json:"id"`
	Description string `json:"description"`
	Trust       Trust  `json:"trust"`
	Files       int    `json:"files"`     // manifest entries
	Bytes       int64  `json:"bytes"`     // total size of the entries found when the registry was opened
	Integrity   string `json:"integrity"` // an Integrity* constant: this pool's state in this Context
	// Output marks a pipeline run's published outputs (listed after the
	// configured pools, newest first).
	Output bool `json:"output,omitempty"`
	// Readers is who may see the pool's content (PoolConfig.Readers).
	// Not shown to the agent: it is the operator's list of people.
	Readers []string `json:"-"`
}

// Operations named in AccessRecord.Op.
const (
	OpRead = "read"
	OpList = "list"
)

// AccessRecord is one access attempt, allowed or refused. PoolID and Path are
// as the caller gave them, cut to 1 KiB.
type AccessRecord struct {
	Time      time.Time
	Op        string // OpRead or OpList
	PoolID    string
	Path      string // empty for OpList
	OK        bool
	Violation violation.Code // empty when OK; INTERNAL_ERROR for a failure that is not a refusal
}

// UsageSummary is the seed's SourceUsageSummary for evidence and the
// "Sources Used" report. All counts are exact even when the access log has
// dropped old records.
// Its JSON (in session.close audit records) is snake_case like every
// other audit field.
type UsageSummary struct {
	ContextID  string   `json:"context_id"`
	PoolsBound []string `json:"pools_bound"` // sorted
	PoolsUsed  []string `json:"pools_used"`  // bound pools with at least one successful read or list, sorted
	// FilesAccessed counts distinct files read successfully.
	FilesAccessed int `json:"files_accessed"`
	// IntegrityVerified is true when at least one file was read, every read
	// file matched its manifest digest, and no bound pool is "failed".
	IntegrityVerified bool `json:"integrity_verified"`
	Violations        int  `json:"violations"`         // refused or failed accesses
	Accesses          int  `json:"accesses"`           // all access attempts
	AccessLogDropped  int  `json:"access_log_dropped"` // oldest records dropped from AccessLog to bound memory
}

// Context is the frozen ExecutionSourceContext: the pools bound to one
// session. Its pool set is fixed at Bind and no method changes it; only the
// integrity states, the access log and the counters move. Safe for
// concurrent use.
type Context struct {
	id    string
	reg   *Registry
	bound map[string]*pool // never written after Bind
	ids   []string         // bound ids in listing order; never written after Bind

	mu         sync.Mutex
	integrity  map[string]string
	used       map[string]bool
	files      map[fileKey]struct{}
	log        accessLog
	violations int
	accesses   int
}

type fileKey struct{ pool, path string }

// Bind returns a Context holding the named pools. Every id must be
// configured (else UNKNOWN_POOL_ID); repeated ids are bound once. The slice
// is copied, so later changes to poolIDs do not reach the Context.
func (r *Registry) Bind(contextID string, poolIDs []string) (*Context, error) {
	if r.closed.Load() {
		return nil, ErrClosed
	}
	if contextID == "" || len(contextID) > maxContextIDLen {
		return nil, fmt.Errorf("%w: length %d, want 1..%d", ErrInvalidContextID, len(contextID), maxContextIDLen)
	}
	c := &Context{
		id:        contextID,
		reg:       r,
		bound:     make(map[string]*pool, len(poolIDs)),
		integrity: make(map[string]string, len(poolIDs)),
		used:      make(map[string]bool),
		files:     make(map[fileKey]struct{}),
		log:       accessLog{max: r.opts.MaxAccessLog},
	}
	for _, id := range poolIDs {
		p, ok := r.lookup(id)
		if !ok {
			return nil, violation.New(violation.UnknownPoolID, "pool %s is not configured", short(id))
		}
		if _, dup := c.bound[id]; dup {
			continue
		}
		c.bound[id] = p
		c.ids = append(c.ids, id)
		c.integrity[id] = IntegrityUnverified
	}
	c.ids = listingOrder(c.ids, c.bound)
	return c, nil
}

// ID returns the context id given to Bind.
func (c *Context) ID() string { return c.id }

// listingOrder is how a context lists its pools: the configured ones first,
// sorted by id, then the runs' outputs newest first (ids holds them in the
// order they were published), so the pools an operator configured never
// sink below a pile of run outputs (issue 24 item 5).
func listingOrder(ids []string, bound map[string]*pool) []string {
	var configured, outputs []string
	for _, id := range ids {
		if bound[id].output {
			outputs = append(outputs, id)
		} else {
			configured = append(configured, id)
		}
	}
	slices.Sort(configured)
	slices.Reverse(outputs)
	return append(configured, outputs...)
}

// Pools describes the bound pools in listing order (listingOrder).
func (c *Context) Pools() []PoolInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]PoolInfo, 0, len(c.ids))
	for _, id := range c.ids {
		out = append(out, c.bound[id].info(c.integrity[id]))
	}
	return out
}

// PoolPath returns the host directory of a bound pool, for the sandbox that
// mounts it read-only. It is host detail: never show it to the agent. It is
// not an access and is not recorded in the access log.
func (c *Context) PoolPath(poolID string) (string, error) {
	p, err := c.resolve(poolID)
	if err != nil {
		return "", err
	}
	return p.cfg.Path, nil
}

// resolve maps a pool id to a bound pool: UNKNOWN_POOL_ID when no pool has
// that id, POOL_NOT_SELECTED when one does but this Context does not hold it
// (TestPoolResolution).
func (c *Context) resolve(poolID string) (*pool, error) {
	if p, ok := c.bound[poolID]; ok {
		return p, nil
	}
	if _, ok := c.reg.lookup(poolID); ok {
		return nil, violation.New(violation.PoolNotSelected, "pool %s is not bound to this session", short(poolID))
	}
	return nil, violation.New(violation.UnknownPoolID, "pool %s does not exist", short(poolID))
}

// FileInfo is one file in a ListPage.
type FileInfo struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`   // bytes when the registry was opened; -1 if the file was not found then
	SHA256 string `json:"sha256"` // lowercase hex, from the manifest
}

// ListPage is one page of a pool's manifest.
type ListPage struct {
	PoolID     string     `json:"pool"`
	Files      []FileInfo `json:"files"`
	Total      int        `json:"total"`       // entries in the manifest
	NextOffset int        `json:"next_offset"` // offset of the next page, or -1 when this page reaches the end
}

// List pages through the manifest of a bound pool, sorted by path. It never
// touches the disk. offset must be in [0, Total]; limit 0 means the
// maximum page (Options.MaxListLimit) and larger limits are cut to it.
func (c *Context) List(poolID string, offset, limit int) (*ListPage, error) {
	page, err := c.list(poolID, offset, limit)
	c.finish(OpList, poolID, "", err, markNone)
	if err != nil {
		return nil, err
	}
	return page, nil
}

func (c *Context) list(poolID string, offset, limit int) (*ListPage, error) {
	p, err := c.resolve(poolID)
	if err != nil {
		return nil, err
	}
	total := p.manifest.Len()
	if offset < 0 || offset > total || limit < 0 {
		return nil, violation.New(violation.InvalidArguments, "offset must be in [0, %d] and limit must not be negative", total)
	}
	if limit == 0 || limit > c.reg.opts.MaxListLimit {
		limit = c.reg.opts.MaxListLimit
	}
	end := min(offset+limit, total)
	page := &ListPage{PoolID: poolID, Total: total, NextOffset: -1, Files: make([]FileInfo, 0, end-offset)}
	for _, e := range p.manifest.entries[offset:end] {
		page.Files = append(page.Files, FileInfo{Path: e.Path, Size: e.Size, SHA256: hex.EncodeToString(e.SHA256[:])})
	}
	if end < total {
		page.NextOffset = end
	}
	return page, nil
}

// integrityMark is what an access learnt about its pool's integrity.
type integrityMark int

const (
	markNone integrityMark = iota
	markVerified
	markFailed
)

// finish records an access and its effect on the pool's state. Every public
// access method calls it exactly once, allowed or refused.
func (c *Context) finish(op, poolID, name string, err error, mark integrityMark) {
	rec := AccessRecord{Op: op, PoolID: cut(poolID), Path: cut(name), OK: err == nil}
	if err != nil {
		code, ok := violation.CodeOf(err)
		if !ok {
			code = violation.Internal
		}
		rec.Violation = code
	}
	now := c.reg.opts.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	rec.Time = now
	c.accesses++
	if err != nil {
		c.violations++
	} else {
		c.used[poolID] = true
		if op == OpRead {
			c.files[fileKey{poolID, name}] = struct{}{}
		}
	}
	if _, bound := c.bound[poolID]; bound {
		switch {
		case mark == markFailed:
			c.integrity[poolID] = IntegrityFailed
		case mark == markVerified && c.integrity[poolID] != IntegrityFailed:
			c.integrity[poolID] = IntegrityVerified
		}
	}
	c.log.add(rec)
}

// AccessLog returns a copy of the kept access records, oldest first.
func (c *Context) AccessLog() []AccessRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.log.snapshot()
}

// Usage summarises this Context's source use.
func (c *Context) Usage() UsageSummary {
	c.mu.Lock()
	defer c.mu.Unlock()
	u := UsageSummary{
		ContextID:        c.id,
		PoolsBound:       slices.Clone(c.ids),
		PoolsUsed:        []string{},
		FilesAccessed:    len(c.files),
		Violations:       c.violations,
		Accesses:         c.accesses,
		AccessLogDropped: c.log.dropped,
	}
	if u.PoolsBound == nil {
		u.PoolsBound = []string{}
	}
	anyFailed := false
	for _, id := range c.ids {
		if c.used[id] {
			u.PoolsUsed = append(u.PoolsUsed, id)
		}
		anyFailed = anyFailed || c.integrity[id] == IntegrityFailed
	}
	u.IntegrityVerified = len(c.files) > 0 && !anyFailed
	slices.Sort(u.PoolsBound) // the trail's order is by id, not the listing's
	slices.Sort(u.PoolsUsed)
	return u
}

// accessLog is a ring of the most recent records.
type accessLog struct {
	max     int
	buf     []AccessRecord
	start   int // index of the oldest record once the ring is full
	dropped int
}

func (l *accessLog) add(r AccessRecord) {
	if len(l.buf) < l.max {
		l.buf = append(l.buf, r)
		return
	}
	l.buf[l.start] = r
	l.start = (l.start + 1) % l.max
	l.dropped++
}

func (l *accessLog) snapshot() []AccessRecord {
	out := make([]AccessRecord, 0, len(l.buf))
	out = append(out, l.buf[l.start:]...)
	return append(out, l.buf[:l.start]...)
}

// cut bounds a caller-supplied string kept in an AccessRecord.
func cut(s string) string {
	if len(s) > maxRecordedStringLen {
		return s[:maxRecordedStringLen]
	}
	return s
}

// short quotes a caller-supplied id for an agent-facing message, bounded.
func short(s string) string {
	if len(s) > maxIDLen {
		return fmt.Sprintf("%q…", s[:maxIDLen])
	}
	return fmt.Sprintf("%q", s)
}
