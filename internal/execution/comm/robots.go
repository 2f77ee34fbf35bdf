package comm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Robots limits. RFC 9309 asks crawlers to parse at least 500 KiB and not
// to cache a robots.txt for more than 24 hours.
const (
	maxRobotsBytes   = 512 << 10
	maxRobotsRules   = 8192
	maxRobotsPattern = 2048
	robotsTTL        = 24 * time.Hour
	maxRobotsTimeout = 10 * time.Second
	maxRobotsCache   = 512
)

// robotsRules is the part of a robots.txt that applies to one user agent.
// An empty set allows everything.
type robotsRules struct {
	rules []robotsRule
}

type robotsRule struct {
	allow    bool
	length   int      // pattern length in octets, for "longest match wins"
	parts    []string // the pattern split at '*'
	anchored bool     // the pattern ended in '$'
}

var allowAll = &robotsRules{}

// parseRobots reads a robots.txt (RFC 9309) and keeps the rules for token:
// the groups whose user-agent names the token (case-insensitive, version
// suffix ignored: "Airlock/2" names "airlock"), or, if none does, the "*"
// groups. Groups for the same agent are merged. Unknown lines, sitemaps and
// crawl-delay are ignored; at most maxRobotsBytes are read. It never fails.
func parseRobots(body, token string) *robotsRules {
	body = strings.TrimPrefix(cutUTF8(body, maxRobotsBytes), "\uFEFF")
	type group struct {
		agents []string
		rules  []robotsRule
	}
	var groups []*group
	var cur *group
	lastAgent := false
	total := 0
	for line := range strings.Lines(body) {
		line, _, _ = strings.Cut(line, "#")
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		key = strings.ToLower(strings.TrimSpace(key))
		value = strings.TrimSpace(value)
		switch key {
		case "user-agent", "useragent", "user agent":
			if cur == nil || !lastAgent {
				cur = &group{}
				groups = append(groups, cur)
			}
			cur.agents = append(cur.agents, agentToken(value))
			lastAgent = true
		case "allow", "disallow":
			lastAgent = false
			if cur == nil || value == "" || len(value) > maxRobotsPattern || total >= maxRobotsRules {
				continue // an empty Disallow allows everything: no rule
			}
			cur.rules = append(cur.rules, compileRobotsRule(key == "allow", value))
			total++
		}
	}
	var mine, star []robotsRule
	named := false
	for _, g := range groups {
		for _, a := range g.agents {
			if a == token {
				named = true
				mine = append(mine, g.rules...)
				break
			}
		}
		for _, a := range g.agents {
			if a == "*" {
				star = append(star, g.rules...)
				break
			}
		}
	}
	if !named {
		mine = star
	}
	if len(mine) == 0 {
		return allowAll
	}
	return &robotsRules{rules: mine}
}

// agentToken is the product token of a user-agent string, lower-cased:
// "Airlock/0.1 (+https://…)" → "airlock".
func agentToken(s string) string {
	s = strings.TrimSpace(s)
	if s == "*" {
		return s
	}
	n := 0
	for n < len(s) && (isAlpha(s[n]) || '0' <= s[n] && s[n] <= '9' || s[n] == '-' || s[n] == '_') {
		n++
	}
	return strings.ToLower(s[:n])
}

func compileRobotsRule(allow bool, pattern string) robotsRule {
	r := robotsRule{allow: allow, length: len(pattern)}
	p := normalizePath(pattern)
	if strings.HasSuffix(p, "$") {
		r.anchored, p = true, p[:len(p)-1]
	}
	r.parts = strings.Split(p, "*")
	return r
}

// normalizePath makes patterns and paths comparable: non-ASCII bytes and
// controls are percent-encoded, existing escapes are upper-cased.
func normalizePath(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			b.WriteByte('%')
			b.WriteString(strings.ToUpper(s[i+1 : i+3]))
			i += 2
		case c >= 0x80 || c <= 0x20 || c == 0x7F:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c|0x20 && c|0x20 <= 'f' }

// match reports whether the rule's pattern matches path from its start.
// The parts between stars are matched leftmost-first, which is exact for
// this pattern language and linear in the path length.
func (r *robotsRule) match(path string) bool {
	if !strings.HasPrefix(path, r.parts[0]) {
		return false
	}
	pos := len(r.parts[0])
	last := len(r.parts) - 1
	if last == 0 {
		return !r.anchored || pos == len(path)
	}
	for _, mid := range r.parts[1:last] {
		i := strings.Index(path[pos:], mid)
		if i < 0 {
			return false
		}
		pos += i + len(mid)
	}
	if r.anchored {
		return len(path)-pos >= len(r.parts[last]) && strings.HasSuffix(path, r.parts[last])
	}
	return strings.Contains(path[pos:], r.parts[last])
}

