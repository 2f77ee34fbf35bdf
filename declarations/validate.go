package declarations

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/internal/kit/urlnorm"
	"github.com/airlock-dev/airlock/internal/policy/redact"
)

// Validate reports the first invalid field of n as a *FieldError wrapping
// ErrInvalid, checking in this order: operation; parameters.url, .query,
// .source; justification.user_request, .missing_knowledge, .expected_use.
//
// The rules, and the attack each one blocks:
//
//   - operation is comm.fetch, comm.search or comm.query; a field the
//     operation does not take must be empty, so an approval never covers
//     a parameter the approver was not shown.
//   - comm.fetch: url is required, at most 2048 bytes, printable ASCII
//     (a look-alike Unicode host cannot pass for another in front of the
//     approver), absolute http or https with a host, no backslash (parsers
//     disagree on it), no user:password@ (credentials would be written to
//     the audit trail and shown to approvers), a host of letters, digits,
//     '.', '-' and '_' or a bracketed IP literal without a zone, a
//     port, if any, in 1–65535, and no credential in the query
//     ("access_token=…", "api_key=…", a bearer token or JWT as a value:
//     it would be stored and shown to approvers). TestValidateFetch,
//     TestValidateQueryCredentials.
//   - comm.search: query is required text of at most 512 bytes; source is
//     optional.
//   - comm.query: query is required SQL text of at most 8 KiB; source is
//     required. Whether the SQL only reads is the executor's business: it
//     opens the database read-only.
//   - source, where present, matches ^[a-z0-9][a-z0-9_.-]{0,63}$: a
//     configured name, never a path or a DSN.
//   - Every justification field and every query is text: required, not
//     only white space, within its limit, valid UTF-8, and free of control
//     characters but \n and \t (no NUL, no CR, no ESC), of invisible and
//     bidirectional formatting characters (Unicode Cf: zero-width, bidi
//     overrides, tag characters; and other default-ignorable code points),
//     of U+2028 and U+2029, and of variation selectors but a single one
//     after a visible character. The person approving must see exactly
//     what is there (Trojan Source, ASCII smuggling). TestValidateText.
func (n *Need) Validate() error {
	if n == nil {
		return invalid("", "missing")
	}
	if err := n.validateParameters(); err != nil {
		return err
	}
	j := &n.Justification
	for _, f := range []struct{ name, value string }{
		{"justification.user_request", j.UserRequest},
		{"justification.missing_knowledge", j.MissingKnowledge},
		{"justification.expected_use", j.ExpectedUse},
	} {
		if err := checkText(f.name, f.value, MaxJustificationBytes); err != nil {
			return err
		}
	}
	return nil
}

func (n *Need) validateParameters() error {
	p := &n.Parameters
	if n.Operation != OpMCP && (p.Upstream != "" || p.Tool != "" || p.Arguments != nil) {
		return invalid("parameters.upstream", "upstream, tool and arguments are used by comm.mcp only")
	}
	switch n.Operation {
	case OpMCP:
		return p.validateMCP()
	case OpFetch:
		if err := checkURL(p.URL); err != nil {
			return err
		}
		if p.Query != "" {
			return invalid("parameters.query", "not used by comm.fetch: the URL says what to fetch")
		}
		if p.Source != "" {
			return invalid("parameters.source", "not used by comm.fetch")
		}
	case OpSearch, OpQuery:
		if p.URL != "" {
			return invalid("parameters.url", "not used by "+string(n.Operation)+": only comm.fetch takes a URL")
		}
		limit := MaxSearchQueryBytes
		if n.Operation == OpQuery {
			limit = MaxSQLBytes
		}
		if err := checkText("parameters.query", p.Query, limit); err != nil {
			return err
		}
		if p.Source == "" && n.Operation == OpQuery {
			return invalid("parameters.source", "required: the name of the configured database to query")
		}
		if p.Source != "" {
			return checkSource(p.Source)
		}
	case "":
		return invalid("operation", "required: one of comm.fetch, comm.search, comm.query, comm.mcp")
	default:
		return invalid("operation", "unknown operation: want comm.fetch, comm.search, comm.query or comm.mcp")
	}
	return nil
}

// checkURL applies the comm.fetch url rules (see Validate).
func checkURL(s string) error {
	const field = "parameters.url"
	if s == "" {
		return invalid(field, "required by comm.fetch")
	}
	if len(s) > MaxURLBytes {
		return invalid(field, fmt.Sprintf("longer than %d bytes", MaxURLBytes))
	}
	for i := 0; i < len(s); i++ {
		switch b := s[i]; {
		case b >= utf8.RuneSelf:
			return invalid(field, fmt.Sprintf("non-ASCII byte at byte %d: percent-encode the path and write the host in its xn-- form", i))
		case b <= ' ' || b == 0x7f:
			return invalid(field, fmt.Sprintf("space or control character at byte %d: percent-encode it", i))
		case b == '\\':
			return invalid(field, fmt.Sprintf("backslash at byte %d: URL parsers disagree on it; percent-encode it", i))
		}
	}
	// The error text of url.Parse quotes the input; it is not passed on.
	u, err := url.Parse(s)
	if err != nil {
		return invalid(field, "not a valid URL")
	}
	switch {
	case u.Scheme == "" || u.Opaque != "" || u.Host == "":
		return invalid(field, "must be an absolute URL: http(s)://host/...")
	case u.Scheme != "http" && u.Scheme != "https":
		return invalid(field, "scheme must be http or https")
	case u.User != nil:
		return invalid(field, "must not carry user information (user:password@): it would be recorded and shown to approvers")
	}
	if err := checkHost(u); err != nil {
		return invalid(field, err.Error())
	}
	return checkQueryCredentials(u.RawQuery)
}

