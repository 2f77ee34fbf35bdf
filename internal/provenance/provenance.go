package provenance

import (
	"slices"
)

// Integrity is the trust label of a source. The zero value is invalid:
// NewIndex treats a source with any other value as Untrusted.
type Integrity string

const (
	Trusted   Integrity = "trusted"   // the principal's side: task text, trusted pools, endorsements
	Untrusted Integrity = "untrusted" // everything else the context has seen
)

// Origin is where an argument value came from, as far as the index can tell.
type Origin string

const (
	// OriginTrusted: the whole value appears, under its kind's exact
	// (meaning-preserving) normalisation, in one trusted source.
	OriginTrusted Origin = "trusted"
	// OriginUntrusted: not OriginTrusted, and some part of the value is
	// found in untrusted content (or the index or the value was truncated,
	// so that cannot be ruled out).
	OriginUntrusted Origin = "untrusted"
	// OriginAgent: found nowhere significant; the agent wrote it (possibly
	// by composing trusted pieces, or as a look-alike of a trusted value).
	OriginAgent Origin = "agent"
)

// How says which comparison produced a Match.
type How string

const (
	// HowExact: the whole value equals a token of the source under the
	// kind's exact normalisation (see Normalize). Only exact matches in
	// trusted sources make a value OriginTrusted.
	HowExact How = "exact"
	// HowFolded: the value's look-alike skeleton (see Skeleton) equals a
	// whole token run of the source's skeleton.
	HowFolded How = "folded"
	// HowPartial: a long part of the value (see doc.go) occurs inside a
	// longer run of the source.
	HowPartial How = "partial"
	// HowSplit: the value concatenated with another argument's value is
	// found in the source.
	HowSplit How = "split"
	// HowText: the value reproduces a run of consecutive words of the source.
	HowText How = "text"
	// HowRun: a long run of the value's letters and digits occurs in the
	// source wherever the words break (see doc.go): text re-spaced or with
	// its words split, hiding a host or a sentence inside the agent's own.
	HowRun How = "run"
	// HowValue: an amount or date equal by value (1,000.50 == 1000.5).
	HowValue How = "value"
	// HowUnindexed: the source was not (fully) indexed because of
	// Options.MaxIndexBytes; the value may come from it.
	HowUnindexed How = "unindexed"
)

// Source is one piece of content the context has seen or been given.
type Source struct {
	ID        string    // attribution id, "task", "endorsement:<id>"
	Integrity Integrity // Trusted or Untrusted; anything else counts as Untrusted
	Readers   []string  // who may see it; nil means public, an empty non-nil slice nobody
	Text      string
}

// Options bounds the work of NewIndex and Trace. Zero fields take the defaults.
type Options struct {
	MaxIndexBytes int // total source text indexed (default 4 MiB); the rest is reported HowUnindexed
	MaxValueBytes int // bytes of one argument value considered (default 4 KiB)
	MaxLeaves     int // argument leaves traced per Trace (default 256)
	MaxMatches    int // matches reported per argument (default 16)
	ShingleWords  int // consecutive words that make a free-text match (default 6, minimum 3)
}

const (
	defaultMaxIndexBytes = 4 << 20
	defaultMaxValueBytes = 4 << 10
	defaultMaxLeaves     = 256
	defaultMaxMatches    = 16
	defaultShingleWords  = 6
	maxSpan              = 64 // bytes of Match.Span
	maxDepth             = 32 // nesting of argument values walked
)

func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	def := func(p *int, d int) {
		if *p <= 0 {
			*p = d
		}
	}
	def(&r.MaxIndexBytes, defaultMaxIndexBytes)
	def(&r.MaxValueBytes, defaultMaxValueBytes)
	def(&r.MaxLeaves, defaultMaxLeaves)
	def(&r.MaxMatches, defaultMaxMatches)
	def(&r.ShingleWords, defaultShingleWords)
	r.ShingleWords = max(r.ShingleWords, 3)
	return r
}

// Argument is the provenance of one leaf of a need's arguments.
type Argument struct {
	Path      string    // JSON pointer of the leaf: "/recipient", "/items/0/email"
	Value     string    // the value as text (numbers in shortest decimal form), capped at MaxValueBytes
	Kind      Kind      // what the whole value looks like
	Matches   []Match   // sources that explain the value or its parts, sorted, capped at MaxMatches
	Integrity Integrity // Trusted when Origin is OriginTrusted, else Untrusted
	Origin    Origin
	// Readers is the meet (intersection) of the readers of the sources the
	// value is attributed to: for OriginTrusted, the trusted sources that
	// explain it exactly; otherwise every matched source. nil means public;
	// an empty non-nil slice means no reader is common to all of them.
	Readers   []string
	Truncated bool // the value was longer than MaxValueBytes, or leaves beyond MaxLeaves or depth were not traced
}

// Match is one piece of evidence for an Argument.
type Match struct {
	Source    string // Source.ID
	Integrity Integrity
	Kind      Kind   // kind of the part of the value that matched
	How       How    // which comparison found it
	Span      string // the normalised text that matched, at most 64 bytes
}

// meetReaders intersects reader sets; nil is the top element (public).
func meetReaders(a, b []string) []string {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	out := []string{}
	for _, r := range a {
		if slices.Contains(b, r) {
			out = append(out, r)
		}
	}
	return out
}

// normReaders turns a source's reader list into a sorted set, nil if
// public. An empty non-nil list stays empty: it means nobody (the store
// keeps it apart from public), and reading it as public would let content
// no one may see be sent to anyone.
func normReaders(rs []string) []string {
	if rs == nil {
		return nil
	}
	out := slices.Clone(rs)
	slices.Sort(out)
	return slices.Compact(out)
}
