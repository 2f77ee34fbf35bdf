package redact

import (
	"unicode/utf8"
)

// The matchers below decide exactly what these two patterns would, without
// a regular-expression engine on the per-call path (every argument string of
// every call is checked; the engine's backtracking was a tenth of the
// runner's time). FuzzMatchersAgreeWithRegexp holds them to the patterns:
//
//	key:   (?i)(pass(word|wd|phrase)?|secret|token|api[_-]?key|apikey|auth(orization)?|cookie|credential|private[_-]?key|session[_-]?key|signature)
//	value: (?i)^(bearer|basic)\s+\S+|-----BEGIN [A-Z ]*PRIVATE KEY-----|\b(sk|pk|rk)[-_](live|test|proj)?[-_]?[A-Za-z0-9]{16,}|
//	       \bAKIA[0-9A-Z]{16}\b|\bgh[pousr]_[A-Za-z0-9]{30,}|\bxox[abpr]-[A-Za-z0-9-]{10,}|\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.
//
// Case-insensitivity is Unicode simple folding, as (?i) is: 'ſ' is an 's'
// and 'K' (Kelvin) a 'k' — a key spelt "paſsword" is still a password.

// text is s decoded once into runes (invalid bytes as U+FFFD, as the
// regexp engine reads them).
type text []rune

func decode(s string, buf *[128]rune) text {
	out := text(buf[:0])
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		out = append(out, r)
		i += n
	}
	return out
}

// foldIs reports whether r is c (a lower-case ASCII letter or another
// ASCII byte) under simple case folding.
func foldIs(r rune, c byte) bool {
	switch {
	case r == rune(c):
		return true
	case c >= 'a' && c <= 'z' && r == rune(c-'a'+'A'):
		return true
	case c == 's' && r == 'ſ', c == 'k' && r == 'K':
		return true
	}
	return false
}

// hasFold reports whether t[i:] starts with lit under folding.
func (t text) hasFold(i int, lit string) bool {
	if i < 0 || len(t)-i < len(lit) {
		return false
	}
	for j := 0; j < len(lit); j++ {
		if !foldIs(t[i+j], lit[j]) {
			return false
		}
	}
	return true
}

