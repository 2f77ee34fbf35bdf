package declarations_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/declarations/declarationstest"
)

func validFetch() declarations.Need { return declarationstest.FetchNeed() }
func validSearch() declarations.Need {
	n := declarationstest.FetchNeed()
	n.Operation, n.Parameters = declarations.OpSearch, declarations.Parameters{Query: "product x price 2026"}
	return n
}
func validQuery() declarations.Need {
	n := declarationstest.FetchNeed()
	n.Operation, n.Parameters = declarations.OpQuery, declarations.Parameters{Query: "SELECT price\n\tFROM products", Source: "catalog"}
	return n
}

type validateCase struct {
	name  string
	need  declarations.Need
	field string // "" when valid
}

func withURL(u string) declarations.Need { n := validFetch(); n.Parameters.URL = u; return n }
func withSearch(q, src string) declarations.Need {
	n := validSearch()
	n.Parameters.Query, n.Parameters.Source = q, src
	return n
}
func withSQL(q, src string) declarations.Need {
	n := validQuery()
	n.Parameters.Query, n.Parameters.Source = q, src
	return n
}

func runValidate(t *testing.T, cases []validateCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.need.Validate()
			if c.field == "" {
				if err != nil {
					t.Fatalf("valid need refused: %v", err)
				}
				return
			}
			var fe *declarations.FieldError
			if !errors.As(err, &fe) || !errors.Is(err, declarations.ErrInvalid) {
				t.Fatalf("got %v, want a *FieldError wrapping ErrInvalid", err)
			}
			if fe.Field != c.field {
				t.Fatalf("field %q (%v), want %q", fe.Field, err, c.field)
			}
			// The reason never repeats what the agent sent.
			for _, v := range []string{c.need.Parameters.URL, c.need.Parameters.Query, c.need.Parameters.Source,
				c.need.Justification.UserRequest} {
				if len(v) >= 8 && strings.Contains(err.Error(), v) {
					t.Errorf("error %q repeats the input", err)
				}
			}
		})
	}
}

func TestValidateOperation(t *testing.T) {
	op := func(o declarations.Operation) declarations.Need { n := validFetch(); n.Operation = o; return n }
	runValidate(t, []validateCase{
		{"fetch", validFetch(), ""},
		{"search", validSearch(), ""},
		{"search with source", withSearch("x", "searx"), ""},
		{"query", validQuery(), ""},
		{"missing", op(""), "operation"},
		{"unknown", op("comm.exec"), "operation"},
		{"upper case", op("COMM.FETCH"), "operation"},
		{"padded", op(" comm.fetch"), "operation"},
		{"no namespace", op("fetch"), "operation"},
		{"NUL suffix", op("comm.fetch\x00"), "operation"},
	})
	if err := (*declarations.Need)(nil).Validate(); !errors.Is(err, declarations.ErrInvalid) {
		t.Errorf("nil need: %v", err)
	}
}

