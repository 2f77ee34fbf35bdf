// Package urlnorm puts an http(s) URL in the one normal form that the
// policy judges, the approver is shown, the declarations table stores and
// the fetcher requests.
//
// A path rule such as `url.path startsWith "/gated/"` is only as good as the
// agreement between the string it reads and the resource the origin serves.
// Without normalisation "/x/../gated/secret.txt", "//gated/secret.txt" and
// "/%67ated/secret.txt" all name /gated/secret.txt to a typical server while
// reading as something else to the rule (issue 10, item 1). [Normalize]
// removes that gap; every caller that judges or sends a URL uses its output
// and nothing else (TestNormalize, FuzzNormalize: idempotent, and what is
// sent — url.Parse(n).String() — is byte for byte what was judged).
//
// The normal form, after RFC 3986 §6.2.2 and §6.2.3:
//
//   - scheme and host in lower case; an empty port and the scheme's default
//     port (443 for https, 80 for http) removed; the fragment (never sent)
//     dropped; an empty query ("?" alone) dropped; an empty path is "/";
//   - in path and query, percent-encoded unreserved characters
//     (ALPHA DIGIT - . _ ~) decoded, every other escape in upper-case hex,
//     and every byte outside unreserved, sub-delims, ':' and '@' (and '/'
//     and '?' in the query) percent-encoded;
//   - in the path, runs of '/' collapsed to one and dot segments removed
//     (RFC 3986 §5.2.4).
//
// Refused ([ErrInvalid]), because no normal form could mean the same thing
// to every server: URLs that do not parse, relative or opaque URLs, URLs
// without a host or with user info, malformed escapes in the query, and
// paths that still hide a dot segment, an empty segment or a backslash
// separator once decoded ("/x/..%2Fgated", "/%2Fgated", "/x/..%5Cgated",
// and "..;" segments, which Tomcat-style servers read as ".."). The checks
// on the decoded path are what make the decoded url.path the policy reads
// safe to judge: whether or not a server decodes %2F, it cannot resolve the
// path to somewhere the policy did not see.
//
// A host must be ASCII letters, digits, '-', '_' and '.' (or a bracketed
// IPv6 literal): net/http maps a host through IDNA before it dials, so a
// full-width or otherwise mapped spelling would be judged as one name and
// dialled as another. An internationalised name is written as its xn--
// A-label, which is what is judged and what is dialled.
//
// Limits: an origin that decodes twice ("%252e%252e" read as "..") is not
// modelled.
package urlnorm

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// ErrInvalid is wrapped by every refusal of [Normalize]. Messages never
// repeat the input, so they may be shown to the agent.
var ErrInvalid = errors.New("URL cannot be normalised")

// Normalize returns the normal form of an absolute URL with a host (see the
// package documentation), or an error wrapping ErrInvalid.
func Normalize(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse quotes its input; the cause is not kept.
		return "", fmt.Errorf("the URL does not parse: %w", ErrInvalid)
	}
	switch {
	case u.Scheme == "" || u.Opaque != "":
		return "", fmt.Errorf("want an absolute URL such as https://host/path: %w", ErrInvalid)
	case u.User != nil:
		return "", fmt.Errorf("the URL carries user info: %w", ErrInvalid)
	case u.Host == "":
		return "", fmt.Errorf("the URL has no host: %w", ErrInvalid)
	}
	scheme := strings.ToLower(u.Scheme)
	host, err := normHost(scheme, u)
	if err != nil {
		return "", err
	}
	path, err := escapes(u.EscapedPath(), false)
	if err != nil {
		return "", err
	}
	path = removeDots(path)
	decoded, err := url.PathUnescape(path)
	if err != nil {
		return "", fmt.Errorf("the path holds a malformed escape: %w", ErrInvalid)
	}
	if err := checkDecoded(decoded); err != nil {
		return "", err
	}
	query, err := escapes(u.RawQuery, true)
	if err != nil {
		return "", err
	}
	v := &url.URL{Scheme: scheme, Host: host, Path: decoded, RawPath: path, RawQuery: query}
	out := v.String()
	// The fetcher sends url.Parse(out).String(): it must be out itself, and
	// its path must be the one checked above.
	w, err := url.Parse(out)
	if err != nil || w.String() != out || w.EscapedPath() != path || w.Path != decoded {
		return "", fmt.Errorf("the URL has no stable normal form: %w", ErrInvalid)
	}
	return out, nil
}

