package provenance

import (
	"net/url"
	"regexp"
	"strings"
)

// Kind is what a value, or a part of one, looks like.
type Kind string

const (
	KindIBAN       Kind = "iban"       // GB29 NWBK 6016 1331 9268 19
	KindEmail      Kind = "email"      // jay@google.com
	KindURL        Kind = "url"        // https://host/path, www.host/path, host/path
	KindHost       Kind = "host"       // secure-systems-252.com
	KindPhone      Kind = "phone"      // +44 20 7946 0958, (555) 123-4567
	KindAmount     Kind = "amount"     // 1,000.50, $100, 100.00 EUR, a JSON number
	KindDate       Kind = "date"       // 2024-03-15, 15/03/2024, March 15, 2024
	KindHandle     Kind = "handle"     // #general, @alice
	KindFile       Kind = "file"       // report.pdf
	KindIdentifier Kind = "identifier" // a run of letters, digits and ._-/ holding a digit: INV-2024-0042
	KindText       Kind = "text"       // several words
	KindWord       Kind = "word"       // one word without digits
	KindBool       Kind = "boolean"
	KindNull       Kind = "null"
	KindUnindexed  Kind = "unindexed" // only in a HowUnindexed Match
)

// tokenRE finds the structured tokens of a folded (lower-case) text.
// Alternatives are tried in order at the leftmost position, so an e-mail
// is not read as a handle and a URL not as a host. RE2: linear time.
var tokenRE = regexp.MustCompile(strings.Join([]string{
	`(?P<url>(?:[a-z][a-z0-9+.\-]{1,15}://|www\.)[^\s<>"'` + "`" + `]+)`,
	`(?P<email>(?:mailto:)?[\p{L}\p{N}._%+\-]+@[\p{L}\p{N}\-]+(?:\.[\p{L}\p{N}\-]+)+)`,
	`(?P<iban>\b[a-z]{2}[0-9]{2}(?:[a-z0-9]{11,30}|(?:[ \-][a-z0-9]{4}){2,7}(?:[ \-][a-z0-9]{1,4})?)\b)`,
	`(?P<phone>\+[0-9][0-9 .\-()]{5,20}[0-9]|\([0-9]{3}\) ?[0-9]{3}[\-. ][0-9]{4}\b|\b[0-9]{3}[\-.][0-9]{3}[\-.][0-9]{4}\b)`,
	`(?P<host>\b(?:[\p{L}\p{N}](?:[\p{L}\p{N}\-]*[\p{L}\p{N}])?\.)+\p{L}{2,24}(?::[0-9]{1,5})?(?:/[^\s<>"'` + "`" + `]*)?)`,
	`(?P<handle>(?:^|[^\p{L}\p{N}_])[#@][\p{L}\p{N}_][\p{L}\p{N}_.\-]*)`,
	`(?P<ident>[\p{L}\p{N}][\p{L}\p{N}_.\-/]*[\p{L}\p{N}])`,
}, "|"))

var tokenKinds = func() []Kind {
	names := tokenRE.SubexpNames()
	out := make([]Kind, len(names))
	for i, n := range names {
		out[i] = map[string]Kind{"url": KindURL, "email": KindEmail, "iban": KindIBAN,
			"phone": KindPhone, "host": KindHost, "handle": KindHandle, "ident": KindIdentifier}[n]
	}
	return out
}()

// token is one structured part of a folded text.
type token struct {
	kind       Kind
	text       string // as found, trailing punctuation trimmed
	start, end int    // byte offsets of text in the folded string
}

// tokens returns the structured tokens of the folded text s, at most limit.
func tokens(s string, limit int) []token {
	var out []token
	for _, m := range tokenRE.FindAllStringSubmatchIndex(s, limit) {
		for g := 1; g < len(tokenKinds); g++ {
			if m[2*g] < 0 {
				continue
			}
			start, end := m[2*g], m[2*g+1]
			kind := tokenKinds[g]
			if kind == KindHandle && s[start] != '#' && s[start] != '@' {
				start++ // the class before the sigil
				for s[start] != '#' && s[start] != '@' {
					start++
				}
			}
			if kind == KindEmail && strings.HasPrefix(s[start:end], "mailto:") {
				start += len("mailto:")
			}
			text := trimTrailing(s[start:end])
			kind = refine(kind, text)
			if kind != "" {
				out = append(out, token{kind, text, start, start + len(text)})
			}
			break
		}
	}
	return out
}

// trimTrailing drops the punctuation that ends a sentence after an
// address ("see www.x.com/a)." → "www.x.com/a"); a closing bracket stays
// when the token opened one.
func trimTrailing(t string) string {
	for t != "" {
		c := t[len(t)-1]
		switch {
		case strings.IndexByte(".,;:!?'\"*_-", c) >= 0:
		case c == ')' && strings.Count(t, "(") < strings.Count(t, ")"):
		case c == ']' && strings.Count(t, "[") < strings.Count(t, "]"):
		default:
			return t
		}
		t = t[:len(t)-1]
	}
	return t
}