// letterFold reports whether r is in [A-Za-z] under (?i): the ASCII
// letters and their fold partners.
func letterFold(r rune) bool {
	return (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || r == 'ſ' || r == 'K'
}

func alnumFold(r rune) bool { return letterFold(r) || (r >= '0' && r <= '9') }

// isWord is \w for \b: ASCII only, as in Go's regexp.
func isWord(r rune) bool {
	return (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') || r == '_'
}

// boundary is \b before position i.
func (t text) boundary(i int) bool {
	before := i > 0 && isWord(t[i-1])
	after := i < len(t) && isWord(t[i])
	return before != after
}

// run returns the end of the longest run of class members from i.
func (t text) run(i int, class func(rune) bool) int {
	for i < len(t) && class(t[i]) {
		i++
	}
	return i
}

func isSpace(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\f' || r == '\r' }

var sensitiveKeyWords = []string{
	"pass", "secret", "token", "apikey", "api_key", "api-key", "auth", "cookie", "credential",
	"privatekey", "private_key", "private-key", "sessionkey", "session_key", "session-key", "signature",
}

// sensitiveKey reports whether an argument name holds a credential.
func sensitiveKey(k string) bool {
	var buf [128]rune // most names and values fit: no allocation
	t := decode(k, &buf)
	for i := range t {
		for _, w := range sensitiveKeyWords {
			if t.hasFold(i, w) {
				return true
			}
		}
	}
	return false
}

// secretValue reports whether a string is a credential whatever its key.
func secretValue(s string) bool {
	var buf [128]rune
	t := decode(s, &buf)
	if t.authHeader() {
		return true
	}
	for i := range t {
		if t.privateKeyBlock(i) || t.keyPrefixed(i) {
			return true
		}
	}
	return false
}

// authHeader: ^(bearer|basic)\s+\S+
func (t text) authHeader() bool {
	for _, w := range []string{"bearer", "basic"} {
		if !t.hasFold(0, w) {
			continue
		}
		i := len(w)
		j := i
		for j < len(t) && isSpace(t[j]) {
			j++
		}
		if j > i && j < len(t) {
			return true
		}
	}
	return false
}

// privateKeyBlock: -----BEGIN [A-Z ]*PRIVATE KEY----- starting at i. The
// class covers "PRIVATE KEY" itself, so it must end the longest run.
func (t text) privateKeyBlock(i int) bool {
	if !t.hasFold(i, "-----begin ") {
		return false
	}
	q := i + len("-----begin ")
	e := t.run(q, func(r rune) bool { return letterFold(r) || r == ' ' })
	const tail = "private key"
	return e-q >= len(tail) && t.hasFold(e-len(tail), tail) && t.hasFold(e, "-----")
}

// keyPrefixed covers the alternatives that start at a word boundary.
func (t text) keyPrefixed(i int) bool {
	if !t.boundary(i) {
		return false
	}
	return t.stripeLike(i) || t.awsKey(i) || t.githubToken(i) || t.slackToken(i) || t.jwt(i)
}

func dashOrUnderscore(r rune) bool { return r == '-' || r == '_' }

// stripeLike: (sk|pk|rk)[-_](live|test|proj)?[-_]?[A-Za-z0-9]{16,}
func (t text) stripeLike(i int) bool {
	if !(t.hasFold(i, "sk") || t.hasFold(i, "pk") || t.hasFold(i, "rk")) {
		return false
	}
	q := i + 2
	if q >= len(t) || !dashOrUnderscore(t[q]) {
		return false
	}
	q++
	long := func(j int) bool { return t.run(j, alnumFold)-j >= 16 }
	if long(q) || (q < len(t) && dashOrUnderscore(t[q]) && long(q+1)) {
		return true
	}
	for _, w := range []string{"live", "test", "proj"} {
		if t.hasFold(q, w) {
			r := q + 4
			if long(r) || (r < len(t) && dashOrUnderscore(t[r]) && long(r+1)) {
				return true
			}
		}
	}
	return false
}

// awsKey: AKIA[0-9A-Z]{16}\b
func (t text) awsKey(i int) bool {
	if !t.hasFold(i, "akia") {
		return false
	}
	q := i + 4
	if len(t)-q < 16 {
		return false
	}
	for j := q; j < q+16; j++ {
		if !alnumFold(t[j]) {
			return false
		}
	}
	return t.boundary(q + 16)
}

// githubToken: gh[pousr]_[A-Za-z0-9]{30,}
func (t text) githubToken(i int) bool {
	if !t.hasFold(i, "gh") || len(t) < i+4 {
		return false
	}
	c := t[i+2]
	if !(foldIs(c, 'p') || foldIs(c, 'o') || foldIs(c, 'u') || foldIs(c, 's') || foldIs(c, 'r')) || t[i+3] != '_' {
		return false
	}
	return t.run(i+4, alnumFold)-(i+4) >= 30
}

// slackToken: xox[abpr]-[A-Za-z0-9-]{10,}
func (t text) slackToken(i int) bool {
	if !t.hasFold(i, "xox") || len(t) < i+5 {
		return false
	}
	c := t[i+3]
	if !(foldIs(c, 'a') || foldIs(c, 'b') || foldIs(c, 'p') || foldIs(c, 'r')) || t[i+4] != '-' {
		return false
	}
	return t.run(i+5, func(r rune) bool { return alnumFold(r) || r == '-' })-(i+5) >= 10
}

// jwt: eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.
func (t text) jwt(i int) bool {
	if !t.hasFold(i, "eyj") {
		return false
	}
	seg := func(r rune) bool { return alnumFold(r) || r == '_' || r == '-' }
	q := i + 3
	e := t.run(q, seg)
	if e-q < 8 || e >= len(t) || t[e] != '.' {
		return false
	}
	e2 := t.run(e+1, seg)
	return e2-(e+1) >= 8 && e2 < len(t) && t[e2] == '.'
}
