package redact

import (
	"net/url"
	"strings"
)

// Credentials in URL query strings ("?access_token=…", "&api_key=…") are
// the commonest way a secret rides inside an otherwise harmless string, and
// a URL is recorded in the audit trail, the declarations table and the
// operator's approvals list (issue 10, item 3). [SecretQueryParam] says
// which parameters hold one; [Query] rewrites their values wherever they
// appear in a text.

// secretParams are query parameter names that carry a credential (compared
// lower-case, after percent-decoding).
var secretParams = map[string]bool{
	"token": true, "access_token": true, "refresh_token": true, "id_token": true, "auth": true,
	"auth_token": true, "authorization": true, "api_key": true, "apikey": true, "api-key": true,
	"key": true, "client_secret": true, "secret": true, "password": true, "passwd": true, "pwd": true,
	"pass": true, "signature": true, "sig": true, "session": true, "sessionid": true, "session_id": true,
	"sid": true, "jwt": true, "bearer": true, "x-amz-signature": true, "x-amz-credential": true,
	"x-amz-security-token": true, "x-goog-signature": true, "x-goog-credential": true,
}

// secretSuffixes mark a parameter name as a credential when it ends with
// one ("csrftoken", "github_token", "subscription-key"): precise enough
// to refuse on, unlike a substring match ("author" is not "auth").
var secretSuffixes = []string{
	"token", "secret", "password", "passwd", "apikey", "api_key", "api-key", "access_key",
	"secret_key", "private_key", "subscription-key", "signature", "credential", "credentials",
}

// SecretQueryParam reports whether a query parameter, by its name or by its
// value, holds a credential. name and value are as they appear in the URL
// (percent-encoded); both are decoded first, so "access%5Ftoken" is caught.
func SecretQueryParam(name, value string) bool {
	n := strings.ToLower(unescape(name))
	if secretParams[n] {
		return true
	}
	for _, s := range secretSuffixes {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	return secretValue(unescape(value))
}

func unescape(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

// Query returns text with the value of every credential-bearing query
// parameter (see SecretQueryParam) replaced by repl(value). It scans for
// "?name=value", "&name=value", "#name=value" and ";name=value" anywhere
// in text, so it works on a bare URL, on a URL quoted inside an error
// message, on an OAuth-style fragment ("#access_token=…") and on the ';'
// that older servers split parameters on ("?q=1;token=…",
// "/a;session=…"). A value ends at '&', white space, a quote or an angle
// bracket — not at ';', so a secret holding one is replaced whole — and
// at '#' until the URL's fragment has begun: inside it a '#' is data
// ("#x&token=#SECRET"). A parameter without a name is judged by its value
// ("?=Bearer …"). Text without such a parameter is returned unchanged.
// FuzzQueryLeavesNoCredential: no parameter Go's URL parser or a fragment
// parser reads keeps a credential.
func Query(text string, repl func(string) string) string {
	if !strings.ContainsAny(text, "?&#;") || !strings.Contains(text, "=") {
		return text
	}
	var b strings.Builder
	last := 0
	frag := false // inside a URL's fragment: until white space or a quote
	for i := 0; i < len(text); i++ {
		c := text[i]
		if endOfValue(c) {
			frag = false
			continue
		}
		if c != '?' && c != '&' && c != '#' && c != ';' {
			continue
		}
		frag = frag || c == '#'
		nameEnd := i + 1
		for nameEnd < len(text) && !strings.ContainsRune("=&#?;", rune(text[nameEnd])) && !endOfValue(text[nameEnd]) {
			nameEnd++
		}
		if nameEnd >= len(text) || text[nameEnd] != '=' {
			continue
		}
		valEnd := nameEnd + 1
		for valEnd < len(text) && text[valEnd] != '&' && (frag || text[valEnd] != '#') && !endOfValue(text[valEnd]) {
			valEnd++
		}
		name, value := text[i+1:nameEnd], text[nameEnd+1:valEnd]
		if value == "" || !SecretQueryParam(name, value) {
			continue
		}
		b.WriteString(text[last : nameEnd+1])
		b.WriteString(repl(value))
		last = valEnd
		i = valEnd - 1
	}
	if last == 0 {
		return text
	}
	b.WriteString(text[last:])
	return b.String()
}

func endOfValue(c byte) bool {
	return c <= ' ' || c == 0x7f || c == '"' || c == '\'' || c == '<' || c == '>' || c == '`'
}

// Masked is a replacement for Query where no key is at hand (an operator's
// listing): the value is gone, its presence stays visible.
func Masked(string) string { return "REDACTED" }

// Strings returns a copy of a decoded JSON value (maps, slices, strings)
// in which every string has gone through Query with the Redactor's hash:
// for records whose keys are the server's own but whose strings may hold
// a URL, such as a tool's audit details (a redirect's final URL).
func (r *Redactor) Strings(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, val := range t {
			out[k] = r.Strings(val)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, val := range t {
			out[i] = r.Strings(val)
		}
		return out
	case []string:
		out := make([]string, len(t))
		for i, val := range t {
			out[i] = Query(val, r.Hash)
		}
		return out
	case string:
		return Query(t, r.Hash)
	}
	return v
}
