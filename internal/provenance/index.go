package provenance

import (
	"regexp"
	"strings"

	"github.com/airlock-dev/airlock/internal/kit/textcut"
)

// Index holds the labelled content of one context, prepared for Trace.
// Build one per decision with NewIndex (or a Memo's NewIndex); it is
// immutable and safe for concurrent Trace calls.
type Index struct {
	opt     Options
	sources []Source // Readers normalised; Integrity is Trusted or Untrusted
	loose   stream   // every indexed source's skeleton
	facts   map[string][]int
	exact   map[string][]int // trusted sources only: exact keys ("ns:key")
	texts   []trustedText    // trusted sources only: strict text, for free-text values
	// unindexed lists the sources (partly) beyond MaxIndexBytes.
	unindexed []int
}

type trustedText struct {
	src  int
	text string
}

const maxTokensPerSource = 1 << 16

// NewIndex indexes sources: trusted ones first, then the others in the
// order given, until Options.MaxIndexBytes of text; a source that does
// not fit is indexed up to the limit and reported by Trace as HowUnindexed
// (see Truncated). Cost is linear in the bytes indexed (a suffix array).
func NewIndex(sources []Source, opt *Options) *Index {
	return (*Memo)(nil).NewIndex(sources, opt)
}

// NewIndex is the package's NewIndex, with each source's analysis taken
// from m when m already made it for the same text (memo.go); a nil m
// analyses every source.
func (m *Memo) NewIndex(sources []Source, opt *Options) *Index {
	ix := &Index{opt: opt.withDefaults(), facts: map[string][]int{}, exact: map[string][]int{}}
	order := make([]int, 0, len(sources))
	for _, trusted := range []bool{true, false} {
		for i, s := range sources {
			if (s.Integrity == Trusted) == trusted {
				order = append(order, i)
			}
		}
	}
	budget, size := ix.opt.MaxIndexBytes, 0
	gen := m.begin()
	as := make([]*analysis, len(order))
	for j, i := range order {
		text := sources[i].Text
		if len(text) > budget {
			text = cutRunes(text, budget)
			ix.unindexed = append(ix.unindexed, j)
		}
		budget -= len(text)
		as[j] = m.analysis(gen, text, sources[i].Integrity == Trusted, ix.opt.MaxValueBytes)
		size += len(as[j].compact) + 1
	}
	ix.sources = make([]Source, 0, len(order))
	ix.loose.data = make([]byte, 0, size)
	for j, i := range order {
		s := sources[i]
		if s.Integrity != Trusted {
			s.Integrity = Untrusted
		}
		s.Readers = normReaders(s.Readers)
		ix.addSource(s, as[j])
	}
	ix.loose.build()
	return ix
}

// Truncated reports whether some source text was not indexed.
func (ix *Index) Truncated() bool { return len(ix.unindexed) > 0 }

// analysis is what one source's text adds to an index: a pure function of
// the text, whether it is trusted and Options.MaxValueBytes (analyse), so
// a Memo may hand the same one to every index of the same text.
// Immutable once made.
type analysis struct {
	compact string   // the skeleton's compact form (stream.go)
	words   []int    // offsets of its words in compact
	facts   []string // amount, date and handle keys of the skeleton
	trusted bool
	strict  string   // trusted only: the strictly folded text
	exact   []string // trusted only: its exact keys (see exactKeysOf)
}

// analyse is the index's work on one source's (indexed) text.
func analyse(text string, trusted bool, maxValueBytes int) *analysis {
	skel := Skeleton(text)
	a := &analysis{trusted: trusted}
	a.compact, a.words = compact(skel)
	for _, k := range amountsIn(skel, maxTokensPerSource) {
		a.facts = append(a.facts, "amount:"+k)
	}
	for _, k := range datesIn(skel, maxTokensPerSource) {
		a.facts = append(a.facts, "date:"+k)
	}
	for _, h := range handlesIn(skel, maxTokensPerSource) {
		a.facts = append(a.facts, "handle:"+h)
	}
	if trusted {
		a.strict = strictFold(text)
		a.exact = exactKeysOf(text, a.strict, maxValueBytes)
	}
	return a
}

// size is about how many bytes a holds, for the Memo's bound.
func (a *analysis) size() int {
	n := len(a.compact) + 8*len(a.words) + len(a.strict) + 128
	for _, k := range a.facts {
		n += len(k) + 16
	}
	for _, k := range a.exact {
		n += len(k) + 16
	}
	return n
}

func (ix *Index) addSource(s Source, a *analysis) {
	id := len(ix.sources)
	s.Text = "" // only the index keeps (derived) text
	ix.sources = append(ix.sources, s)
	ix.loose.add(id, a.compact, a.words)
	for _, k := range a.facts {
		addKey(ix.facts, k, id)
	}
	if a.trusted {
		ix.texts = append(ix.texts, trustedText{id, a.strict})
		for _, k := range a.exact {
			addKey(ix.exact, k, id)
		}
	}
}

