package fence

import (
	"errors"
	"strings"
	"testing"
)

// splitBy puts sep between every two bytes of s.
func splitBy(s, sep string) string {
	parts := strings.Split(s, "")
	return strings.Join(parts, sep)
}

// TestWrapScrubsAfterSanitizing (issue 26, item 5): a secret the content
// splits with characters the sanitizer removes is re-formed by sanitizing;
// with Meta.Scrub the fenced text the agent reads holds the scrubber's
// marker, never the secret, in the content and in every meta value, and
// Check still accepts it.
func TestWrapScrubsAfterSanitizing(t *testing.T) {
	const secret = "Bearer s3cr3t-t0ken-abcdef"
	scrub := func(s string) string { return strings.ReplaceAll(s, secret, "[REDACTED:credential:api]") }
	for _, sep := range []string{
		"\u200b", "\u00ad", "\u2060", "\ufeff", "\u200d", // zero-width, soft hyphen, other Cf
		"\U000e0041",               // a tag character
		"\x1b[31m", "\x1b]0;t\x07", // escape sequences (CSI, OSC)
		"\x07", "\x00", "\x7f", // controls
		"\ufe00", "\u115f", // a variation selector after a letter, a Hangul filler
	} {
		split := splitBy(secret, sep)
		if clean, _ := Sanitize(split); clean != secret {
			t.Fatalf("%q: the sanitizer does not re-form it (%q): the test lost its point", sep, clean)
		}
		f, err := Wrap([]byte("you sent "+split+"\n"), Meta{Source: "https://h/?a=" + split, Kind: "comm.fetch", Trust: "untrusted", Scrub: scrub})
		if err != nil {
			t.Fatalf("%q: %v", sep, err)
		}
		if strings.Contains(f.Text, secret) || strings.Count(f.Text, "[REDACTED:credential:api]") != 2 || !f.Changed {
			t.Errorf("%q: not scrubbed after sanitizing:\n%s", sep, f.Text)
		}
		if err := Check(f.Text); err != nil {
			t.Errorf("%q: %v", sep, err)
		}
		got, _, err := Scrubbed(split, scrub)
		if err != nil || got != "[REDACTED:credential:api]" {
			t.Errorf("Scrubbed(%q) = %q, %v", sep, got, err)
		}
	}
	// Without Scrub, nothing changes: the content is sanitized as ever.
	f, err := Wrap([]byte(splitBy(secret, "\u200b")), Meta{Source: "s", Kind: "k"})
	if err != nil || f.Content != secret {
		t.Fatalf("no scrubber: %q, %v", f.Content, err)
	}
}

// TestWrapScrubMarkerStaysClean: a marker that is not clean text itself
// (a credential id spelling the marker word) is sanitized like content,
// and a secret that only the marker line's escaping would form is refused.
func TestWrapScrubMarkerStaysClean(t *testing.T) {
	scrub := func(s string) string {
		return strings.ReplaceAll(s, "secret-value", "[REDACTED:credential:untrusted_external_content]")
	}
	f, err := Wrap([]byte("a secret-value b"), Meta{Source: "s", Kind: "k", Scrub: scrub})
	if err != nil || strings.Contains(f.Content, "secret-value") {
		t.Fatalf("%v: %s", err, f.Text)
	}
	if err := Check(f.Text); err != nil {
		t.Fatal(err)
	}
	// The open marker escapes '<' as \u003c: a secret spelt that way is
	// formed by the escaping, and the fence is refused.
	odd := func(s string) string { return strings.ReplaceAll(s, `a\u003cb-secret`, "[REDACTED]") }
	if _, err := Wrap([]byte("x"), Meta{Source: "a<b-secret", Kind: "k", Scrub: odd}); !errors.Is(err, ErrScrub) {
		t.Fatalf("escaping formed a secret: %v", err)
	}
}
