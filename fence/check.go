package fence

import (
	"fmt"
	"strings"
)

// Check verifies a fence as Wrap lays it out, for tests and tools that
// receive fenced text: an optional clean preamble (the notice), then
// exactly one open marker at the start of a line, the content, and the
// matching close marker as the very end of fenced. It fails with
// [ErrMalformed] when a marker is missing, misplaced or carries another
// nonce, and with [ErrUnclean] when the preamble, the open marker's
// attributes or the content hold anything Sanitize would change (the
// marker word in any spelling, controls, invisible characters, invalid
// UTF-8) or the nonce appears anywhere but the two markers.
//
// Check proves the fence is intact; it says nothing about whether the
// content is true or safe to act on.
func Check(fenced string) error {
	i := strings.Index(fenced, openPrefix)
	if i < 0 {
		return fmt.Errorf("no open marker: %w", ErrMalformed)
	}
	if i > 0 && fenced[i-1] != '\n' {
		return fmt.Errorf("open marker does not start a line: %w", ErrMalformed)
	}
	nl := strings.IndexByte(fenced[i:], '\n')
	if nl < 0 {
		return fmt.Errorf("open marker line does not end: %w", ErrMalformed)
	}
	line := fenced[i : i+nl]
	nonce, ok := parseNonce(line[len(openPrefix):])
	if !ok || !strings.HasSuffix(line, markerEnd) {
		return fmt.Errorf("open marker is not well formed: %w", ErrMalformed)
	}
	closing := "\n" + closePrefix + nonce + markerEnd
	if !strings.HasSuffix(fenced, closing) {
		return fmt.Errorf("fence does not end with the close marker for nonce %s: %w", nonce, ErrMalformed)
	}
	start, end := i+nl+1, len(fenced)-len(closing)
	if end < start {
		return fmt.Errorf("close marker overlaps the open marker: %w", ErrMalformed)
	}
	if _, st := Sanitize(line); st != (SanitizeStats{Markers: 1}) {
		return fmt.Errorf("open marker attributes are not sanitized (%+v): %w", st, ErrUnclean)
	}
	// The notice is Airlock's own text and starts with the "[Airlock" prefix
	// that Sanitize rewrites in content, so it is taken off before the rest
	// of the preamble is checked.
	if err := clean("preamble", strings.TrimSuffix(fenced[:i], notice+"\n")); err != nil {
		return err
	}
	if err := clean("content", fenced[start:end]); err != nil {
		return err
	}
	if n := strings.Count(fenced, nonce); n != 2 {
		return fmt.Errorf("nonce appears %d times, want 2: %w", n, ErrUnclean)
	}
	return nil
}

// clean reports an error when Sanitize would change s.
func clean(part, s string) error {
	if _, st := Sanitize(s); st != (SanitizeStats{}) {
		return fmt.Errorf("%s is not sanitized (%+v): %w", part, st, ErrUnclean)
	}
	return nil
}

// parseNonce reads the nonce at the start of s: exactly nonceLen lowercase
// hex digits, followed by a space or the end of the marker.
func parseNonce(s string) (string, bool) {
	if len(s) <= nonceLen {
		return "", false
	}
	for k := 0; k < nonceLen; k++ {
		if c := s[k]; !(c >= '0' && c <= '9') && !(c >= 'a' && c <= 'f') {
			return "", false
		}
	}
	if c := s[nonceLen]; c != ' ' && c != '>' {
		return "", false
	}
	return s[:nonceLen], true
}
