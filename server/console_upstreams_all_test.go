package server

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/policy/pinning"
)

// approveAllForm is the "approve all reviewed" form of upstream up on a
// page: its tool and digest fields, in order.
func approveAllForm(t *testing.T, body string) url.Values {
	t.Helper()
	form := field(t, regexp.MustCompile(`(?s)<form method="post" action="/console/upstreams/approve-all"(.*?)</form>`), body)
	v := url.Values{"upstream": {"up"}}
	for _, m := range regexp.MustCompile(`name="tool" value="([^"]+)"><input type="hidden" name="digest" value="([0-9a-f]{64})"`).FindAllStringSubmatch(form, -1) {
		v["tool"] = append(v["tool"], m[1])
		v["digest"] = append(v["digest"], m[2])
	}
	return v
}

// TestConsoleUpstreamsApproveAll (issue 23 item 4): the "approve all
// reviewed" form carries every waiting definition the page showed; it
// needs a reason and the session's CSRF token; after a rug pull between
// the render and the POST it approves nothing (409, saying what changed,
// each refusal audited); posted from a page showing what is listed now,
// it approves every definition the review does not flag — a digest given
// as a 16-digit prefix too — each audited with its whole digest, and
// leaves the flagged one waiting.
func TestConsoleUpstreamsApproveAll(t *testing.T) {
	w, u := consoleUpstreamWeb(t)
	b := newBrowser(w.ts.URL, nil)
	csrf := b.admin(t)
	refresh := func() string { return b.refreshUpstreams(t, csrf) }
	post := func(form url.Values, csrf string, why string) consolePage {
		f := url.Values{}
		for k, v := range form {
			f[k] = v
		}
		f.Set("csrf", csrf)
		f.Set("reason", why)
		return b.do(t, http.MethodPost, "/console/upstreams/approve-all", f, map[string]string{"Origin": w.ts.URL, "Sec-Fetch-Site": "same-origin"})
	}
	body := refresh()
	shown := approveAllForm(t, body)
	// echo, big, slow, fail wait unflagged; add (flagged) is carried but
	// left out, as the button says.
	if len(shown["tool"]) != 5 || !strings.Contains(body, "Approve all 4 reviewed definitions") {
		t.Fatalf("approve-all form: %v\n%s", shown, body)
	}
	if p := post(shown, csrf, ""); p.status != http.StatusBadRequest {
		t.Fatalf("without a reason: %d", p.status)
	}
	if p := post(shown, "forged", "r"); p.status != http.StatusForbidden || !strings.Contains(p.body, "CSRF_REFUSED") {
		t.Fatalf("without the CSRF token: %d %s", p.status, p.body)
	}

	// A rug pull after the render, seen by a refresh: nothing approved.
	u.setEcho(echoDescription + " Now louder.")
	refresh()
	p := post(shown, csrf, "reviewed the set")
	if p.status != http.StatusConflict || !strings.Contains(p.body, "changed since this page showed them") || !strings.Contains(p.body, "echo: the review showed sha256:") {
		t.Fatalf("stale set: %d %s", p.status, p.body)
	}
	for _, tool := range []string{"echo", "big", "slow", "fail"} {
		if upstreamPin(t, w, tool).State != pinning.Pending {
			t.Fatalf("%s approved from a stale set", tool)
		}
	}
	if recs := consoleRecords(t, w.fixture, "operator.upstream_approve", ""); len(recs) != 5 {
		t.Fatalf("a refused set of 5 audited as %d records", len(recs))
	}

	// The page as listed now; echo's digest cut to a 16-digit prefix.
	now := approveAllForm(t, b.do(t, http.MethodGet, "/console/upstreams", nil, nil).body)
	full := map[string]string{}
	for i, tool := range now["tool"] {
		full[tool] = now["digest"][i]
		if tool == "echo" {
			now["digest"][i] = "sha256:" + full[tool][:16] + "…"
		}
	}
	if p := post(now, csrf, "reviewed the set"); p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/upstreams?done=set" {
		t.Fatalf("approve all: %d %s", p.status, p.body)
	}
	var ok int
	for _, r := range consoleRecords(t, w.fixture, "operator.upstream_approve", "") {
		for _, tool := range []string{"echo", "big", "slow", "fail"} {
			if r.Outcome == "ok" && strings.Contains(r.Reason, "reviewed the set (approved tool definition sha256:"+full[tool]+")") {
				ok++
			}
		}
	}
	if ok != 4 {
		t.Fatalf("%d approvals audited with the whole digest, want 4", ok)
	}
	for _, tool := range []string{"echo", "big", "slow", "fail"} {
		if pin := upstreamPin(t, w, tool); !pin.Usable() || pin.ApprovedDigest != full[tool] {
			t.Errorf("%s: %+v", tool, pin)
		}
	}
	if upstreamPin(t, w, "add").State != pinning.Pending {
		t.Error("the flagged definition was swept into the set")
	}
}

// refreshUpstreams presses the Upstreams page's refresh and returns the page.
func (b *browser) refreshUpstreams(t *testing.T, csrf string) string {
	t.Helper()
	p := b.do(t, http.MethodPost, "/console/upstreams/refresh", url.Values{"csrf": {csrf}}, nil)
	if p.status != http.StatusOK {
		t.Fatalf("refresh: %d %s", p.status, p.body)
	}
	return p.body
}
