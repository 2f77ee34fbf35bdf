package comm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Search bounds. Each result field is bounded so one hostile result cannot
// crowd out the others or the model's context.
const (
	DefaultMaxResults = 10
	maxMaxResults     = 50
	maxQueryBytes     = 512
	maxTitleRunes     = 200
	maxSnippetRunes   = 800
	maxEngineRunes    = 40
)

// Searcher performs comm.search against one configured SearXNG endpoint.
// It is safe for concurrent use.
type Searcher struct {
	f        *Fetcher
	endpoint *url.URL
	max      int
	now      func() time.Time
}

// SearchResult is one result, sanitised: URL is an absolute http or https
// URL; Title, Snippet and Engine hold no control, bidi-override,
// zero-width or tag characters, have whitespace collapsed and are bounded
// in length (cut with "…").
type SearchResult struct {
	URL     string
	Title   string
	Snippet string
	Engine  string
}

// SearchResults is the answer to one query. Like [Document] it is raw,
// unfenced content.
type SearchResults struct {
	Query       string
	Results     []SearchResult
	Dropped     int  // results refused: no http(s) URL, malformed, duplicate
	Truncated   bool // the endpoint offered more than maxResults usable results
	RetrievedAt time.Time
}

// originRule is the default HostRules of a Searcher: only the endpoint's
// own scheme and host:port, so a redirect cannot take the search elsewhere.
type originRule struct{ scheme, host string }

func (o originRule) CheckURL(u *url.URL) error {
	if u.Scheme != o.scheme || !strings.EqualFold(u.Host, o.host) {
		return fmt.Errorf("only the search endpoint %s://%s may be reached", o.scheme, o.host)
	}
	return nil
}

// NewSearcher returns a Searcher for a SearXNG instance at endpoint (its
// base URL; requests go to <endpoint>/search?q=…&format=json). fetchOpts
// are the fetch options for those requests: the endpoint passes the same
// scheme, host-rule and connect-time address checks as any fetch, so a
// loopback SearXNG needs AllowPrivate. With fetchOpts.Rules nil, only the
// endpoint's own origin is allowed. robots.txt is not consulted: the
// endpoint is an API the operator chose, and SearXNG's robots.txt
// disallows /search to crawlers. maxResults ≤ 0 means 10; it is capped at 50.
func NewSearcher(endpoint string, fetchOpts FetchOptions, maxResults int) (*Searcher, error) {
	u, err := url.Parse(endpoint)
	if err != nil || !u.IsAbs() || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" ||
		(u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("comm: search endpoint %q: want an http(s) base URL without user info, query or fragment", endpoint)
	}
	if fetchOpts.Rules == nil {
		fetchOpts.Rules = originRule{scheme: u.Scheme, host: u.Host}
	}
	fetchOpts.IgnoreRobots = true
	f, err := NewFetcher(fetchOpts)
	if err != nil {
		return nil, err
	}
	if _, err := f.target(u.String(), "search", 0); err != nil {
		return nil, fmt.Errorf("comm: search endpoint %q is not reachable under these options: %w", endpoint, err)
	}
	if maxResults <= 0 {
		maxResults = DefaultMaxResults
	}
	return &Searcher{f: f, endpoint: u, max: min(maxResults, maxMaxResults), now: f.now}, nil
}

// Search sends query to the endpoint and returns its sanitised results.
func (s *Searcher) Search(ctx context.Context, query string) (*SearchResults, error) {
	q := strings.TrimSpace(query)
	switch {
	case q == "":
		return nil, newErr("search", ErrInvalidQuery, "the search query is empty", nil)
	case len(q) > maxQueryBytes:
		return nil, newErr("search", ErrInvalidQuery, fmt.Sprintf("the search query is longer than %d bytes", maxQueryBytes), nil)
	case !utf8.ValidString(q) || strings.ContainsFunc(q, unicode.IsControl):
		return nil, newErr("search", ErrInvalidQuery, "the search query holds invalid UTF-8 or control characters", nil)
	}
	ctx, cancel := context.WithTimeout(ctx, s.f.timeout)
	defer cancel()
	u := *s.endpoint
	u.Path = strings.TrimSuffix(u.Path, "/") + "/search"
	u.RawPath = ""
	u.RawQuery = url.Values{"q": {q}, "format": {"json"}}.Encode()
	target, err := s.f.target(u.String(), "search", 0)
	if err != nil {
		return nil, err
	}
	r, err := s.f.retrieve(ctx, target, false, "search")
	if err != nil {
		return nil, err
	}
	if r.truncated {
		return nil, newErr("search", ErrTooLarge, "the search response exceeds the size limit", nil)
	}
	res, err := parseSearchJSON(r.body, s.max)
	if err != nil {
		return nil, newErr("search", ErrUnavailable, "the search endpoint did not answer with SearXNG JSON", err)
	}
	res.Query = q
	res.RetrievedAt = s.now().UTC()
	return res, nil
}

