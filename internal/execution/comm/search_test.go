package comm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"
)

// searx is a loopback stand-in for SearXNG's JSON API.
func searx(t *testing.T, answer func(w http.ResponseWriter, r *http.Request)) (*server, *atomic.Int64) {
	var robots atomic.Int64
	srv := newServer(t, "", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			robots.Add(1)
			fmt.Fprint(w, "User-agent: *\nDisallow: /search\n") // what SearXNG serves
			return
		}
		answer(w, r)
	}))
	return srv, &robots
}

func searchOptions() FetchOptions {
	o := testOptions()
	o.Rules = nil // the searcher's default: the endpoint's origin only
	o.IgnoreRobots = false
	return o
}

func jsonAnswer(v any) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
}

func TestSearch(t *testing.T) {
	huge := strings.Repeat("word ", 100000)
	var gotQuery atomic.Value
	results := []any{
		map[string]any{"url": "https://example.com/a", "title": "A \u202eevil\u202c\x1b[31mred\x1b[0m\ttab", "content": "snippet a", "engine": "duckduckgo"},
		map[string]any{"url": "javascript:alert(1)", "title": "js"},
		map[string]any{"url": "JAVASCRIPT:alert(1)", "title": "js upper"},
		map[string]any{"url": "data:text/html,<script>x</script>", "title": "data"},
		map[string]any{"url": "file:///etc/passwd", "title": "file"},
		map[string]any{"url": "https://user:pw@example.com/", "title": "userinfo"},
		map[string]any{"title": "no url"},
		map[string]any{"url": 42, "title": "numeric url"},
		"not an object",
		map[string]any{"url": "https://example.com/a", "title": "duplicate"},
		map[string]any{"url": "HTTP://Example.com/b", "title": huge, "content": huge, "engine": []int{1}},
		map[string]any{"url": "https://example.com/c", "title": 7, "content": nil, "URL": "javascript:x"},
		map[string]any{"url": "https://example.com/d", "title": "d\u200b\U000E0041tag"},
		map[string]any{"url": "https://example.com/e", "title": "e"},
	}
	srv, robots := searx(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/search" {
			http.NotFound(w, r)
			return
		}
		gotQuery.Store(r.URL.Query())
		jsonAnswer(map[string]any{"query": "q", "results": results, "answers": []string{"ignored"}})(w, r)
	})
	s, err := NewSearcher(srv.URL, searchOptions(), 4)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Search(context.Background(), "  go & sqlite?  ")
	if err != nil {
		t.Fatal(err)
	}
	q := gotQuery.Load().(url.Values)
	if q["q"][0] != "go & sqlite?" || q["format"][0] != "json" {
		t.Errorf("request query = %v", q)
	}
	if robots.Load() != 0 {
		t.Error("the search endpoint's robots.txt was consulted")
	}
	wantURLs := []string{"https://example.com/a", "http://Example.com/b", "https://example.com/c", "https://example.com/d"}
	if len(res.Results) != len(wantURLs) || !res.Truncated || res.Dropped != 9 || res.Query != "go & sqlite?" {
		t.Fatalf("results %+v, dropped %d, truncated %v", res.Results, res.Dropped, res.Truncated)
	}
	for i, r := range res.Results {
		if r.URL != wantURLs[i] {
			t.Errorf("result %d URL = %q, want %q", i, r.URL, wantURLs[i])
		}
	}
	if got := res.Results[0]; got.Title != "A evilred tab" || got.Snippet != "snippet a" || got.Engine != "duckduckgo" {
		t.Errorf("result 0 = %+v", got)
	}
	b := res.Results[1]
	if n := utf8.RuneCountInString(b.Title); n > maxTitleRunes+1 || n < maxTitleRunes-1 || !strings.HasSuffix(b.Title, "…") {
		t.Errorf("huge title: %d runes", n)
	}
	if n := utf8.RuneCountInString(b.Snippet); n > maxSnippetRunes+1 || n < maxSnippetRunes-1 || b.Engine != "" {
		t.Errorf("huge snippet: %d runes, engine %q", n, b.Engine)
	}
	if c := res.Results[2]; c.Title != "" || c.Snippet != "" {
		t.Errorf("wrong-typed fields not dropped: %+v", c)
	}
	if d := res.Results[3]; d.Title != "dtag" {
		t.Errorf("zero-width and tag characters kept: %q", d.Title)
	}
	if txt := res.Text(); !strings.Contains(txt, "1. A evilred tab\n   https://example.com/a\n   snippet a\n") ||
		!strings.Contains(txt, "(no title)") || !strings.Contains(txt, "more results") {
		t.Errorf("Text():\n%s", txt)
	}
}

