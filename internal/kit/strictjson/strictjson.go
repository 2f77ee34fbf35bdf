// Package strictjson checks that bytes hold exactly one JSON value that every
// JSON reader would read the same way.
//
// It blocks parser differentials: encoding/json keeps the last of duplicate
// object keys while other readers keep the first, so a document with a
// duplicate key could be verified (or approved) as one thing and used as
// another. Keys that differ only in case count as duplicates too:
// encoding/json binds a member to a struct field case-insensitively (with
// Unicode simple folding: "meſſage" binds to "message"), so a policy
// reading args["message"] from a map and an upstream binding the same
// bytes into a struct would otherwise read two different values. It also bounds nesting, so a hostile document fails fast instead
// of recursing deeply, and refuses anything after the value.
//
// Check is a single pass over the bytes with no allocation for ordinary
// documents (issue 11: every request body on every transport goes through
// it first; the token walk through encoding/json it replaces allocated per
// token). Its verdicts are exactly those of that walk, which
// FuzzCheckAgreesWithTokenWalk keeps in the tests as the oracle: the same
// grammar (RFC 8259 as encoding/json reads it), keys compared after
// unescaping (so "a" and "\u0061" are duplicates) and folded as
// bytes.EqualFold does (so "a" and "A" are duplicates), the first problem
// in document order reported.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The ways a document can fail Check.
var (
	ErrSyntax       = errors.New("not valid JSON")
	ErrDuplicateKey = errors.New("duplicate key")
	ErrTooDeep      = errors.New("nested too deeply")
	ErrTrailing     = errors.New("data after the JSON value")
	// ErrNumberRange: a number beyond what a float64 holds (1e309).
	// Readers disagree on it — encoding/json refuses it where it reads a
	// float64 (the MCP library does, for every tool argument, and the
	// call then failed before anything audited it), others read
	// Infinity or a big number — so it is refused here, at the edge.
	ErrNumberRange = errors.New("a number beyond the range of a float64")
)

// Check accepts exactly one JSON value with no duplicate object key at any
// depth, in which no value sits deeper than maxDepth (the top-level value
// is at depth 0, its members at depth 1, ...).
func Check(data []byte, maxDepth int) error {
	s := scanner{b: data, max: maxDepth}
	if err := s.value(0); err != nil {
		return err
	}
	s.ws()
	if s.i < len(s.b) {
		return ErrTrailing
	}
	return nil
}

type scanner struct {
	b   []byte
	i   int
	max int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) syntax(what string) error {
	return fmt.Errorf("%w: %s at offset %d", ErrSyntax, what, s.i)
}

// value checks one value at depth; the depth is checked before anything
// is read, as the token walk did.
func (s *scanner) value(depth int) error {
	if depth > s.max {
		return fmt.Errorf("%w: deeper than %d levels", ErrTooDeep, s.max)
	}
	s.ws()
	if s.i >= len(s.b) {
		return s.syntax("unexpected end")
	}
	switch c := s.b[s.i]; {
	case c == '{':
		return s.object(depth)
	case c == '[':
		return s.array(depth)
	case c == '"':
		_, _, err := s.str()
		return err
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	default:
		return s.syntax("invalid character")
	}
}

func (s *scanner) literal(lit string) error {
	if !bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		return s.syntax("invalid literal")
	}
	s.i += len(lit)
	return nil
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

func (s *scanner) number() error {
	b, i := s.b, s.i
	if b[i] == '-' {
		i++
	}
	intStart := i
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return s.syntax("invalid number")
	}
	// Only an exponent or 309 integer digits can reach past a float64's
	// largest value (~1.8e308); the rest need no parse.
	mayOverflow := i-intStart >= 309
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return s.syntax("invalid number")
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return s.syntax("invalid number")
		}
		i, mayOverflow = j, true
	}
	if mayOverflow {
		if _, err := strconv.ParseFloat(string(b[s.i:i]), 64); errors.Is(err, strconv.ErrRange) {
			return fmt.Errorf("%w at offset %d", ErrNumberRange, s.i)
		}
	}
	s.i = i
	return nil
}