// normHost lower-cases the host and drops an empty or default port. A
// colon in a host that is not a bracketed IPv6 literal ("h::") is refused:
// its reading differs between parsers.
func normHost(scheme string, u *url.URL) (string, error) {
	name, port := strings.ToLower(u.Hostname()), u.Port()
	bracketed := strings.HasPrefix(u.Host, "[")
	if name == "" || !bracketed && strings.Contains(name, ":") {
		return "", fmt.Errorf("the URL has no usable host: %w", ErrInvalid)
	}
	if bracketed {
		name = "[" + name + "]"
	} else if !PlainHostName(name) {
		// net/http maps a host through IDNA (UTS #46) before it dials:
		// "ｄeny.example.org" (full-width d, or its %EF%BD%84 escape) is
		// dialled as deny.example.org, while the policy would judge the
		// string as written and match no deny_hosts entry — a redirect's
		// Location reached a denied host this way. A host is letters,
		// digits, '-', '_' and '.' in ASCII; an internationalised name is
		// written as its xn-- A-label.
		return "", fmt.Errorf("the host holds a character outside ASCII letters, digits, '-', '_' and '.' (write an internationalised name as its xn-- form): %w", ErrInvalid)
	}
	if port == "" || scheme == "https" && port == "443" || scheme == "http" && port == "80" {
		return name, nil
	}
	return name + ":" + port, nil
}

// escapes normalises percent-encoding in an escaped path or a raw query:
// unreserved characters are decoded, other escapes upper-cased, and bytes
// that may not appear literally are encoded. A '%' not followed by two hex
// digits is refused: servers disagree on what it means.
func escapes(s string, query bool) (string, error) {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return "", fmt.Errorf("a malformed %%-escape at byte %d: %w", i, ErrInvalid)
			}
			d := unhex(s[i+1])<<4 | unhex(s[i+2])
			if unreserved(d) {
				b.WriteByte(d)
			} else {
				writeEscape(&b, d)
			}
			i += 2
		case unreserved(c) || subDelim(c) || c == ':' || c == '@' || c == '/' || query && c == '?':
			b.WriteByte(c)
		default:
			writeEscape(&b, c)
		}
	}
	return b.String(), nil
}

// removeDots collapses repeated slashes and removes "." and ".." segments
// from an absolute escaped path (RFC 3986 §5.2.4; ".." at the root stays at
// the root). A trailing "/", ".", ".." or empty segment leaves a trailing
// slash, as the RFC's algorithm does.
func removeDots(p string) string {
	if p == "" {
		return "/"
	}
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	out := make([]string, 0, len(segs))
	trailing := false
	for i, s := range segs {
		last := i == len(segs)-1
		switch s {
		case "":
			// "//" collapses (TestNormalize "doubled slash").
		case ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, s)
			continue
		}
		trailing = trailing || last
	}
	r := "/" + strings.Join(out, "/")
	if trailing && len(out) > 0 {
		r += "/"
	}
	return r
}

// checkDecoded refuses a path that, once decoded, still holds what
// removeDots removes at the escaped level: an encoded '/' or '\' can make
// "..%2F" a dot segment, or "/%2F" a doubled slash, to a server that
// decodes before resolving. ";params" are ignored when spotting a dot
// segment ("..;/" is ".." to Tomcat).
func checkDecoded(p string) error {
	if strings.Contains(p, `\`) {
		return fmt.Errorf("the path holds an encoded backslash: %w", ErrInvalid)
	}
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, seg := range segs {
		name, _, _ := strings.Cut(seg, ";")
		switch {
		case seg == "" && i < len(segs)-1:
			return fmt.Errorf("the path holds an empty segment once decoded: %w", ErrInvalid)
		case name == "." || name == "..":
			return fmt.Errorf("the path holds a dot segment once decoded: %w", ErrInvalid)
		}
	}
	return nil
}

func writeEscape(b *strings.Builder, c byte) {
	const hex = "0123456789ABCDEF"
	b.WriteByte('%')
	b.WriteByte(hex[c>>4])
	b.WriteByte(hex[c&15])
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

func subDelim(c byte) bool { return strings.IndexByte("!$&'()*+,;=", c) >= 0 }

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}
