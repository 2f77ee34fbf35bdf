package fence

import "math/bits"

// The marker word, spelled as the matcher sees it: letters only, with
// separators allowed (any number, none included) after UNTRUSTED and after
// EXTERNAL. So "UNTRUSTED_EXTERNAL_CONTENT", "untrusted external content",
// "Untrusted-External-Content" and "UNTRUSTEDEXTERNALCONTENT" all match, in
// any case and in look-alike letters (runes.go), and so does any of them
// split by characters the sanitizer removes (zero-width, escapes, controls):
// removed characters are never fed to the matcher.
const (
	markerLetters = "UNTRUSTEDEXTERNALCONTENT"
	acceptState   = len(markerLetters)
	sepStates     = uint32(1)<<9 | uint32(1)<<17 // after UNTRUSTED, after UNTRUSTEDEXTERNAL
)

// matcher finds the marker word in a stream of symbols in one pass. It is a
// bit-parallel NFA: bit i of active means some candidate has matched the
// first i letters. Each state has at most one live candidate (a candidate
// that started earlier has matched more letters), so start[i] can record
// where that candidate began in the output; on a match the sanitizer cuts
// the output back to it. Cost per symbol is O(number of live candidates),
// and with no candidate live the caller skips the matcher entirely.
type matcher struct {
	active uint32
	start  [acceptState + 1]int
}

// step feeds one symbol whose output begins at offset pos. When it completes
// the marker word it returns the offset where the word began, and resets.
func (m *matcher) step(sym class, pos int) (begin int, matched bool) {
	switch {
	case sym == symSep:
		m.active &= sepStates
		return 0, false
	case sym == clsPlain || sym > symSep:
		m.active = 0
		return 0, false
	}
	c := 'A' + byte(sym) - 1
	var next uint32
	// Highest state first, so start[i+1] is overwritten only after it was read.
	for a := m.active; a != 0; {
		i := bits.Len32(a) - 1
		a &^= 1 << i
		if markerLetters[i] == c {
			next |= 1 << (i + 1)
			m.start[i+1] = m.start[i]
		}
	}
	if c == markerLetters[0] {
		next |= 1 << 1
		m.start[1] = pos
	}
	if next&(1<<acceptState) != 0 {
		m.active = 0
		return m.start[acceptState], true
	}
	m.active = next
	return 0, false
}

// noticePrefix is Airlock's own prefix for text it writes around a fence
// ("[Airlock notice]"), spelled as the matcher sees it after the bracket.
const noticePrefix = "AIRLOCK"

// noticeMatcher finds an imitation of the "[Airlock" prefix: an opening
// bracket or look-alike (runes.go), any separators, then AIRLOCK in any case
// or look-alike letters, through anything the sanitizer removes. The
// bracket is not a letter of AIRLOCK, so at most one candidate is live: a
// new bracket restarts it. O(1) per symbol.
type noticeMatcher struct {
	state int // 0 idle; 1 after the bracket; 1+k after k letters of AIRLOCK
	begin int // output offset of the bracket
}

// step feeds one symbol whose output begins at offset pos. When it
// completes the prefix it returns the offset of the bracket, and resets.
func (p *noticeMatcher) step(sym class, pos int) (begin int, matched bool) {
	switch {
	case sym == symOpen:
		p.state, p.begin = 1, pos
		return 0, false
	case sym == symSep && p.state == 1:
		return 0, false
	case sym >= 1 && sym <= 26 && p.state >= 1 && noticePrefix[p.state-1] == 'A'+byte(sym)-1:
		if p.state++; p.state == len(noticePrefix)+1 {
			p.state = 0
			return p.begin, true
		}
		return 0, false
	}
	p.state = 0
	return 0, false
}