// checkQueryCredentials refuses a URL whose query carries a credential
// ("?access_token=…", "&api_key=…"; see redact.SecretQueryParam). The need
// is stored as declared and executed from the store, possibly by another
// process after an approval, so a secret in it could not be redacted
// without breaking the fetch: it would sit in the declarations table and
// be shown to approvers (issue 10, item 3). The agent must not hold such
// credentials in the first place; the refusal names only parameters from
// redact's own list, never other input.
func checkQueryCredentials(query string) error {
	for i, pair := range strings.Split(query, "&") {
		name, value, _ := strings.Cut(pair, "=")
		if !redact.SecretQueryParam(name, value) {
			continue
		}
		what := fmt.Sprintf("query parameter %d", i+1)
		if n, err := url.QueryUnescape(name); err == nil && redact.SecretQueryParam(n, "") && len(n) <= 32 && isPrintableASCII(n) {
			what = fmt.Sprintf("query parameter %q", strings.ToLower(n))
		}
		return invalid("parameters.url", what+" carries a credential: Airlock does not store or send credentials given in URLs")
	}
	// The audit's reading too (redact.Query): a '?' inside a value starts
	// a parameter there ("?next=https://b.test/?token=abc"), so what the
	// trail would hash must not sit in clear in the declarations table.
	if redact.Query("?"+query, redact.Masked) != "?"+query {
		return invalid("parameters.url", "the query carries a credential inside a parameter's value: Airlock does not store or send credentials given in URLs")
	}
	return nil
}

func isPrintableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// checkHost accepts a DNS-style name or a bracketed IPv6 literal and an
// optional port. IPv4 literals pass as names; which addresses may be
// reached is the fetcher's decision, made when it connects.
func checkHost(u *url.URL) error {
	host := u.Hostname()
	switch {
	case host == "":
		return fmt.Errorf("has no host")
	case strings.HasPrefix(u.Host, "["):
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return fmt.Errorf("bracketed host must be an IPv6 address without a zone")
		}
	default:
		if !urlnorm.PlainHostName(host) {
			return fmt.Errorf("host may hold only letters, digits, '.', '-' and '_' (or be a bracketed IPv6 address)")
		}
	}
	if strings.HasSuffix(u.Host, ":") {
		return fmt.Errorf("empty port")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("port must be 1-65535")
		}
	}
	return nil
}

// checkSource applies ^[a-z0-9][a-z0-9_.-]{0,63}$ without a regexp.
func checkSource(s string) error {
	const field = "parameters.source"
	if len(s) > MaxSourceBytes {
		return invalid(field, fmt.Sprintf("longer than %d bytes", MaxSourceBytes))
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		ok := isLowerAlnum(b) || (i > 0 && (b == '_' || b == '.' || b == '-'))
		if !ok {
			return invalid(field, "must be a configured source name: lower-case letters, digits, '_', '.' and '-', starting with a letter or digit")
		}
	}
	return nil
}

func isLowerAlnum(b byte) bool { return 'a' <= b && b <= 'z' || '0' <= b && b <= '9' }
func isAlnum(b byte) bool      { return isLowerAlnum(b) || 'A' <= b && b <= 'Z' }

// checkText applies the text rules (see Validate) to a required field.
func checkText(field, s string, limit int) error {
	switch {
	case s == "":
		return invalid(field, "required")
	case len(s) > limit:
		return invalid(field, fmt.Sprintf("longer than %d bytes", limit))
	case !utf8.ValidString(s):
		return invalid(field, "not valid UTF-8")
	case strings.TrimSpace(s) == "":
		return invalid(field, "required: only white space")
	}
	if i, why := badRune(s); why != "" {
		return invalid(field, fmt.Sprintf("%s at byte %d", why, i))
	}
	return nil
}

// checkLine applies the text rules to an optional single-line value of a
// Manager call (an actor, a rule id), which may hold no \n or \t either.
func checkLine(field, s string, limit int) error {
	if s == "" {
		return nil
	}
	if err := checkText(field, s, limit); err != nil {
		return err
	}
	if i := strings.IndexAny(s, "\n\t"); i >= 0 {
		return invalid(field, fmt.Sprintf("line break or tab at byte %d", i))
	}
	return nil
}

// checkOptionalText is checkText for a field that may be empty.
func checkOptionalText(field, s string, limit int) error {
	if s == "" {
		return nil
	}
	return checkText(field, s, limit)
}

// badRune returns the byte offset of the first character the text rules
// refuse, and why; why is "" when there is none. s is valid UTF-8.
func badRune(s string) (int, string) {
	prevVisible := false
	for i, r := range s {
		switch {
		case r == '\n' || r == '\t':
			prevVisible = false
		case r == 0:
			return i, "NUL character"
		case unicode.Is(unicode.Cc, r):
			return i, `control character (only \n and \t are allowed)`
		case r == '\u2028' || r == '\u2029':
			return i, "line or paragraph separator (use \\n)"
		case unicode.Is(unicode.Variation_Selector, r):
			// One selector after a visible character picks an emoji or
			// text form; more, or one elsewhere, can carry hidden bytes.
			if !prevVisible || r >= 0xE0100 {
				return i, "variation selector not right after a visible character"
			}
			prevVisible = false
		case unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r):
			return i, "invisible or bidirectional formatting character"
		default:
			prevVisible = !unicode.IsSpace(r)
		}
	}
	return 0, ""
}
