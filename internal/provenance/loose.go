package provenance

import (
	"cmp"
	"slices"
	"strings"
)

// Significance: the thresholds below keep short and common values (1, 100,
// "the", "yes") from being "found" everywhere. See doc.go.
const (
	minCompact      = 6  // letters and digits a compact part needs at all
	minCompactWords = 12 // … when it is only words (no digit, no structure)
	minPartial      = 10 // … to be matched inside a longer run (with minPartialDigits)
	minPartialDigit = 4
	minTextBytes    = 12 // a free-text value matched as a phrase of a trusted text
	maxParts        = 64 // tokens of one value examined
	maxShingles     = 256
	maxSplitLeaves  = 64 // leaves paired for split detection
	maxSplitCompact = 64 // longest compact value paired
	// A run (HowRun): this many letters and digits of a value in a row,
	// found anywhere in a source, whatever spaces the value puts between
	// them. With a digit among them (a host, an account, a reference) the
	// shorter length; letters alone need about as many as ShingleWords
	// words hold, so prose is not found more easily than by shingles.
	minRunDigits  = 20
	minRunLetters = 32
	maxRuns       = 256 // look-ups per value; a longer value is sampled evenly
)

// part is one piece of a value looked up in the loose stream.
type part struct {
	kind   Kind
	q      string // compact skeleton
	digits int
	span   string // skeleton, reported as Match.Span
}

// lookup looks up the forms of one part, most specific first, and stops
// at the first form found.
func (ix *Index) lookup(forms []part, ev *evidence) {
	for i, p := range forms {
		if !significant(p) || slices.ContainsFunc(forms[:i], func(o part) bool { return o.q == p.q }) {
			continue
		}
		ev.significant = true
		found := false
		for _, o := range ix.loose.find(p.q) {
			switch {
			case o.start && o.end:
				ev.add(ix, o.src, p.kind, HowFolded, p.span)
			case p.digits >= minPartialDigit && len(p.q) >= minPartial:
				ev.add(ix, o.src, p.kind, HowPartial, p.span)
			default:
				continue
			}
			found = true
		}
		if found {
			return
		}
	}
}

// looseEvidence looks the skeleton of a value up: by value (amounts,
// dates, handles), as a whole and by structured token in the compact
// stream, and as free text by shingles of consecutive words.
func (ix *Index) looseEvidence(skel string, k Kind, ev *evidence) {
	ix.byValue(skel, k, ev)
	c, words := compact(skel)
	ev.compact = c
	ix.lookup([]part{{k, c, countDigits(skel), strings.TrimSpace(skel)}}, ev)
	for _, t := range tokens(skel, maxParts) {
		var ps []part
		for _, v := range variants(t) {
			vc, _ := compact(v)
			ps = append(ps, part{t.kind, vc, countDigits(v), v})
		}
		ix.lookup(ps, ev)
	}
	if k == KindText {
		ix.shingles(c, words, ev)
	}
	ix.runs(c, ev)
}

// runs looks up windows of a value's compact form, one per position (or
// evenly sampled past maxRuns), in the sources without regard to word
// boundaries: "Chec k ou t th is l ink: www .sec ure- syst ems- 252. com"
// has no word, token or shingle of the page it copies, but its letters
// and digits in a row are the page's. A window holding a digit is
// minRunDigits long, else minRunLetters. A run of the value as long as the
// window plus the sampling step is always found; shorter ones may be.
func (ix *Index) runs(c string, ev *evidence) {
	if len(c) < minRunDigits {
		return
	}
	windows := len(c) - minRunDigits + 1
	step := max(1, (windows+maxRuns-1)/maxRuns)
	// found[src] are the spans of c found in source src, overlapping
	// windows merged, so a match reports the run, not each window of it.
	found := map[int][][2]int{}
	var srcs []int
	for i := 0; i < windows; i += step {
		end := i + minRunDigits
		if countDigits(c[i:end]) == 0 {
			if end = i + minRunLetters; end > len(c) {
				continue
			}
		}
		ev.significant = true
		for _, o := range ix.loose.find(c[i:end]) {
			spans := found[o.src]
			if n := len(spans); n > 0 && spans[n-1][1] >= i {
				spans[n-1][1] = max(spans[n-1][1], end)
				continue
			}
			if len(spans) == 0 {
				srcs = append(srcs, o.src)
			}
			found[o.src] = append(spans, [2]int{i, end})
		}
	}
	for _, src := range srcs {
		for _, sp := range found[src] {
			ev.add(ix, src, KindText, HowRun, c[sp[0]:sp[1]])
		}
	}
}

// byValue matches amounts and dates by value, and handles by name.
func (ix *Index) byValue(skel string, k Kind, ev *evidence) {
	keys := valueKeys(k, skel)
	switch k {
	case KindHandle:
		keys = []string{"handle:" + strings.TrimSpace(skel)}
	case KindWord: // a channel or user named without its sigil
		w := strings.TrimSpace(skel)
		keys = []string{"handle:#" + w, "handle:@" + w}
	}
	for _, key := range keys {
		ev.significant = ev.significant || k != KindWord
		for _, id := range ix.facts[key] {
			ev.add(ix, id, k, HowValue, key[strings.IndexByte(key, ':')+1:])
		}
	}
}