func TestValidateFetch(t *testing.T) {
	long := "https://example.com/" + strings.Repeat("a", declarations.MaxURLBytes-len("https://example.com/"))
	runValidate(t, []validateCase{
		{"max length", withURL(long), ""},
		{"upper-case scheme and host", withURL("HTTPS://EXAMPLE.COM/A"), ""},
		{"plain http", withURL("http://127.0.0.1:8080/x"), ""},
		{"ipv6", withURL("https://[2001:db8::1]:443/"), ""},
		{"underscore host", withURL("https://my_host.example/"), ""},
		{"query and fragment", withURL("https://example.com/p?q=1&r=%20#frag"), ""},
		{"punycode host", withURL("https://xn--bcher-kva.example/"), ""},
		{"missing", withURL(""), "parameters.url"},
		{"too long", withURL(long + "a"), "parameters.url"},
		{"unicode host", withURL("https://bücher.example/"), "parameters.url"},
		{"cyrillic look-alike", withURL("https://\u0430pple.com/"), "parameters.url"},
		{"escaped unicode host", withURL("https://ex%C3%A9.com/"), "parameters.url"},
		{"space", withURL("https://example.com/a b"), "parameters.url"},
		{"tab", withURL("https://example.com/\t"), "parameters.url"},
		{"NUL", withURL("https://example.com/\x00"), "parameters.url"},
		{"CRLF injection", withURL("https://example.com/\r\nHost: evil"), "parameters.url"},
		{"DEL", withURL("https://example.com/\x7f"), "parameters.url"},
		{"backslash", withURL("https://evil.example\\@good.example/"), "parameters.url"},
		{"relative", withURL("/etc/passwd"), "parameters.url"},
		{"scheme-relative", withURL("//example.com/x"), "parameters.url"},
		{"ftp", withURL("ftp://example.com/x"), "parameters.url"},
		{"file", withURL("file:///etc/passwd"), "parameters.url"},
		{"javascript", withURL("javascript:alert(1)"), "parameters.url"},
		{"data", withURL("data:text/html,hi"), "parameters.url"},
		{"opaque http", withURL("http:example.com"), "parameters.url"},
		{"no host", withURL("https:///path"), "parameters.url"},
		{"only scheme", withURL("https://"), "parameters.url"},
		{"user and password", withURL("https://user:secretpw@example.com/"), "parameters.url"},
		{"user only", withURL("https://token@example.com/"), "parameters.url"},
		{"empty userinfo", withURL("https://@example.com/"), "parameters.url"},
		{"port zero", withURL("https://example.com:0/"), "parameters.url"},
		{"port too big", withURL("https://example.com:65536/"), "parameters.url"},
		{"port max", withURL("https://example.com:65535/"), ""},
		{"empty port", withURL("https://example.com:/"), "parameters.url"},
		{"ipv6 zone", withURL("https://[fe80::1%25eth0]/"), "parameters.url"},
		{"bracketed ipv4", withURL("https://[127.0.0.1]/"), "parameters.url"},
		{"sub-delims in host", withURL("https://a!b$c.example/"), "parameters.url"},
		{"bad escape", withURL("https://example.com/%zz"), "parameters.url"},
		{"query given", func() declarations.Need { n := validFetch(); n.Parameters.Query = "x"; return n }(), "parameters.query"},
		{"source given", func() declarations.Need { n := validFetch(); n.Parameters.Source = "web"; return n }(), "parameters.source"},
	})
}

func TestValidateSearchAndQuery(t *testing.T) {
	runValidate(t, []validateCase{
		{"search max", withSearch(strings.Repeat("q", declarations.MaxSearchQueryBytes), ""), ""},
		{"search too long", withSearch(strings.Repeat("q", declarations.MaxSearchQueryBytes+1), ""), "parameters.query"},
		{"search missing", withSearch("", ""), "parameters.query"},
		{"search blank", withSearch(" \n\t ", ""), "parameters.query"},
		{"search url given", func() declarations.Need { n := validSearch(); n.Parameters.URL = "https://example.com/"; return n }(), "parameters.url"},
		{"source ok", withSearch("x", "db-1.main_2"), ""},
		{"source one char", withSearch("x", "a"), ""},
		{"source max", withSearch("x", "a"+strings.Repeat("b", declarations.MaxSourceBytes-1)), ""},
		{"source too long", withSearch("x", "a"+strings.Repeat("b", declarations.MaxSourceBytes)), "parameters.source"},
		{"source upper case", withSearch("x", "Catalog"), "parameters.source"},
		{"source leading dot", withSearch("x", ".hidden"), "parameters.source"},
		{"source leading underscore", withSearch("x", "_x"), "parameters.source"},
		{"source path", withSearch("x", "../etc/passwd"), "parameters.source"},
		{"source dsn", withSearch("x", "file:/tmp/x.db?mode=rw"), "parameters.source"},
		{"source space", withSearch("x", "my db"), "parameters.source"},
		{"source NUL", withSearch("x", "db\x00"), "parameters.source"},
		{"source unicode", withSearch("x", "dé"), "parameters.source"},
		{"sql max", withSQL("SELECT 1"+strings.Repeat(" ", declarations.MaxSQLBytes-8), "catalog"), ""},
		{"sql too long", withSQL("SELECT 1"+strings.Repeat(" ", declarations.MaxSQLBytes-7), "catalog"), "parameters.query"},
		{"sql missing", withSQL("", "catalog"), "parameters.query"},
		{"sql CR", withSQL("SELECT 1\r\n", "catalog"), "parameters.query"},
		{"sql source missing", withSQL("SELECT 1", ""), "parameters.source"},
		{"sql source bad", withSQL("SELECT 1", "/var/db/x.sqlite"), "parameters.source"},
		{"sql url given", func() declarations.Need { n := validQuery(); n.Parameters.URL = "https://example.com/"; return n }(), "parameters.url"},
	})
}

