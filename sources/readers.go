package sources

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Readers say who may see a pool's content (issue 22): principals, e-mail
// addresses or handles, free strings the operator chooses. They do not
// gate reading — the binding does — but travel with what the agent is
// handed into its provenance labels, so a policy can refuse to send a
// value to someone who may not see where it came from
// (`readable_by(provenance.body, args.parameters.arguments.recipient)`).
// nil means public; an empty non-nil list means nobody (the meet of two
// disjoint lists, e.g. a pipeline's output over two pools).

// Bounds on a readers list.
const (
	// MaxReaders bounds the entries of one readers list.
	MaxReaders = 64
	// MaxReaderLen bounds one entry, in bytes.
	MaxReaderLen = 256
)

// CheckReader reports why r cannot be a readers entry, or nil. An entry
// that could never equal a recipient as written (empty, padded with
// spaces, holding control characters or invalid UTF-8) is refused rather
// than silently matching nobody.
func CheckReader(r string) error {
	switch {
	case r == "":
		return fmt.Errorf("reader is empty")
	case len(r) > MaxReaderLen:
		return fmt.Errorf("reader longer than %d bytes", MaxReaderLen)
	case !utf8.ValidString(r):
		return fmt.Errorf("reader %q is not valid UTF-8", r)
	case strings.TrimSpace(r) != r:
		return fmt.Errorf("reader %q has leading or trailing space", r)
	case strings.IndexFunc(r, unicode.IsControl) >= 0:
		return fmt.Errorf("reader %q holds a control character", r)
	}
	return nil
}

// MeetReaders is who may see content derived from sources with the
// readers a and b: their intersection, with nil (public) the top element.
// It never returns nil unless both are nil, so a restriction is never
// lost to an empty intersection.
func MeetReaders(a, b []string) []string {
	switch {
	case a == nil:
		return slices.Clone(b)
	case b == nil:
		return slices.Clone(a)
	}
	out := []string{}
	for _, r := range a {
		if slices.Contains(b, r) && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}
