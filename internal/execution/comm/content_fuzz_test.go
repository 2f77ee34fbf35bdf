package comm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"mime"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// The agent-safe texts of the content refusals: fixed, never the server's
// media type or charset name (issue 10, item 4).
const (
	publicBinary  = "comm.fetch: binary content refused: the content type is not text; only HTML, JSON and text are returned"
	publicNUL     = "comm.fetch: binary content refused: the content holds NUL bytes, so it is not text"
	publicCharset = "comm.fetch: unsupported character encoding: the declared charset is not supported (UTF-8, UTF-16, ISO-8859-1 and windows-1252 are)"
)

// isCharsetName: what metaCharset may return.
func isCharsetName(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '.' || r == ':' || 'a' <= r && r <= 'z' || '0' <= r && r <= '9')
	})
}

// FuzzFetchBody: a fetched body and its Content-Type header are the remote
// server's, so Fetch's path from them to Document.Text — classify,
// trimPartialRune for a body cut at the size cap, decodeText, toText —
// must, for any header and bytes:
//   - refuse only with ErrBinary or ErrCharset (UNAVAILABLE), saying one of
//     the fixed agent texts, never the server's type or charset name;
//   - accept only one of the three kinds, with a lower-case media type
//     and charset, and a charset read from <meta> made of name characters;
//   - drop at most one incomplete UTF-8 sequence at a cut, never a whole
//     character;
//   - give valid UTF-8 without NUL; keep valid UTF-8 exactly as sent (a
//     UTF-8 BOM aside); read a windows-1252 body one character per byte;
//     and hand text and JSON on unchanged.
func FuzzFetchBody(f *testing.F) {
	for _, s := range []struct {
		header, body string
		truncated    bool
	}{
		{"text/html; charset=utf-8", "<p>caf\u00e9</p>", false},
		{"text/html", `<meta charset="windows-1252"><p>caf` + "\xe9</p>", false},
		{"text/html", `<meta http-equiv="Content-Type" content="text/html; charset=UTF-16"><p>x</p>`, false},
		{"TEXT/Plain; Charset=\" ISO-8859-1 \"", "na\xefve \x80", false},
		{"text/plain; charset=us-ascii", "plain", false},
		{"text/plain; charset=koi8-r", "\xf0\xd2\xc9", false},
		{"text/plain; charset=shift_jis", "ascii only", false},
		{"application/json", `{"a":"\u00e9"}`, true},
		{"application/problem+json; charset=utf-8", "{\"t\":\"\xe2\x82", true},
		{"application/atom+xml", "<feed/>", false},
		{"image/png", "\x89PNG\r\n\x1a\n", false},
		{"text/plain", "\x89PNG\r\n\x1a\n\x00\x00", false},
		{"", "\xef\xbb\xbfhello", false},
		{"", "\xff\xfeh\x00i\x00", false},
		{"", "\xfe\xff\x00h\x00i", false},
		{"text/plain; charset=utf-16le", "h\x00\x00\x00", false},
		{"text/plain; charset=utf-16", "\x00h\xd8\x00", false},
		{"text/html; charset", "<p>x", false},
		{"", "%PDF-1.7", false},
		{"application/octet-stream", "text", false},
	} {
		f.Add(s.header, []byte(s.body), s.truncated)
	}
	f.Fuzz(func(t *testing.T, header string, body []byte, truncated bool) {
		mediaType, charset, k, err := classify(header, body)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, ErrBinary) || Code(err) != violation.Unavailable {
				t.Fatalf("refusal %v is not ErrBinary", err)
			}
			if e.Public() != publicBinary {
				t.Fatalf("agent text %q", e.Public())
			}
			return
		}
		if k != kindText && k != kindHTML && k != kindJSON {
			t.Fatalf("kind %d", k)
		}
		if mediaType != strings.ToLower(mediaType) || charset != strings.ToLower(strings.TrimSpace(charset)) {
			t.Fatalf("media type %q, charset %q not normalised", mediaType, charset)
		}
		if _, params, perr := mime.ParseMediaType(header); k == kindHTML && (perr != nil || params["charset"] == "") && !isCharsetName(charset) {
			t.Fatalf("charset %q read from <meta>", charset)
		}

		b := body
		if truncated {
			b = trimPartialRune(body)
			if !bytes.HasPrefix(body, b) || len(body)-len(b) >= utf8.UTFMax {
				t.Fatalf("trimPartialRune(%q) = %q", body, b)
			}
			if cut := body[len(b):]; len(cut) > 0 && (!utf8.RuneStart(cut[0]) || utf8.FullRune(cut)) {
				t.Fatalf("trimPartialRune dropped %q, not one incomplete sequence", cut)
			}
			if utf8.Valid(body) && len(b) != len(body) {
				t.Fatalf("trimPartialRune cut valid UTF-8 %q", body)
			}
		}

		text, err := decodeText(b, charset)
		if err != nil {
			var e *Error
			switch {
			case !errors.As(err, &e) || Code(err) != violation.Unavailable:
				t.Fatalf("untyped refusal %v", err)
			case errors.Is(err, ErrBinary) && e.Public() != publicNUL, errors.Is(err, ErrCharset) && e.Public() != publicCharset:
				t.Fatalf("agent text %q", e.Public())
			case !errors.Is(err, ErrBinary) && !errors.Is(err, ErrCharset):
				t.Fatalf("refusal %v is neither ErrBinary nor ErrCharset", err)
			}
			return
		}
		if !utf8.ValidString(text) || strings.IndexByte(text, 0) >= 0 {
			t.Fatalf("text %q from %q (%s)", text, b, charset)
		}
		switch charset {
		case "", "utf-8", "utf8", "unicode-1-1-utf-8":
			if utf8.Valid(b) && !isUTF16(charset, b) && text != string(bytes.TrimPrefix(b, []byte{0xEF, 0xBB, 0xBF})) {
				t.Fatalf("valid UTF-8 %q read as %q", b, text)
			}
		case "iso-8859-1", "latin1", "windows-1252", "cp1252":
			if utf8.RuneCountInString(text) != len(b) {
				t.Fatalf("%d bytes of %s read as %d characters", len(b), charset, utf8.RuneCountInString(text))
			}
		}
		out := toText(text, k)
		if !utf8.ValidString(out) || strings.IndexByte(out, 0) >= 0 {
			t.Fatalf("Document.Text %q", out)
		}
		if k != kindHTML && out != text {
			t.Fatalf("%s changed by toText", mediaType)
		}
	})
}