func TestValidateText(t *testing.T) {
	fields := []struct {
		name string
		set  func(*declarations.Need, string)
	}{
		{"justification.user_request", func(n *declarations.Need, s string) { n.Justification.UserRequest = s }},
		{"justification.missing_knowledge", func(n *declarations.Need, s string) { n.Justification.MissingKnowledge = s }},
		{"justification.expected_use", func(n *declarations.Need, s string) { n.Justification.ExpectedUse = s }},
	}
	texts := []struct {
		name, text string
		ok         bool
	}{
		{"plain", "Prices for product X", true},
		{"newlines and tabs", "line one\n\tline two\n", true},
		{"max", strings.Repeat("é", declarations.MaxJustificationBytes/2), true},
		{"emoji", "thanks 😀 👍🏽", true},
		{"emoji with VS16", "I \u2764\uFE0F it", true},
		{"combining accent", "cafe\u0301", true},
		{"CJK and RTL letters", "価格 שלום مرحبا", true},
		{"empty", "", false},
		{"blank", " \n\t\u00a0", false},
		{"too long", strings.Repeat("a", declarations.MaxJustificationBytes+1), false},
		{"too long multibyte", strings.Repeat("é", declarations.MaxJustificationBytes/2) + "a", false},
		{"invalid UTF-8", "abc\xff", false},
		{"overlong encoding", "\xc0\xafetc", false},
		{"surrogate half", "\xed\xa0\x80", false},
		{"NUL", "ok\x00hidden", false},
		{"CR", "line\roverprint", false},
		{"ESC colour", "\x1b[31mred", false},
		{"backspace", "abc\bx", false},
		{"C1 NEL", "a\u0085b", false},
		{"C1 CSI", "a\u009bb", false},
		{"bidi override", "price \u202e0001$", false},
		{"bidi isolate", "a\u2066b", false},
		{"LRM", "a\u200eb", false},
		{"arabic letter mark", "a\u061cb", false},
		{"zero-width space", "ig\u200bnore", false},
		{"zero-width joiner", "a\u200db", false},
		{"word joiner", "a\u2060b", false},
		{"BOM", "\ufeffhello", false},
		{"soft hyphen", "ig\u00adnore", false},
		{"tag characters", "hi\U000E0041\U000E0042", false},
		{"hangul filler", "a\u3164b", false},
		{"line separator", "a\u2028b", false},
		{"paragraph separator", "a\u2029b", false},
		{"lone variation selector", "\uFE0Fabc", false},
		{"two variation selectors", "a\uFE0F\uFE0E", false},
		{"supplementary variation selector", "a\U000E0100", false},
		{"selector after space", "a \uFE0F", false},
	}
	var cases []validateCase
	for _, f := range fields {
		for _, x := range texts {
			n := validFetch()
			f.set(&n, x.text)
			c := validateCase{name: f.name + "/" + x.name, need: n}
			if !x.ok {
				c.field = f.name
			}
			cases = append(cases, c)
		}
	}
	runValidate(t, cases)
	// The same rules hold for the search query.
	for _, x := range texts {
		n := withSearch(x.text, "")
		err := n.Validate()
		if x.ok && len(x.text) <= declarations.MaxSearchQueryBytes && err != nil || !x.ok && err == nil {
			t.Errorf("search query %s: %v", x.name, err)
		}
	}
}