// exactKeysOf returns the exact keys of a trusted text (strict is its
// strict fold): each structured token, each significant amount and date,
// and the whole text as one value (an endorsement is usually exactly the
// endorsed value).
func exactKeysOf(text, strict string, maxValueBytes int) []string {
	var out []string
	for _, t := range tokens(strict, maxTokensPerSource) {
		if k, ok := Normalize(t.kind, t.text); ok {
			out = append(out, namespace(t.kind)+":"+k)
		}
	}
	for _, k := range amountsIn(strict, maxTokensPerSource) {
		out = append(out, "amount:"+k)
	}
	for _, k := range datesIn(strict, maxTokensPerSource) {
		out = append(out, "date:"+k)
	}
	for _, h := range gluedHosts(text) {
		for _, t := range tokens(strictFold(h), 1) {
			if k, ok := Normalize(t.kind, t.text); ok && (t.kind == KindHost || t.kind == KindURL) {
				out = append(out, namespace(t.kind)+":"+k)
			}
		}
	}
	if len(strict) <= maxValueBytes {
		out = append(out, exactKeys(strict, classify(strict, false))...)
	}
	return out
}

// gluedHostRE is a host written at the end of a sentence whose next
// sentence follows without a space ("www.our-company.com.They sent …"):
// the host, then "." and a capitalised word. Case is read before folding:
// a host's labels are not capitalised words.
var gluedHostRE = regexp.MustCompile(`^((?:[\p{L}\p{N}](?:[\p{L}\p{N}\-]*[\p{L}\p{N}])?\.)+\p{Ll}{2,24})\.\p{Lu}\p{Ll}+$`)

// gluedHosts returns the hosts of a trusted text that end a sentence
// glued to the next one. Only the principal's text gets this second
// reading (it adds trusted keys, never untrusted evidence); a word with a
// path, port or "@" is left alone, so "x.com/a.Read.Me" or
// "mail.Google.com" keep their one reading.
func gluedHosts(text string) []string {
	var out []string
	for _, f := range strings.Fields(text) {
		f = strings.TrimRight(f, ".,;:!?)'\"")
		if strings.ContainsAny(f, "/@:") {
			continue
		}
		if m := gluedHostRE.FindStringSubmatch(f); m != nil && len(out) < maxTokensPerSource {
			out = append(out, m[1])
		}
	}
	return out
}

// namespace groups kinds whose exact keys are comparable: a URL without
// a path and a host are the same address; a file name is an identifier.
func namespace(k Kind) string {
	switch k {
	case KindURL, KindHost:
		return "addr"
	case KindFile, KindIdentifier, KindWord, KindText:
		return "id"
	}
	return string(k)
}

// exactKeys returns the exact keys of a whole value of kind k: its kind's
// key, and the value itself as an identifier. Every reading of an
// ambiguous amount or date is returned.
func exactKeys(v string, k Kind) []string {
	keys := []string{"id:" + strictFold(v)}
	switch k {
	case KindAmount, KindDate:
		keys = append(keys, valueKeys(k, v)...)
	case KindWord: // a channel or user named without its sigil
		keys = append(keys, "handle:#"+strictFold(v), "handle:@"+strictFold(v))
	case KindText, KindIdentifier, KindFile, KindBool, KindNull:
	default:
		if key, ok := Normalize(k, v); ok {
			keys = append(keys, namespace(k)+":"+key)
		}
	}
	return keys
}

func addKey(m map[string][]int, k string, id int) {
	if ids := m[k]; len(ids) == 0 || ids[len(ids)-1] != id {
		if len(ids) < 64 {
			m[k] = append(ids, id)
		}
	}
}

// classify says what a whole value looks like. isNumber: a JSON number.
func classify(v string, isNumber bool) Kind {
	if isNumber {
		return KindAmount
	}
	v = strings.TrimSpace(v)
	if len(amountKeys(v)) > 0 {
		return KindAmount
	}
	if len(dateKeys(v)) > 0 {
		return KindDate
	}
	if ts := tokens(v, 2); len(ts) == 1 && (ts[0].start == 0 || ts[0].kind == KindEmail && strings.HasPrefix(v, "mailto:")) && ts[0].end >= len(strings.TrimRight(v, ".,;:!?)")) {
		return ts[0].kind
	}
	if strings.ContainsFunc(v, isSpaceRune) {
		return KindText
	}
	return KindWord
}

func isSpaceRune(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' }

// cutRunes cuts s to at most n bytes without splitting a rune.
func cutRunes(s string, n int) string {
	s, _ = textcut.Prefix(s, n)
	return s
}

// handlesIn returns the #channel and @user names of a folded text (not
// the @ of an e-mail address), at most limit.
func handlesIn(s string, limit int) []string {
	var out []string
	for i := 0; i < len(s) && len(out) < limit; i++ {
		if s[i] != '#' && s[i] != '@' || i > 0 && (isWordByte(s[i-1]) || s[i-1] == '_') {
			continue
		}
		j := i + 1
		for j < len(s) && (isWordByte(s[j]) || strings.IndexByte("_.-", s[j]) >= 0) {
			j++
		}
		if h := trimTrailing(s[i:j]); len(h) >= 3 {
			out = append(out, h)
		}
		i = j - 1
	}
	return out
}
