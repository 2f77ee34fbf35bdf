package provenance

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// Trace returns the provenance of each leaf of a need's arguments, as
// decoded by encoding/json (map[string]any, []any, string, float64 or
// json.Number, bool, nil), in path order (object keys sorted). At most
// Options.MaxLeaves leaves are traced; one more Argument with Truncated
// set and OriginUntrusted then stands for the rest.
func (ix *Index) Trace(args any) []Argument {
	var ls []leaf
	truncated := walk(args, "", 0, &ls, ix.opt.MaxLeaves)
	out := make([]Argument, len(ls))
	evid := make([]evidence, len(ls))
	for i, l := range ls {
		out[i], evid[i] = ix.traceLeaf(l)
	}
	ix.traceSplits(out, evid)
	for i := range out {
		ix.join(&out[i], &evid[i])
	}
	if truncated != "" {
		out = append(out, Argument{Path: truncated, Kind: KindUnindexed, Integrity: Untrusted,
			Origin: OriginUntrusted, Readers: ix.allReaders(), Truncated: true})
	}
	return out
}

// leaf is one scalar of the arguments.
type leaf struct {
	path     string
	value    string
	kind     Kind // KindBool, KindNull, KindAmount for numbers, "" for strings
	overflow bool // deeper than maxDepth: not examined
}

// walk appends the leaves of v; it returns the path of the first leaf
// beyond limit, or "".
func walk(v any, path string, depth int, out *[]leaf, limit int) string {
	if len(*out) >= limit {
		return cmpOr(path, "/")
	}
	if depth > maxDepth {
		*out = append(*out, leaf{path: path, overflow: true})
		return ""
	}
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if p := walk(t[k], path+"/"+escapePointer(k), depth+1, out, limit); p != "" {
				return p
			}
		}
	case []any:
		for i, e := range t {
			if p := walk(e, path+"/"+strconv.Itoa(i), depth+1, out, limit); p != "" {
				return p
			}
		}
	case string:
		*out = append(*out, leaf{path: path, value: t})
	case json.Number:
		*out = append(*out, leaf{path: path, value: t.String(), kind: KindAmount})
	case float64:
		*out = append(*out, leaf{path: path, value: strconv.FormatFloat(t, 'f', -1, 64), kind: KindAmount})
	case bool:
		*out = append(*out, leaf{path: path, value: strconv.FormatBool(t), kind: KindBool})
	case nil:
		*out = append(*out, leaf{path: path, value: "null", kind: KindNull})
	default: // not a JSON-decoded value: its text is traced like a string
		*out = append(*out, leaf{path: path, value: strings.TrimSpace(jsonText(t))})
	}
	return ""
}

func cmpOr(a, b string) string {
	if a == "" {
		return b
	}
	return a
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// escapePointer escapes a JSON pointer token (RFC 6901).
func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// evidence is what Trace found about one leaf before the join.
type evidence struct {
	hits        []hit
	seen        map[hit]bool
	exact       []int  // trusted sources that explain the whole value exactly
	significant bool   // some part of the value could have been matched
	compact     string // the value's compact skeleton, for split detection
}

// hit is one Match with the index of its source.
type hit struct {
	id int
	m  Match
}

// traceLeaf finds the evidence for one leaf.
func (ix *Index) traceLeaf(l leaf) (Argument, evidence) {
	a := Argument{Path: l.path, Value: l.value, Kind: l.kind}
	var ev evidence
	if l.overflow {
		a.Truncated, a.Kind = true, KindUnindexed
		ev.significant = true
		return a, ev
	}
	if l.kind == KindBool || l.kind == KindNull {
		return a, ev // never matched: true, false and null carry no provenance
	}
	if len(a.Value) > ix.opt.MaxValueBytes {
		a.Value, a.Truncated = cutRunes(a.Value, ix.opt.MaxValueBytes), true
	}
	skel := Skeleton(a.Value)
	if a.Kind == "" {
		a.Kind = classify(skel, false)
	}
	if !a.Truncated {
		ev.exact = ix.exactSources(a.Value, l.kind == KindAmount)
		for _, id := range ev.exact {
			ev.add(ix, id, a.Kind, HowExact, strictFold(a.Value))
		}
	}
	ix.looseEvidence(skel, a.Kind, &ev)
	return a, ev
}

// exactSources returns the trusted sources in which the whole value
// appears under its kind's exact key, or (free text) as a phrase.
func (ix *Index) exactSources(v string, isNumber bool) []int {
	strict := strictFold(v)
	k := classify(strict, isNumber)
	var out []int
	for _, key := range exactKeys(strict, k) {
		if ids := ix.exact[key]; len(ids) > 0 {
			if k == KindAmount || k == KindDate {
				return ix.allReadings(strict, k)
			}
			out = append(out, ids...)
		}
	}
	if k == KindText && len(strict) >= minTextBytes {
		for _, t := range ix.texts {
			if containsPhrase(t.text, strict) {
				out = append(out, t.src)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// allReadings returns the trusted sources that hold every reading of an
// ambiguous amount or date ("1.000" is 1000 or 1): the value is exact
// only if no reading could be something the principal did not give.
func (ix *Index) allReadings(v string, k Kind) []int {
	var out []int
	for i, key := range valueKeys(k, v) {
		ids := ix.exact[key]
		if i == 0 {
			out = slices.Clone(ids)
			continue
		}
		out = slices.DeleteFunc(out, func(id int) bool { return !slices.Contains(ids, id) })
	}
	return out
}

// containsPhrase reports whether p occurs in t between word boundaries.
func containsPhrase(t, p string) bool {
	for off, n := 0, 0; n < 16; n++ {
		i := strings.Index(t[off:], p)
		if i < 0 {
			return false
		}
		s, e := off+i, off+i+len(p)
		if (s == 0 || !isWordByte(t[s-1])) && (e == len(t) || !isWordByte(t[e])) {
			return true
		}
		off = s + 1
	}
	return false
}

// add records one match of source id (once).
func (ev *evidence) add(ix *Index, id int, k Kind, how How, span string) {
	s := ix.sources[id]
	h := hit{id, Match{Source: s.ID, Integrity: s.Integrity, Kind: k, How: how, Span: cutRunes(span, maxSpan)}}
	if ev.seen == nil {
		ev.seen = map[hit]bool{}
	}
	if !ev.seen[h] && len(ev.hits) < maxHits {
		ev.seen[h] = true
		ev.hits = append(ev.hits, h)
	}
}

// maxHits bounds the evidence kept per leaf before the join.
const maxHits = 1024
