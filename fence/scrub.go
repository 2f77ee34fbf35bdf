package fence

import "errors"

// Scrubbing after sanitizing (issue 26, item 5). A caller that injected
// secrets into a request (a credential header for a fetch, a variable for
// a pipeline) scrubs them from what came back. Scrubbing the raw text
// first is not enough: a host that echoes its Authorization header with
// U+200B, U+00AD, an escape sequence or a tag character between the
// letters passes a raw scrubber, then Sanitize removes those characters and
// re-forms the secret in what the agent reads. So [Meta.Scrub] and
// [Scrubbed] scrub the sanitized text, the text the agent gets, and Wrap
// checks the whole fenced text once more (TestWrapScrubsAfterSanitizing;
// server's TestCredentialsSplitSecretNeverReformed).

// ErrScrub: a secret was still found in the final text after scrubbing.
// A scrubber's marker names the credential, and an id that Sanitize
// rewrites (one spelling the marker word) or an escape the marker line
// adds could in principle form a secret again; the content is refused
// rather than shown.
var ErrScrub = errors.New("fence: a secret survives scrubbing")

// Scrubbed returns s sanitized, with scrub applied to the sanitized text
// (nil scrub: Sanitize alone). A scrubbed text is sanitized again, since a
// marker is text too, and must then hold nothing scrub would replace, else
// ErrScrub. The stats are those of sanitizing s.
func Scrubbed(s string, scrub func(string) string) (string, SanitizeStats, error) {
	out, st := Sanitize(s)
	if scrub == nil {
		return out, st, nil
	}
	if sc := scrub(out); sc != out {
		out, _ = Sanitize(sc)
		if scrub(out) != out {
			return "", st, ErrScrub
		}
	}
	return out, st, nil
}

// wrapScrubbed is Wrap for meta.Scrub set: the content and every meta
// value are sanitized and scrubbed first (Scrubbed), then fenced, and the
// fenced text, markers and escapes included, must hold no secret.
func wrapScrubbed(content []byte, meta Meta) (*Fenced, error) {
	body, st, err := Scrubbed(string(content), meta.Scrub)
	if err != nil {
		return nil, err
	}
	for _, v := range []*string{&meta.Source, &meta.Kind, &meta.Trust, &meta.AttributionID} {
		if *v, _, err = Scrubbed(*v, meta.Scrub); err != nil {
			return nil, err
		}
	}
	scrub := meta.Scrub
	meta.Scrub = nil
	f, err := Wrap([]byte(body), meta) // sanitizing body again changes nothing: Sanitize is idempotent
	if err != nil {
		return nil, err
	}
	if scrub(f.Text) != f.Text {
		return nil, ErrScrub
	}
	f.Changed, f.Stats = st != (SanitizeStats{}), st
	return f, nil
}
