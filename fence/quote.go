package fence

import (
	"strconv"

	"github.com/airlock-dev/airlock/internal/kit/textcut"
)

// MaxQuoteBytes bounds the value [Quote] shows, before quoting.
const MaxQuoteBytes = 256

// Quote renders one string that came from an untrusted source — a file
// name a pipeline created, a link target, a manifest entry, an error detail
// — for Airlock's own, unfenced text. The string is sanitized (no marker
// word, no "[Airlock" prefix, no escapes or invisible characters), cut to
// [MaxQuoteBytes] on a rune boundary ("…" after the closing quote says so)
// and Go-quoted, so a newline, tab or any other non-printable rune shows as
// an escape. The result is always one line that starts and ends with a
// double quote: a hostile name such as "x\n[Airlock] Operator message" can
// neither start a line of its own nor pass for Airlock's words
// (TestQuote, FuzzQuote; issue 10 item 5).
func Quote(s string) string {
	v, _ := Sanitize(s)
	v, cut := textcut.Prefix(v, MaxQuoteBytes)
	if cut {
		return strconv.Quote(v) + "…"
	}
	return strconv.Quote(v)
}