// parseSearchJSON reads SearXNG's JSON API answer ({"results": [{"url",
// "title", "content", "engine", …}, …]}) leniently: a result whose fields
// have the wrong types, whose URL is not absolute http(s) (javascript:,
// data:, file: …) or is a duplicate is dropped and counted, never fatal.
// Keys are matched exactly (encoding/json's case-insensitive struct
// matching would let "URL" and "url" compete). Only a body that is not a
// JSON object with a results array is an error. FuzzSearchJSON.
func parseSearchJSON(body []byte, limit int) (*SearchResults, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, err
	}
	raw, ok := top["results"]
	if !ok {
		return nil, errors.New(`no "results" field`)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf(`"results" is not an array: %w`, err)
	}
	res := &SearchResults{Results: []SearchResult{}}
	seen := map[string]bool{}
	for _, it := range items {
		var m map[string]json.RawMessage
		if json.Unmarshal(it, &m) != nil {
			res.Dropped++
			continue
		}
		link, ok := cleanResultURL(jsonString(m["url"]))
		if !ok || seen[link] {
			res.Dropped++
			continue
		}
		if len(res.Results) == limit {
			res.Truncated = true
			break
		}
		seen[link] = true
		res.Results = append(res.Results, SearchResult{
			URL:     link,
			Title:   cleanText(jsonString(m["title"]), maxTitleRunes),
			Snippet: cleanText(jsonString(m["content"]), maxSnippetRunes),
			Engine:  cleanText(jsonString(m["engine"]), maxEngineRunes),
		})
	}
	return res, nil
}

// jsonString is raw's value if it is a JSON string, else "".
func jsonString(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// cleanResultURL accepts only absolute http(s) URLs with a host and no user
// info, re-serialised: "javascript:alert(1)" in a result is a link a client
// might render and a person might click (TestSearch "hostile").
func cleanResultURL(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > maxURLBytes/4 {
		return "", false
	}
	u, err := url.Parse(s)
	if err != nil || u.User != nil || u.Host == "" || u.Opaque != "" {
		return "", false
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", false
	}
	return u.String(), true
}

// cleanText makes a result field safe to show on one line: invalid UTF-8
// replaced; ANSI escape sequences, control and format characters (bidi
// overrides, zero-width, Unicode tags — the ones that hide or reorder
// instructions) removed; whitespace collapsed; at most maxRunes runes.
func cleanText(s string, maxRunes int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	space, n, cut := false, 0, false
	for i := 0; i < len(s) && !cut; {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == 0x1B:
			i = skipANSI(s, i)
			continue
		case unicode.IsSpace(r):
			space = true
			continue
		case unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Co, r):
			continue
		}
		if space && n > 0 {
			b.WriteByte(' ')
			n++
		}
		space = false
		if cut = n >= maxRunes; !cut {
			b.WriteRune(r)
			n++
		}
	}
	if cut {
		return strings.TrimRight(b.String(), " ") + "…"
	}
	return b.String()
}

// skipANSI skips the rest of an escape sequence that began with ESC at i-1:
// a CSI ("ESC [ params final") or a two-byte escape.
func skipANSI(s string, i int) int {
	if i >= len(s) {
		return i
	}
	if s[i] != '[' {
		return i + 1
	}
	for i++; i < len(s); i++ {
		if 0x40 <= s[i] && s[i] <= 0x7E {
			return i + 1
		}
	}
	return i
}

// Text renders the results as a numbered plain-text list.
func (r *SearchResults) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Search results for %s (%d):\n", strconv.Quote(r.Query), len(r.Results))
	for i, res := range r.Results {
		fmt.Fprintf(&b, "\n%d. %s\n   %s\n", i+1, orDefault(res.Title, "(no title)"), res.URL)
		if res.Snippet != "" {
			fmt.Fprintf(&b, "   %s\n", res.Snippet)
		}
	}
	if r.Truncated {
		b.WriteString("\n(more results were available)\n")
	}
	return b.String()
}