// str checks a string literal at s.i and returns its raw bytes (quotes
// included) and whether it needs unescaping to compare (an escape, or a
// byte outside ASCII, which encoding/json may replace with U+FFFD).
func (s *scanner) str() (raw []byte, slow bool, err error) {
	start := s.i
	i := s.i + 1
	for i < len(s.b) {
		c := s.b[i]
		switch {
		case c == '"':
			s.i = i + 1
			return s.b[start:s.i], slow, nil
		case c == '\\':
			slow = true
			if i+1 >= len(s.b) {
				s.i = i
				return nil, false, s.syntax("unterminated string")
			}
			switch s.b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(s.b) || !isHex4(s.b[i+2:i+6]) {
					s.i = i
					return nil, false, s.syntax("invalid escape")
				}
				i += 6
			default:
				s.i = i
				return nil, false, s.syntax("invalid escape")
			}
		case c < 0x20:
			s.i = i
			return nil, false, s.syntax("control character in string")
		case c >= utf8.RuneSelf:
			slow = true
			i++
		default:
			i++
		}
	}
	s.i = i
	return nil, false, s.syntax("unterminated string")
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func (s *scanner) array(depth int) error {
	s.i++ // [
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return nil
	}
	if s.i < len(s.b) && s.b[s.i] == '}' {
		// A syntax error before the element's depth is checked, as the
		// token walk (whose More stops at either closer) saw it.
		return s.syntax("expected a value or ]")
	}
	for {
		if s.i >= len(s.b) {
			return s.syntax("unexpected end")
		}
		if err := s.value(depth + 1); err != nil {
			return err
		}
		if done, err := s.next(']'); done || err != nil {
			return err
		}
	}
}

// next reads what follows an element of an array or a member of an
// object: a comma (more to come: done is false) or closer (the container
// ends: done is true); anything else is a syntax error.
func (s *scanner) next(closer byte) (done bool, err error) {
	s.ws()
	if s.i >= len(s.b) {
		return false, s.syntax("unexpected end")
	}
	switch s.b[s.i] {
	case ',':
		s.i++
		s.ws()
		return false, nil
	case closer:
		s.i++
		return true, nil
	default:
		return false, s.syntax("expected , or " + string(closer))
	}
}

// smallObject is how many keys an object may have before duplicates are
// looked up in a map instead of by scanning the keys seen so far.
const smallObject = 16

func (s *scanner) object(depth int) error {
	s.i++ // {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return nil
	}
	var small [smallObject][]byte
	keys := small[:0]
	var many map[string]struct{}
	for {
		if s.i >= len(s.b) {
			return s.syntax("unexpected end")
		}
		if s.b[s.i] != '"' {
			return s.syntax("expected a key string")
		}
		raw, slow, err := s.str()
		if err != nil {
			return err
		}
		key := raw[1 : len(raw)-1]
		if slow {
			// Compare what encoding/json would decode: escapes resolved,
			// invalid UTF-8 as U+FFFD.
			var k string
			if err := json.Unmarshal(raw, &k); err != nil {
				return fmt.Errorf("%w: %v", ErrSyntax, err)
			}
			key = []byte(k)
		}
		switch {
		case many != nil:
			f := foldKey(key)
			if _, dup := many[f]; dup {
				return fmt.Errorf("%w %q", ErrDuplicateKey, key)
			}
			many[f] = struct{}{}
		default:
			for _, k := range keys {
				if bytes.EqualFold(k, key) {
					return fmt.Errorf("%w %q", ErrDuplicateKey, key)
				}
			}
			if len(keys) < smallObject {
				keys = append(keys, key)
			} else {
				many = make(map[string]struct{}, 2*smallObject)
				for _, k := range keys {
					many[foldKey(k)] = struct{}{}
				}
				many[foldKey(key)] = struct{}{}
			}
		}
		// The member's depth is checked before its colon, as the token
		// walk did.
		if depth+1 > s.max {
			return fmt.Errorf("%w: deeper than %d levels", ErrTooDeep, s.max)
		}
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return s.syntax("expected :")
		}
		s.i++
		if err := s.value(depth + 1); err != nil {
			return err
		}
		if done, err := s.next('}'); done || err != nil {
			return err
		}
	}
}

// foldKey maps a key to one representative of its case-folding class:
// every rune replaced by the smallest rune of its unicode.SimpleFold orbit.
// Two keys have the same foldKey exactly when bytes.EqualFold says they
// are equal (invalid UTF-8 stays U+FFFD, as both read it).
func foldKey(key []byte) string {
	var b strings.Builder
	b.Grow(len(key))
	for _, r := range string(key) {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		b.WriteRune(least)
	}
	return b.String()
}