// FuzzUTF16RoundTrip: text a server sends as UTF-16 — either byte order,
// with a BOM or labelled — reads back as the same characters (what
// string([]rune(s)) holds: invalid UTF-8 as U+FFFD), whatever the label
// says when there is a BOM, and through classify without the text sniff
// (UTF-16 is full of NULs by design); text holding U+0000 is ErrBinary.
// (Without a BOM, text that starts with U+FEFF or U+FFFE is not tried: its
// first character reads as one.)
func FuzzUTF16RoundTrip(f *testing.F) {
	for _, s := range []string{"", "hi", "caf\u00e9 \u20ac", "\U0001F600 emoji", "\x00", "a\xffb", "\ufeffbom", "\ufffe", "\u2028<p>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := string([]rune(s))
		units := utf16.Encode([]rune(s))
		enc := func(big, bom bool) []byte {
			var out []byte
			var order binary.AppendByteOrder = binary.LittleEndian
			if big {
				order = binary.BigEndian
			}
			if bom {
				out = order.AppendUint16(out, 0xFEFF)
			}
			for _, u := range units {
				out = order.AppendUint16(out, u)
			}
			return out
		}
		for _, c := range []struct {
			header   string
			big, bom bool
		}{
			{"", true, true}, {"", false, true},
			{"text/plain; charset=utf-16", true, false}, {"text/plain; charset=utf-16be", true, false},
			{"text/plain; charset=utf-16le", false, false},
			{"text/plain; charset=utf-16le", true, true}, {"text/plain; charset=utf-16be", false, true},
			{"text/html; charset=UTF-16", false, true},
		} {
			body := enc(c.big, c.bom)
			if c.header == "" && len(units) == 0 {
				continue // a bare BOM sniffs as text/plain; nothing to read
			}
			if !c.bom && len(units) > 0 && (units[0] == 0xFEFF || units[0] == 0xFFFE) {
				continue // unlabelled by a BOM, a leading U+FEFF is one: the BOM wins (WHATWG)
			}
			_, charset, _, err := classify(c.header, body)
			if err != nil {
				t.Fatalf("%q as %q: classify: %v", s, c.header, err)
			}
			got, err := decodeText(body, charset)
			if strings.ContainsRune(want, 0) {
				if !errors.Is(err, ErrBinary) {
					t.Fatalf("%q as %q: err %v, want ErrBinary", s, c.header, err)
				}
				continue
			}
			if err != nil || got != want {
				t.Fatalf("%q as %q (big %v, BOM %v) read as %q, %v", s, c.header, c.big, c.bom, got, err)
			}
		}
	})
}