// fileExt lists the extensions that make "name.ext" a file, not a host.
var fileExt = map[string]bool{"pdf": true, "txt": true, "csv": true, "doc": true, "docx": true,
	"xls": true, "xlsx": true, "ppt": true, "pptx": true, "png": true, "jpg": true, "jpeg": true,
	"gif": true, "json": true, "md": true, "zip": true, "gz": true, "tar": true, "yaml": true,
	"yml": true, "xml": true, "html": true, "htm": true, "log": true, "eml": true, "odt": true,
	"py": true, "go": true, "js": true, "ts": true, "sh": true, "exe": true, "bin": true, "tgz": true}

// refine settles a token's kind from its text; "" drops it.
func refine(k Kind, t string) Kind {
	switch k {
	case KindHost:
		if strings.Contains(t, "/") {
			return KindURL
		}
		if fileExt[t[strings.LastIndexByte(t, '.')+1:]] {
			return KindFile
		}
	case KindIdentifier:
		if !strings.ContainsAny(t, "0123456789") {
			return "" // words are matched as text, not one by one
		}
	case KindHandle:
		if len(t) < 3 {
			return ""
		}
	}
	return k
}

// Normalize returns the exact comparison key of a value of kind k, the
// form in which a value is compared with trusted sources, and whether s is
// a well-formed value of that kind. It is meaning-preserving: look-alike
// characters are NOT folded (see Skeleton for that), so two values with
// the same key reach the same destination.
//
//	iban       ASCII spaces and dashes removed, upper case: GB29NWBK60161331926819
//	email      lower case (dots and +tags are kept: j.ay@ and jay+x@ differ)
//	url, host  lower case; scheme, userinfo, fragment, default port, trailing
//	           dot of the host and a trailing "/" dropped; unreserved
//	           percent-escapes of the path decoded: www.x.com/a
//	phone      the digits, with a leading "+" if present
//	amount     decimal without separators, sign or currency; no trailing zeros: 1000.5
//	date       YYYY-MM-DD (the first reading of an ambiguous 03/04/2024)
//	handle     sigil and name, lower case: #general
//	file, identifier, text, word  lower case, white space collapsed
func Normalize(k Kind, s string) (string, bool) {
	s = strictFold(s)
	switch k {
	case KindIBAN:
		s = strings.ToUpper(strings.NewReplacer(" ", "", "-", "").Replace(s))
		return s, ibanRE.MatchString(s)
	case KindURL, KindHost:
		return addrKey(s)
	case KindPhone:
		d := digitsOnly(s)
		if strings.HasPrefix(s, "+") {
			d = "+" + d
		}
		return d, len(d) >= 7
	case KindAmount, KindDate:
		ks := wholeReadings(k, s)
		if len(ks) == 0 {
			return "", false
		}
		return ks[0], true
	case KindEmail:
		s = strings.TrimPrefix(s, "mailto:")
		return s, emailRE.MatchString(s)
	case KindHandle:
		return s, len(s) > 1 && (s[0] == '#' || s[0] == '@')
	}
	return s, s != ""
}

var (
	ibanRE  = regexp.MustCompile(`^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$`)
	emailRE = regexp.MustCompile(`^[^@\s]+@[^@\s]+\.[^@\s]+$`)
)

// addrKey is the exact key of a URL or a bare host: host[:port]/path?query.
func addrKey(s string) (string, bool) {
	raw := s
	if !strings.Contains(s, "://") {
		raw = "http://" + s
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return s, false
	}
	host := strings.TrimSuffix(u.Hostname(), ".")
	if p := u.Port(); p != "" && !(p == "80" && u.Scheme == "http" || p == "443" && u.Scheme == "https") {
		host += ":" + p
	}
	// Only unreserved escapes are decoded (RFC 3986 6.2.2.2): %41 is A,
	// but %2F stays, as decoding it would change the path.
	key := host + strings.TrimSuffix(decodeUnreserved(u.EscapedPath()), "/")
	if u.RawQuery != "" {
		key += "?" + u.RawQuery
	}
	return key, true
}

func digitsOnly(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// decodeUnreserved decodes the %XX escapes of ALPHA, DIGIT, "-", ".", "_", "~".
func decodeUnreserved(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '%' && i+2 < len(p) && isHex(p[i+1]) && isHex(p[i+2]) {
			c := unhex(p[i+1])<<4 | unhex(p[i+2])
			if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~", c) >= 0 {
				b.WriteByte(c)
				i += 2
				continue
			}
		}
		b.WriteByte(p[i])
	}
	return b.String()
}
