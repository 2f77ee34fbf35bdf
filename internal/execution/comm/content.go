package comm

import (
	"bytes"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// kind is how a body becomes Document.Text.
type kind int

const (
	kindText kind = iota // kept as is
	kindHTML             // converted by HTMLToText
	kindJSON             // kept as is (byte for byte, after charset decoding)
)

// textTypes are the non-text/* media types accepted as text. Everything not
// text/* and not listed here is refused as binary: an allow-list, so a new
// or odd type (application/x-msdownload, model/gltf-binary…) fails closed.
var textTypes = map[string]kind{
	"application/xhtml+xml":    kindHTML,
	"application/json":         kindJSON,
	"application/x-ndjson":     kindJSON,
	"application/xml":          kindText,
	"application/javascript":   kindText,
	"application/ecmascript":   kindText,
	"application/x-javascript": kindText,
	"application/yaml":         kindText,
	"application/x-yaml":       kindText,
	"application/toml":         kindText,
	"application/sql":          kindText,
	"application/graphql":      kindText,
}

// classify decides from the Content-Type header (or, when it is missing or
// unreadable, from the body's first bytes) how the body is read, and
// returns the media type and charset. A binary type is ErrBinary.
func classify(header string, body []byte) (mediaType, charset string, k kind, err error) {
	mediaType, params, perr := mime.ParseMediaType(header)
	if header == "" || perr != nil {
		sniffed := http.DetectContentType(body)
		mediaType, params, _ = mime.ParseMediaType(sniffed)
		if !strings.HasPrefix(mediaType, "text/") {
			return mediaType, "", 0, binaryErr(mediaType)
		}
		// DetectContentType's charset is a guess from a BOM or a default;
		// decodeText reads BOMs and validates UTF-8 itself.
		delete(params, "charset")
	}
	mediaType = strings.ToLower(mediaType)
	charset = strings.ToLower(strings.TrimSpace(params["charset"]))
	listed, ok := textTypes[mediaType]
	switch {
	case ok:
		k = listed
	case mediaType == "text/html":
		k = kindHTML
	case strings.HasPrefix(mediaType, "text/"):
		k = kindText
	case strings.HasPrefix(mediaType, "application/") && strings.HasSuffix(mediaType, "+json"):
		k = kindJSON
	case strings.HasPrefix(mediaType, "application/") && strings.HasSuffix(mediaType, "+xml"):
		k = kindText
	default:
		return mediaType, charset, 0, binaryErr(mediaType)
	}
	if k == kindHTML && charset == "" {
		charset = metaCharset(body)
		if strings.HasPrefix(charset, "utf-16") {
			charset = "utf-8" // a <meta> could only be read because the bytes are not UTF-16 (WHATWG)
		}
	}
	// A server can label anything text/html. Unless the text is UTF-16
	// (which is full of NULs by design), the bytes must also look like
	// text: a PNG served as text/plain is still a PNG.
	if !isUTF16(charset, body) {
		if s := http.DetectContentType(body); !strings.HasPrefix(s, "text/") {
			return mediaType, charset, 0, binaryErr(s)
		}
	}
	return mediaType, charset, k, nil
}

// binaryErr refuses non-text content. The media type is the server's text
// (or a sniffed guess), so it goes to the private cause, not to the agent's
// unfenced error text (issue 10, item 4).
func binaryErr(mediaType string) *Error {
	return newErr("fetch", ErrBinary, "the content type is not text; only HTML, JSON and text are returned", fmt.Errorf("content type %q", mediaType))
}

// metaCharset finds <meta charset=…> or <meta http-equiv… content="…;
// charset=…"> in the first KiB, which is where HTML requires it.
func metaCharset(body []byte) string {
	head := body[:min(len(body), 1024)]
	lower := bytes.ToLower(head)
	i := bytes.Index(lower, []byte("<meta"))
	for i >= 0 {
		rest := lower[i:]
		end := bytes.IndexByte(rest, '>')
		if end < 0 {
			end = len(rest)
		}
		tag := rest[:end]
		if j := bytes.Index(tag, []byte("charset=")); j >= 0 {
			v := bytes.TrimLeft(tag[j+len("charset="):], `"' `)
			n := 0
			for n < len(v) && (v[n] == '-' || v[n] == '_' || v[n] == '.' || v[n] == ':' ||
				'a' <= v[n] && v[n] <= 'z' || '0' <= v[n] && v[n] <= '9') {
				n++
			}
			return string(v[:n])
		}
		next := bytes.Index(rest[1:], []byte("<meta"))
		if next < 0 {
			break
		}
		i += next + 1
	}
	return ""
}

func isUTF16(charset string, body []byte) bool {
	switch charset {
	case "utf-16", "utf-16le", "utf-16be":
		return true
	case "":
		return bytes.HasPrefix(body, []byte{0xFE, 0xFF}) || bytes.HasPrefix(body, []byte{0xFF, 0xFE})
	}
	return false
}

// decodeText turns the body into valid UTF-8. UTF-8 (with or without a BOM,
// invalid sequences replaced by U+FFFD), US-ASCII, ISO-8859-1 and
// windows-1252 (decoded as windows-1252, as browsers do for all three) and
// UTF-16 are supported. With no declared charset, valid UTF-8 is UTF-8 and
// anything else is read as windows-1252 (best effort). Any other declared
// charset is accepted only if the body is pure ASCII, else ErrCharset. Text
// that still holds NUL after decoding is ErrBinary.
func decodeText(body []byte, charset string) (string, error) {
	var s string
	switch charset {
	case "utf-16", "utf-16le", "utf-16be":
		s = decodeUTF16(body, charset)
	case "":
		if isUTF16("", body) {
			s = decodeUTF16(body, "utf-16")
		} else if utf8.Valid(body) {
			s = string(bytes.TrimPrefix(body, []byte{0xEF, 0xBB, 0xBF}))
		} else {
			s = decode1252(body)
		}
	case "utf-8", "utf8", "unicode-1-1-utf-8":
		s = strings.ToValidUTF8(string(bytes.TrimPrefix(body, []byte{0xEF, 0xBB, 0xBF})), "\uFFFD")
	case "us-ascii", "ascii", "iso-8859-1", "iso8859-1", "iso_8859-1", "latin1", "latin-1", "l1",
		"windows-1252", "cp1252", "x-cp1252", "cp819", "ibm819":
		if (charset == "us-ascii" || charset == "ascii") && utf8.Valid(body) {
			s = string(body)
		} else {
			s = decode1252(body)
		}
	default:
		if !isASCII(body) {
			// The charset name is the server's text: private cause only.
			return "", newErr("fetch", ErrCharset, "the declared charset is not supported (UTF-8, UTF-16, ISO-8859-1 and windows-1252 are)", fmt.Errorf("charset %q", charset))
		}
		s = string(body)
	}
	if strings.IndexByte(s, 0) >= 0 {
		return "", newErr("fetch", ErrBinary, "the content holds NUL bytes, so it is not text", nil)
	}
	return s, nil
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// cp1252 maps bytes 0x80–0x9F, where windows-1252 differs from ISO-8859-1.
// Unassigned positions map to themselves (C1 controls), as WHATWG does.
var cp1252 = [32]rune{
	0x20AC, 0x81, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021,
	0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x8D, 0x017D, 0x8F,
	0x90, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014,
	0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x9D, 0x017E, 0x0178,
}

func decode1252(b []byte) string {
	var sb strings.Builder
	sb.Grow(len(b) + len(b)/8)
	for _, c := range b {
		switch {
		case c < 0x80:
			sb.WriteByte(c)
		case c < 0xA0:
			sb.WriteRune(cp1252[c-0x80])
		default:
			sb.WriteRune(rune(c))
		}
	}
	return sb.String()
}

// decodeUTF16 decodes UTF-16; a BOM wins over the label, and an unlabelled
// "utf-16" without a BOM is big-endian (RFC 2781). Unpaired surrogates
// become U+FFFD; an odd trailing byte is dropped.
func decodeUTF16(b []byte, charset string) string {
	big := charset != "utf-16le"
	switch {
	case bytes.HasPrefix(b, []byte{0xFE, 0xFF}):
		big, b = true, b[2:]
	case bytes.HasPrefix(b, []byte{0xFF, 0xFE}):
		big, b = false, b[2:]
	}
	u := make([]uint16, len(b)/2)
	for i := range u {
		if big {
			u[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
		} else {
			u[i] = uint16(b[2*i+1])<<8 | uint16(b[2*i])
		}
	}
	return string(utf16.Decode(u))
}

// toText converts a decoded body to Document.Text.
func toText(s string, k kind) string {
	if k == kindHTML {
		return HTMLToText(s)
	}
	return s
}