// variants returns the forms of a token looked up: the token, and for an
// address the host, the host without "www." and host+path without the
// scheme (so https://www.x.com/ is found where the page said www.x.com),
// and for an e-mail address the address without its +tag.
func variants(t token) []string {
	out := []string{t.text}
	switch t.kind {
	case KindURL, KindHost:
		if key, ok := addrKey(t.text); ok {
			host, path, _ := strings.Cut(key, "/")
			host, _, _ = strings.Cut(host, "?")
			out = append(out, key, host, strings.TrimPrefix(host, "www."))
			if path != "" {
				out = append(out, strings.TrimPrefix(host, "www.")+"/"+path)
			}
		}
	case KindEmail:
		local, domain, _ := strings.Cut(t.text, "@")
		if base, _, ok := strings.Cut(local, "+"); ok {
			out = append(out, base+"@"+domain)
		}
	}
	return out
}

func significant(p part) bool {
	switch {
	case len(p.q) < minCompact, p.kind == KindHandle: // handles match by name only
		return false
	case p.digits > 0:
		return true
	case p.kind == KindText || p.kind == KindWord || p.kind == KindAmount || p.kind == KindIdentifier:
		return len(p.q) >= minCompactWords
	}
	return true
}

func countDigits(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			n++
		}
	}
	return n
}

// shingles finds runs of ShingleWords consecutive words of a free-text
// value in the sources. Long values are sampled evenly (maxShingles).
func (ix *Index) shingles(c string, words []int, ev *evidence) {
	n := ix.opt.ShingleWords
	windows := len(words) - n + 1
	if windows <= 0 {
		return
	}
	step := max(1, (windows+maxShingles-1)/maxShingles)
	for i := 0; i < windows; i += step {
		end := len(c)
		if i+n < len(words) {
			end = words[i+n]
		}
		q := c[words[i]:end]
		offs := make([]int, 0, n-1)
		for _, w := range words[i+1 : i+n] {
			offs = append(offs, w-words[i])
		}
		ev.significant = true
		for _, id := range ix.loose.findWords(q, offs) {
			ev.add(ix, id, KindText, HowText, q)
		}
	}
}

// traceSplits finds values split across two arguments: the compact forms
// of two leaves, concatenated in either order, found in a source.
func (ix *Index) traceSplits(args []Argument, evs []evidence) {
	var idx []int
	for i := range evs {
		if c := evs[i].compact; len(c) >= 2 && len(c) <= maxSplitCompact && len(idx) < maxSplitLeaves {
			idx = append(idx, i)
		}
	}
	for _, i := range idx {
		for _, j := range idx {
			q := evs[i].compact + evs[j].compact
			if i == j || len(q) < minPartial {
				continue
			}
			digits := countDigits(args[i].Value) + countDigits(args[j].Value)
			for _, o := range ix.loose.find(q) {
				if o.start && o.end || digits >= minPartialDigit {
					evs[i].add(ix, o.src, args[i].Kind, HowSplit, q)
					evs[j].add(ix, o.src, args[j].Kind, HowSplit, q)
				}
			}
		}
	}
}

// join settles an argument's origin, integrity, readers and matches.
func (ix *Index) join(a *Argument, ev *evidence) {
	var from []int // the sources whose readers the value carries
	switch {
	case len(ev.exact) > 0 && !a.Truncated:
		a.Origin, a.Integrity, from = OriginTrusted, Trusted, ev.exact
	default:
		a.Origin, a.Integrity = OriginAgent, Untrusted
		if a.Truncated {
			a.Origin = OriginUntrusted
		}
		if ix.Truncated() && ev.significant {
			for _, id := range ix.unindexed {
				ev.add(ix, id, KindUnindexed, HowUnindexed, "")
			}
		}
		for _, h := range ev.hits {
			from = append(from, h.id)
			if h.m.Integrity == Untrusted {
				a.Origin = OriginUntrusted
			}
		}
	}
	for i, id := range from {
		if i == 0 {
			a.Readers = ix.sources[id].Readers
		} else {
			a.Readers = meetReaders(a.Readers, ix.sources[id].Readers)
		}
	}
	a.Readers = slices.Clone(a.Readers)
	a.Matches = make([]Match, 0, len(ev.hits))
	for _, h := range ev.hits {
		a.Matches = append(a.Matches, h.m)
	}
	slices.SortFunc(a.Matches, compareMatches)
	if len(a.Matches) > ix.opt.MaxMatches {
		a.Matches = a.Matches[:ix.opt.MaxMatches]
	}
	if len(a.Matches) == 0 {
		a.Matches = nil
	}
}

// compareMatches orders the evidence that decides first: exact trusted
// matches, then untrusted, then the rest.
func compareMatches(x, y Match) int {
	rank := func(m Match) int {
		switch {
		case m.How == HowExact:
			return 0
		case m.Integrity == Untrusted:
			return 1
		}
		return 2
	}
	return cmp.Or(cmp.Compare(rank(x), rank(y)), cmp.Compare(x.Source, y.Source),
		cmp.Compare(x.How, y.How), cmp.Compare(x.Kind, y.Kind), cmp.Compare(x.Span, y.Span))
}

// allReaders is the meet of every source's readers.
func (ix *Index) allReaders() []string {
	var r []string
	for i, s := range ix.sources {
		if i == 0 {
			r = s.Readers
		} else {
			r = meetReaders(r, s.Readers)
		}
	}
	return slices.Clone(r)
}
