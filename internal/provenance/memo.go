package provenance

import "sync"

// Memo keeps the analyses of the source texts its indexes were built
// from, so that the next index of a context — its provenance mostly what
// it was, plus the label or two the last call added — analyses only the
// texts it has not seen. Analysing each source (look-alike skeleton,
// tokens, amounts, dates, a trusted text's exact keys) is most of
// NewIndex's cost; assembling the index from analyses and building its
// suffix array is the small rest (issue 23: the index built per traced
// need was half of tracing it).
//
// Invariant: m.NewIndex(sources, opt) builds the index NewIndex(sources,
// opt) builds, field for field (TestMemoIndexIsFresh). A Memo is keyed by
// the analysed text itself, with its integrity and Options.MaxValueBytes
// (the only inputs of analyse) — never by a source id, a row's sequence
// number, a context or a snapshot counter. Content that changed under the
// same id (an eviction, a label's seq reused after a crash, an attacker's
// page in place of a trusted one, an integrity changed) is a different
// key, so there is no invalidation that could be missed and no stale
// analysis that could hide a value the agent saw in untrusted content
// (TestMemoKeyIsTheText; end to end, TestProvenanceBetweenNeeds in
// package server). Memory is bounded by
// maxMemoBytes; a Memo is safe for concurrent use and its zero value is
// ready; a nil *Memo memoises nothing.
type Memo struct {
	mu     sync.Mutex
	m      map[memoKey]*memoEntry
	bytes  int
	gen    uint64
	shrunk uint64 // the build that last made room
	limit  int    // maxMemoBytes when 0 (tests set less)
}

// memoKey is everything analyse reads.
type memoKey struct {
	text          string
	trusted       bool
	maxValueBytes int
}

type memoEntry struct {
	a    *analysis
	size int
	used uint64 // the build that last used it
}

// maxMemoBytes bounds a Memo's texts and analyses: about four contexts at
// the default MaxIndexBytes, far more at their usual size.
const maxMemoBytes = 48 << 20

// begin starts one index build; its number marks the analyses it uses, so
// that making room never drops one the build in progress holds.
func (m *Memo) begin() uint64 {
	if m == nil {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen++
	return m.gen
}

// analysis is analyse(text, trusted, maxValueBytes), from the memo when
// it holds it.
func (m *Memo) analysis(gen uint64, text string, trusted bool, maxValueBytes int) *analysis {
	if m == nil {
		return analyse(text, trusted, maxValueBytes)
	}
	k := memoKey{text, trusted, maxValueBytes}
	m.mu.Lock()
	if e := m.m[k]; e != nil {
		e.used = max(e.used, gen)
		m.mu.Unlock()
		return e.a
	}
	m.mu.Unlock()
	a := analyse(text, trusted, maxValueBytes)
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.m[k]; e != nil { // another build made it meanwhile
		e.used = max(e.used, gen)
		return e.a
	}
	limit := m.limit
	if limit == 0 {
		limit = maxMemoBytes
	}
	e := &memoEntry{a: a, size: len(text) + a.size(), used: gen}
	if e.size > limit/4 {
		return a // one text does not crowd out every other context's
	}
	if m.m == nil {
		m.m = map[memoKey]*memoEntry{}
	}
	if m.bytes+e.size > limit && m.shrunk != gen {
		m.shrink(gen)
		m.shrunk = gen
	}
	if m.bytes+e.size > limit {
		return a // the builds in progress fill the memo: not kept
	}
	m.m[k] = e
	m.bytes += e.size
	return a
}

// shrink drops the analyses no build since gen's started has used: the
// build in progress keeps its own, and a context whose analyses went
// re-makes them on its next need. Called with mu held, at most once per
// build; what does not fit after it is not kept, so a Memo never holds
// more than its limit.
func (m *Memo) shrink(gen uint64) {
	for k, e := range m.m {
		if e.used < gen {
			delete(m.m, k)
			m.bytes -= e.size
		}
	}
}
