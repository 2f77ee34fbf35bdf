package provenance

import (
	"regexp"
	"strings"

	"github.com/airlock-dev/airlock/internal/kit/textcut"
)

// Index holds the labelled content of one context, prepared for Trace.
// Build one per decision with NewIndex; it is immutable and safe for
// concurrent Trace calls.
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
	ix := &Index{opt: opt.withDefaults(), facts: map[string][]int{}, exact: map[string][]int{}}
	order := make([]int, 0, len(sources))
	for _, trusted := range []bool{true, false} {
		for i, s := range sources {
			if (s.Integrity == Trusted) == trusted {
				order = append(order, i)
			}
		}
	}
	budget := ix.opt.MaxIndexBytes
	for _, i := range order {
		s := sources[i]
		if s.Integrity != Trusted {
			s.Integrity = Untrusted
		}
		s.Readers = normReaders(s.Readers)
		text := s.Text
		if len(text) > budget {
			text = cutRunes(text, budget)
			ix.unindexed = append(ix.unindexed, len(ix.sources))
		}
		budget -= len(text)
		ix.addSource(s, text)
	}
	ix.loose.build()
	return ix
}

// Truncated reports whether some source text was not indexed.
func (ix *Index) Truncated() bool { return len(ix.unindexed) > 0 }

func (ix *Index) addSource(s Source, text string) {
	id := len(ix.sources)
	s.Text = "" // only the index keeps (derived) text
	ix.sources = append(ix.sources, s)
	skel := Skeleton(text)
	ix.loose.add(id, skel)
	for _, k := range amountsIn(skel, maxTokensPerSource) {
		addKey(ix.facts, "amount:"+k, id)
	}
	for _, k := range datesIn(skel, maxTokensPerSource) {
		addKey(ix.facts, "date:"+k, id)
	}
	for _, h := range handlesIn(skel, maxTokensPerSource) {
		addKey(ix.facts, "handle:"+h, id)
	}
	if s.Integrity == Trusted {
		ix.addTrusted(id, text)
	}
}

// addTrusted records the exact keys of a trusted text: each structured
// token, each significant amount and date, and the whole text as one value
// (an endorsement is usually exactly the endorsed value).
func (ix *Index) addTrusted(id int, text string) {
	strict := strictFold(text)
	ix.texts = append(ix.texts, trustedText{id, strict})
	for _, t := range tokens(strict, maxTokensPerSource) {
		if k, ok := Normalize(t.kind, t.text); ok {
			addKey(ix.exact, namespace(t.kind)+":"+k, id)
		}
	}
	for _, k := range amountsIn(strict, maxTokensPerSource) {
		addKey(ix.exact, "amount:"+k, id)
	}
	for _, k := range datesIn(strict, maxTokensPerSource) {
		addKey(ix.exact, "date:"+k, id)
	}
	for _, h := range gluedHosts(text) {
		for _, t := range tokens(strictFold(h), 1) {
			if k, ok := Normalize(t.kind, t.text); ok && (t.kind == KindHost || t.kind == KindURL) {
				addKey(ix.exact, namespace(t.kind)+":"+k, id)
			}
		}
	}
	if len(strict) <= ix.opt.MaxValueBytes {
		for _, k := range exactKeys(strict, classify(strict, false)) {
			addKey(ix.exact, k, id)
		}
	}
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