func TestSearchRefusals(t *testing.T) {
	srv, _ := searx(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("q") {
		case "html":
			body("text/html", "<html><body>SearXNG</body></html>")(w, r)
		case "nojson":
			body("application/json", "{not json")(w, r)
		case "noresults":
			jsonAnswer(map[string]any{"query": "x"})(w, r)
		case "badresults":
			jsonAnswer(map[string]any{"results": "nope"})(w, r)
		case "forbidden":
			http.Error(w, "format disabled", http.StatusForbidden)
		case "redirect":
			http.Redirect(w, r, "http://127.0.0.1:1/search", http.StatusFound) // another port
		case "png":
			body("image/png", "\x89PNG\r\n\x1a\n")(w, r)
		default:
			jsonAnswer(map[string]any{"results": nil})(w, r)
		}
	})
	s, err := NewSearcher(srv.URL+"/", searchOptions(), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		query string
		kind  error
	}{
		{"html", ErrUnavailable},
		{"nojson", ErrUnavailable},
		{"noresults", ErrUnavailable},
		{"badresults", ErrUnavailable},
		{"forbidden", ErrStatus},
		{"redirect", ErrHostDenied}, // the default rule allows only the endpoint's origin
		{"png", ErrUnavailable},
		{"   ", ErrInvalidQuery},
		{"a\x00b", ErrInvalidQuery},
		{"a\nb", ErrInvalidQuery},
		{"\xff", ErrInvalidQuery},
		{strings.Repeat("q", maxQueryBytes+1), ErrInvalidQuery},
		{"null results", nil},
	} {
		t.Run(tt.query[:min(len(tt.query), 20)], func(t *testing.T) {
			res, err := s.Search(context.Background(), tt.query)
			wantKind(t, err, tt.kind)
			if err == nil && len(res.Results) != 0 {
				t.Errorf("results = %v", res.Results)
			}
		})
	}
}

// TestSearchEndpointGuarded: the endpoint is reached through the guarded
// fetcher, so a loopback endpoint needs AllowPrivate like any fetch.
func TestSearchEndpointGuarded(t *testing.T) {
	srv, _ := searx(t, jsonAnswer(map[string]any{"results": []any{}}))
	o := searchOptions()
	o.AllowPrivate = nil
	s, err := NewSearcher(srv.URL, o, 5)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Search(context.Background(), "x")
	wantKind(t, err, ErrPrivateAddress)
	if srv.conns.Load() != 0 {
		t.Error("the endpoint was reached")
	}

	// A path prefix is kept: <endpoint>/search.
	var path atomic.Value
	srv2, _ := searx(t, func(w http.ResponseWriter, r *http.Request) {
		path.Store(r.URL.Path)
		jsonAnswer(map[string]any{"results": []any{}})(w, r)
	})
	s2, err := NewSearcher(srv2.URL+"/searx/", searchOptions(), 5)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Search(context.Background(), "x"); err != nil || path.Load() != "/searx/search" {
		t.Errorf("err %v, path %v", err, path.Load())
	}
}

func TestNewSearcherValidates(t *testing.T) {
	for _, ep := range []string{"", "searx.local", "ftp://x/", "https://u:p@x/", "https://x/?q=1", "https://x/#f", "http://example.com/"} {
		if _, err := NewSearcher(ep, searchOptions(), 5); err == nil {
			t.Errorf("NewSearcher(%q) accepted", ep)
		}
	}
	o := searchOptions()
	o.AllowPrivate = []netip.Prefix{{}}
	if _, err := NewSearcher("http://127.0.0.1/", o, 5); err == nil {
		t.Error("invalid fetch options accepted")
	}
}
