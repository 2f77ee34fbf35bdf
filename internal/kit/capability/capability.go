// Package capability matches capability ids against the patterns a policy
// author writes.
//
// A capability id names what a call does: "pool.list", "pool.read",
// "comm.fetch", "pipeline.run:report_daily". A [Pattern] is an id in which
// '*' stands for any run of characters, including none and including '.' and
// ':' ("comm.*" matches "comm.fetch"; "pipeline.run:report_*" matches
// "pipeline.run:report_daily"). There is no other wildcard: '?', '[' and "**"
// are refused at parse time, so a pattern cannot be read as a richer glob
// than it is.
//
// [Pattern.Covers] decides whether every id one pattern matches is also
// matched by another. The policy package uses it to refuse a child policy
// that widens its parent, and the limits package uses the same matcher for
// rate and cost keys, so both agree on what a pattern means.
package capability

import (
	"errors"
	"fmt"
	"strings"
)

// MaxLen bounds a pattern's length; ids are short and a bound keeps hostile
// configuration from making matching expensive.
const MaxLen = 256

// ErrInvalid reports a pattern that cannot be used.
var ErrInvalid = errors.New("invalid capability pattern")

// Pattern is a parsed capability pattern. The zero Pattern matches only the
// empty id. Patterns are immutable and safe for concurrent use.
type Pattern struct {
	text  string
	parts []string // text split on '*'; len(parts)-1 stars
}

// Parse checks s and returns the pattern it spells.
func Parse(s string) (Pattern, error) {
	switch {
	case s == "":
		return Pattern{}, fmt.Errorf("empty pattern: %w", ErrInvalid)
	case len(s) > MaxLen:
		return Pattern{}, fmt.Errorf("pattern longer than %d bytes: %w", MaxLen, ErrInvalid)
	case strings.Contains(s, "**"):
		// "**" would suggest a recursive glob; '*' already crosses '.' and ':'.
		return Pattern{}, fmt.Errorf("%q: use a single '*' (it already matches across '.' and ':'): %w", s, ErrInvalid)
	}
	for i := 0; i < len(s); i++ {
		if !validByte(s[i]) {
			return Pattern{}, fmt.Errorf("%q: character %q is not allowed (letters, digits, '.', '_', '-', ':' and '*' only): %w", s, s[i], ErrInvalid)
		}
	}
	return Pattern{text: s, parts: strings.Split(s, "*")}, nil
}

// MustParse is Parse for patterns written in code; it panics on error.
func MustParse(s string) Pattern {
	p, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return p
}

func validByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '.', '_', '-', ':', '*':
		return true
	}
	return false
}

// String returns the pattern as written.
func (p Pattern) String() string { return p.text }

// Literal reports whether p has no '*' and so matches exactly one id.
func (p Pattern) Literal() bool { return len(p.parts) <= 1 }

// Specificity counts p's literal characters; more literal characters mean a
// narrower pattern. It orders competing patterns (for example cost keys).
func (p Pattern) Specificity() int { return len(p.text) - (len(p.parts) - 1) }

// Match reports whether id matches p. It does not allocate.
func (p Pattern) Match(id string) bool {
	parts := p.parts
	if len(parts) <= 1 {
		return id == p.text
	}
	first, last := parts[0], parts[len(parts)-1]
	if len(id) < len(first)+len(last) || !strings.HasPrefix(id, first) || !strings.HasSuffix(id, last) {
		return false
	}
	// Middle segments are matched leftmost-first between the fixed prefix
	// and suffix; with '*' as the only wildcard the leftmost choice is
	// always safe, so no backtracking is needed.
	s := id[len(first) : len(id)-len(last)]
	for _, mid := range parts[1 : len(parts)-1] {
		i := strings.Index(s, mid)
		if i < 0 {
			return false
		}
		s = s[i+len(mid):]
	}
	return true
}

// Covers reports whether every id q matches is also matched by p (q ⊆ p).
//
// It matches q's text against p with q's stars kept as a character that
// only a star of p can absorb (p's literal segments never contain '*').
// That is exact over an unbounded alphabet: a star of q instantiated with a
// string p cannot spell must fall inside a star of p. Over the real id
// alphabet it can only be conservative (it may refuse an inclusion that
// holds), never accept one that does not, which is the safe direction for a
// check that refuses widening.
func (p Pattern) Covers(q Pattern) bool { return p.Match(q.text) }

// Overlaps reports whether some id matches both p and q. It is exact: with
// '*' the only wildcard, two patterns share an id exactly when their texts
// can be aligned so that every literal byte of one meets an equal literal
// byte or a star of the other (a dynamic programme over the two texts,
// O(len(p)·len(q)), both bounded by MaxLen). The policy package uses it to
// find rules that no allow pattern can ever let run.
func (p Pattern) Overlaps(q Pattern) bool {
	a, b := p.text, q.text
	w := len(b) + 1
	// memo: 0 unknown, 1 yes, 2 no
	memo := make([]uint8, (len(a)+1)*w)
	var meet func(i, j int) bool
	meet = func(i, j int) bool {
		if m := memo[i*w+j]; m != 0 {
			return m == 1
		}
		var ok bool
		switch {
		case i == len(a) && j == len(b):
			ok = true
		case i < len(a) && a[i] == '*':
			// p's star matches nothing more, or takes b's next byte (or
			// all of b's star's output).
			ok = meet(i+1, j) || (j < len(b) && meet(i, j+1))
		case j < len(b) && b[j] == '*':
			ok = meet(i, j+1) || (i < len(a) && meet(i+1, j))
		case i < len(a) && j < len(b):
			ok = a[i] == b[j] && meet(i+1, j+1)
		}
		memo[i*w+j] = 2
		if ok {
			memo[i*w+j] = 1
		}
		return ok
	}
	return meet(0, 0)
}