// TestValidateOrder: the first invalid field is reported, in the
// documented order.
func TestValidateOrder(t *testing.T) {
	n := declarations.Need{Operation: declarations.OpQuery, Parameters: declarations.Parameters{URL: "x", Source: "BAD"}}
	// Each step names the field Validate must report next, and fixes it.
	for _, step := range []struct {
		field string
		fix   func(*declarations.Need)
	}{
		{"parameters.url", func(n *declarations.Need) { n.Parameters.URL = "" }},
		{"parameters.query", func(n *declarations.Need) { n.Parameters.Query = "SELECT 1" }},
		{"parameters.source", func(n *declarations.Need) { n.Parameters.Source = "db" }},
		{"justification.user_request", func(n *declarations.Need) { n.Justification.UserRequest = "u" }},
		{"justification.missing_knowledge", func(n *declarations.Need) { n.Justification.MissingKnowledge = "m" }},
		{"justification.expected_use", func(n *declarations.Need) { n.Justification.ExpectedUse = "e" }},
	} {
		var fe *declarations.FieldError
		if err := n.Validate(); !errors.As(err, &fe) || fe.Field != step.field {
			t.Fatalf("got %v, want field %s", err, step.field)
		}
		step.fix(&n)
	}
	if err := n.Validate(); err != nil {
		t.Fatalf("fixed need still invalid: %v", err)
	}
}

func TestFieldErrorText(t *testing.T) {
	for _, c := range []struct {
		err  *declarations.FieldError
		want string
	}{
		{&declarations.FieldError{Field: "parameters.url", Reason: "required by comm.fetch"}, "parameters.url: required by comm.fetch"},
		{&declarations.FieldError{Reason: "not valid JSON"}, "need: not valid JSON"},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
}

// TestValidateQueryCredentials: a need whose URL carries a credential in
// its query is refused, so the secret never reaches the declarations
// table, the approver or the fetch (issue 10, item 3). Parameters that only
// look alike stay valid.
func TestValidateQueryCredentials(t *testing.T) {
	runValidate(t, []validateCase{
		{"access_token", withURL("https://api.test/v1?access_token=abc123"), "parameters.url"},
		{"api_key second", withURL("https://api.test/v1?q=go&api_key=k3y"), "parameters.url"},
		{"encoded name", withURL("https://api.test/v1?access%5Ftoken=abc"), "parameters.url"},
		{"upper case", withURL("https://api.test/v1?API_KEY=abc"), "parameters.url"},
		{"presigned", withURL("https://b.test/o?X-Amz-Signature=f00"), "parameters.url"},
		{"bearer as a value", withURL("https://api.test/v1?q=Bearer%20abcdefgh"), "parameters.url"},
		{"look-alikes", withURL("https://a.test/?author=ann&keyword=go&sort_key=date&code=py"), ""},
		{"empty token", withURL("https://a.test/?token="), "parameters.url"},
		// What the audit's reading (redact.Query) would hash is refused too.
		{"token in a nested URL", withURL("https://a.test/?next=https://b.test/?token=abc"), "parameters.url"},
		{"semicolon separator", withURL("https://a.test/?q=1;token=abc"), "parameters.url"},
		{"a semicolon, no credential", withURL("https://a.test/?q=1;sort=date"), ""},
	})
	n := withURL("https://api.test/v1?q=go&access_token=abc123")
	err := n.Validate()
	if err == nil || !strings.Contains(err.Error(), `"access_token"`) || strings.Contains(err.Error(), "abc123") {
		t.Fatalf("message: %v", err)
	}
}
