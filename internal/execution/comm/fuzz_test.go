package comm

import (
	"net/url"
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

var htmlSeeds = []string{
	"", "<p>x</p>", "<title>t</title><h1>h</h1><ul><li>a<li>b</ul>", "<script><!--<script></script>x</script>y",
	"<div hidden><p>x</div>y", "<table><tr><td>a<td>b</table>", "&amp;&#0;&#x110000;&notin", "<a b='c>d",
	"<!-- x --!>", "<pre>\r\n a</pre>", "<svg><script>x</script></svg>", "<ol>" + strings.Repeat("<li>x", 20),
	"<textarea><script>x</script></textarea>", "\xff\xfe<p>\x00</p>",
}

// scriptEnders are what could end a script element early in a browser:
// "</script" and, through the escape states, "<!--".
var scriptEnders = regexp.MustCompile(`(?i)</script|<!--`)

// FuzzHTMLToText: never panics; the output is valid UTF-8, holds no NUL
// and stays within a small multiple of the input; and a script element
// vanishes entirely: for any content c (that cannot end it early) and any
// document d, "<script>c</script>d" converts exactly like d.
func FuzzHTMLToText(f *testing.F) {
	for _, s := range htmlSeeds {
		f.Add("alert('x')", s)
	}
	f.Fuzz(func(t *testing.T, script, doc string) {
		out := HTMLToText(doc)
		if !utf8.ValidString(out) || strings.IndexByte(out, 0) >= 0 {
			t.Fatalf("invalid output %q", out)
		}
		if len(out) > 4*len(doc)+64 {
			t.Fatalf("%d bytes out of %d in", len(out), len(doc))
		}
		for scriptEnders.MatchString(script) {
			script = scriptEnders.ReplaceAllString(script, "")
		}
		if got := HTMLToText("<script>" + script + "</script>" + doc); got != out {
			t.Fatalf("script content changed the output:\n%q\nvs\n%q", got, out)
		}
	})
}

// FuzzParseRobots: never panics; a robots.txt without a Disallow line
// allows everything; /robots.txt itself is always allowed.
func FuzzParseRobots(f *testing.F) {
	for _, s := range []string{
		"", "User-agent: *\nDisallow: /", "User-agent: airlock\nAllow: /a\nDisallow: /*.pdf$",
		"user-agent:*\r\ndisallow:/x*y*z$\n", "\uFEFFUser-agent: *\nDisallow: /%zz\xff",
	} {
		f.Add(s, "/a/b.pdf?q=1")
	}
	f.Fuzz(func(t *testing.T, body, path string) {
		r := parseRobots(body, "airlock")
		got := r.allowed(path)
		if !strings.Contains(strings.ToLower(body), "disallow") && !got {
			t.Fatalf("no Disallow, yet %q is disallowed", path)
		}
		if !r.allowed("/robots.txt") {
			t.Fatal("/robots.txt disallowed")
		}
		if r.allowed(path) != got {
			t.Fatal("not deterministic")
		}
	})
}

// FuzzSearchJSON: never panics; every result kept has an absolute
// http(s) URL and bounded, control-free, valid UTF-8 fields.
func FuzzSearchJSON(f *testing.F) {
	for _, s := range []string{
		`{"results":[{"url":"https://a/","title":"t","content":"c","engine":"e"}]}`,
		`{"results":[{"url":"javascript:alert(1)"},{"url":7},null,"x",{"url":"http://b/\u202e"}]}`,
		`{"results":null}`, `{"results":{}}`, `[]`, `not json`, `{"results":[{"url":"https://a/","title":"\u0000\u001b[31m"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := parseSearchJSON(data, 5)
		if err != nil {
			return
		}
		if len(res.Results) > 5 {
			t.Fatalf("%d results", len(res.Results))
		}
		for _, r := range res.Results {
			u, err := url.Parse(r.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
				t.Fatalf("result URL %q", r.URL)
			}
			for _, field := range []struct {
				s   string
				max int
			}{{r.Title, maxTitleRunes}, {r.Snippet, maxSnippetRunes}, {r.Engine, maxEngineRunes}} {
				if !utf8.ValidString(field.s) || utf8.RuneCountInString(field.s) > field.max+1 {
					t.Fatalf("field %q", field.s)
				}
				if strings.ContainsFunc(field.s, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }) {
					t.Fatalf("control or format character in %q", field.s)
				}
			}
		}
	})
}

// FuzzCheckSQL: never panics, and whatever it accepts begins with a read
// statement and holds no second statement.
func FuzzCheckSQL(f *testing.F) {
	for _, s := range []string{"SELECT 1", "SELECT 1; DROP TABLE t", "WITH x AS (SELECT 1) SELECT * FROM x", "SELECT '';'", `SELECT "a""b"`, "/*", "--"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if checkSQL(s) != nil {
			return
		}
		toks, err := lexSQL(s)
		if err != nil || len(toks) == 0 || toks[0].kind != 'w' {
			t.Fatalf("accepted %q", s)
		}
		if w := toks[0].text; w != "SELECT" && w != "WITH" && w != "VALUES" {
			t.Fatalf("accepted %q starting with %s", s, w)
		}
	})
}