// allowed applies the most specific (longest) matching rule; on a tie
// Allow wins; no match allows (RFC 9309 §2.2.2).
func (rs *robotsRules) allowed(path string) bool {
	if path == "/robots.txt" {
		return true
	}
	path = normalizePath(path)
	best, allow := -1, true
	for i := range rs.rules {
		r := &rs.rules[i]
		if r.length < best || !r.match(path) {
			continue
		}
		if r.length > best || r.allow {
			best, allow = r.length, r.allow
		}
	}
	return allow
}

// robotsCache holds parsed robots.txt per origin (scheme://host:port).
type robotsCache struct {
	mu sync.Mutex
	m  map[string]robotsEntry
}

type robotsEntry struct {
	rules   *robotsRules
	expires time.Time
}

func (c *robotsCache) get(key string, now time.Time) *robotsRules {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; ok && now.Before(e.expires) {
		return e.rules
	}
	return nil
}

func (c *robotsCache) put(key string, r *robotsRules, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxRobotsCache {
		for k, e := range c.m {
			if !now.Before(e.expires) || len(c.m) >= maxRobotsCache {
				delete(c.m, k)
			}
		}
	}
	c.m[key] = robotsEntry{rules: r, expires: now.Add(robotsTTL)}
}

// checkRobots refuses u if its origin's robots.txt disallows it for our
// user agent. Outcomes of fetching /robots.txt, following RFC 9309:
//
//   - 2xx: parsed (first 512 KiB) and cached for 24 h;
//   - 4xx, or a redirect we will not follow (denied host, too many hops):
//     "unavailable", everything allowed, cached;
//   - 5xx, or no answer within the robots timeout: "unreachable", so
//     everything is disallowed (ErrRobots); not cached, the next fetch asks
//     again;
//   - a refused address (ErrPrivateAddress) or a connection failure is
//     returned as is: the page itself would fail the same way.
//
// The robots.txt request passes the same scheme, host-rule and
// connect-time address checks as the page (TestFetchRobots).
func (f *Fetcher) checkRobots(ctx context.Context, u *url.URL, op string, hop int) error {
	key := u.Scheme + "://" + strings.ToLower(u.Host)
	rules := f.robots.get(key, f.now())
	if rules == nil {
		var err error
		if rules, err = f.fetchRobots(ctx, u, op, hop); err != nil {
			return err
		}
		f.robots.put(key, rules, f.now())
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	if u.RawQuery != "" {
		path += "?" + u.RawQuery
	}
	if !rules.allowed(path) {
		if hop > 0 {
			return newErr(op, ErrRobots, fmt.Sprintf("the robots.txt of %s disallows it for %s", where(u, hop), f.uaToken), fmt.Errorf("%s disallows %q", u.Host, path))
		}
		return newErr(op, ErrRobots, fmt.Sprintf("%s's robots.txt disallows %q for %s", u.Host, path, f.uaToken), nil)
	}
	return nil
}

func (f *Fetcher) fetchRobots(ctx context.Context, u *url.URL, op string, hop int) (*robotsRules, error) {
	site := u.Host + "'s"
	if hop > 0 {
		site = "the site of " + where(u, hop) + ": its"
	}
	rctx, cancel := context.WithTimeout(ctx, min(maxRobotsTimeout, f.timeout/2))
	defer cancel()
	ru := &url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/robots.txt"}
	resp, _, err := f.follow(rctx, ru, false, op, false)
	if err != nil {
		var e *Error
		switch {
		case ctx.Err() != nil:
			return nil, f.netErr(ctx, op, u, hop, ctx.Err())
		case errors.Is(err, ErrTimeout):
			return nil, newErr(op, ErrRobots, fmt.Sprintf("%s robots.txt did not arrive in time, so the site is treated as disallowing all", site), err)
		case errors.As(err, &e) && (e.Kind == ErrHostDenied || e.Kind == ErrScheme || e.Kind == ErrTooManyRedirects ||
			e.Kind == ErrInvalidURL || e.Kind == ErrStatus):
			return allowAll, nil
		}
		if hop > 0 && errors.As(err, &e) {
			// Its details name the remote-chosen host: keep them private.
			c := *e
			c.Detail, c.Err = fmt.Sprintf("the robots.txt of %s could not be fetched", where(u, hop)), err
			return nil, &c
		}
		return nil, err
	}
	defer resp.Body.Close()
	switch s := resp.StatusCode; {
	case s >= 500:
		return nil, &Error{Op: op, Kind: ErrRobots, Status: s,
			Detail: fmt.Sprintf("%s robots.txt answered HTTP %d, so the site is treated as disallowing all", site, s)}
	case s < 200 || s > 299:
		return allowAll, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxRobotsBytes))
	if err != nil {
		if ctx.Err() != nil {
			return nil, f.netErr(ctx, op, u, hop, ctx.Err())
		}
		return nil, newErr(op, ErrRobots, fmt.Sprintf("%s robots.txt could not be read, so the site is treated as disallowing all", site), err)
	}
	return parseRobots(string(body), f.uaToken), nil
}
