package provenance

import (
	"index/suffixarray"
	"sort"
	"unicode"
	"unicode/utf8"
)

// stream is the loose side of the index: every indexed source's skeleton
// reduced to its letters and digits ("compact" form), one run per source
// separated by a 0 byte, with a suffix array for substring look-ups and a
// bit per position saying whether a word boundary precedes it. Dropping
// every separator is what makes inserted spaces, dashes, dots, line
// breaks and trailing punctuation irrelevant ("US13 3000-0000…").
type stream struct {
	data   []byte
	starts []int // starts[i]: offset of run i in data
	srcs   []int // srcs[i]: source index of run i
	bound  []uint64
	sa     *suffixarray.Index
}

// compactRune maps a skeleton rune to its compact form, or -1 for a
// separator. 0/o and 1/l/i are merged, so "U513 3OOO…" or "paypa1.com"
// written with look-alike digits and letters still match; this only ever
// widens the untrusted side.
func compactRune(r rune) rune {
	switch {
	case r >= 'a' && r <= 'z' || r >= '2' && r <= '9':
	case r == '0':
		return 'o'
	case r == '1':
		return 'l'
	case r < 0x80:
		return -1
	case !unicode.IsLetter(r) && !unicode.IsDigit(r):
		return -1
	}
	if r == 'i' {
		return 'l'
	}
	return r
}

func (st *stream) setBound(p int) {
	for len(st.bound)*64 <= p {
		st.bound = append(st.bound, 0)
	}
	st.bound[p/64] |= 1 << (p % 64)
}

func (st *stream) isBound(p int) bool {
	return p/64 < len(st.bound) && st.bound[p/64]&(1<<(p%64)) != 0
}

// add appends source src's skeleton in compact form, c with its word
// offsets (compact).
func (st *stream) add(src int, c string, words []int) {
	st.starts = append(st.starts, len(st.data))
	st.srcs = append(st.srcs, src)
	for _, w := range words {
		st.setBound(len(st.data) + w)
	}
	st.data = append(st.data, c...)
	st.setBound(len(st.data))
	st.data = append(st.data, 0)
}

func (st *stream) build() { st.sa = suffixarray.New(st.data) }

// occurrence is one place a query was found.
type occurrence struct {
	src        int
	start, end bool // word boundaries at both ends
}

const maxOccurrences = 256

// find returns where q occurs, at most maxOccurrences places (the
// suffix array's order, so deterministic).
func (st *stream) find(q string) []occurrence {
	if st.sa == nil || q == "" {
		return nil
	}
	pos := st.sa.Lookup([]byte(q), maxOccurrences)
	sort.Ints(pos)
	out := make([]occurrence, 0, len(pos))
	for _, p := range pos {
		run := sort.Search(len(st.starts), func(i int) bool { return st.starts[i] > p }) - 1
		out = append(out, occurrence{st.srcs[run], st.isBound(p), st.isBound(p + len(q))})
	}
	return out
}

// findWords returns the sources where q occurs with a word boundary at
// both ends and at each offset of offs (the shingle's internal word starts).
func (st *stream) findWords(q string, offs []int) []int {
	if st.sa == nil {
		return nil
	}
	pos := st.sa.Lookup([]byte(q), maxOccurrences)
	sort.Ints(pos)
	var out []int
next:
	for _, p := range pos {
		for _, o := range offs {
			if !st.isBound(p + o) {
				continue next
			}
		}
		if !st.isBound(p + len(q)) {
			continue
		}
		run := sort.Search(len(st.starts), func(i int) bool { return st.starts[i] > p }) - 1
		out = append(out, st.srcs[run])
	}
	return out
}

// compact reduces a skeleton to its compact form and the offsets (in the
// compact form) at which its words start.
func compact(skel string) (string, []int) {
	var b []byte
	var words []int
	sep := true
	for _, r := range skel {
		c := compactRune(r)
		if c < 0 {
			sep = true
			continue
		}
		if sep {
			words = append(words, len(b))
			sep = false
		}
		b = utf8.AppendRune(b, c)
	}
	return string(b), words
}
