package runner

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/execution/comm"
	"github.com/airlock-dev/airlock/internal/execution/credentials"
	"github.com/airlock-dev/airlock/internal/execution/toolkit"
	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/policy/limits"
	"github.com/airlock-dev/airlock/internal/policy/policy"
)

// brokerConfig is what the runner prepared once for every session's broker.
type brokerConfig struct {
	fetch    comm.FetchOptions // without Rules: each session adds its policy
	search   config.SearchConfig
	queriers map[string]*comm.Querier
	rate     *limits.Tracker // comm.fetch at comm.fetch.per_minute (default 10)
}

func newBrokerConfig(cfg *config.Config) (*brokerConfig, error) {
	f := cfg.Comm.Fetch
	private, err := f.PrivatePrefixes()
	if err != nil {
		return nil, err
	}
	b := &brokerConfig{
		fetch: comm.FetchOptions{
			AllowHTTPHosts: f.AllowHTTPHosts, AllowPrivate: private, MaxBodyBytes: f.MaxBodyBytes,
			Timeout: time.Duration(f.TimeoutMS) * time.Millisecond, MaxRedirects: f.MaxRedirects, IgnoreRobots: f.IgnoreRobots,
		},
		search: cfg.Comm.Search, queriers: map[string]*comm.Querier{},
	}
	perMinute := f.PerMinute
	if perMinute == 0 {
		perMinute = 10
	}
	b.rate = limits.NewTracker(limits.Spec{Rate: map[string]limits.RateSpec{"comm.fetch": {PerMinute: perMinute}}}, nil)
	for name, db := range cfg.Comm.Databases {
		q, err := comm.OpenQuerier(db.Path, db.MaxRows, time.Duration(db.TimeoutMS)*time.Millisecond)
		if err != nil {
			b.close()
			return nil, fmt.Errorf("opening database %s for comm.query: %w", name, err)
		}
		b.queriers[name] = q
	}
	return b, nil
}

func (b *brokerConfig) close() {
	for _, q := range b.queriers {
		q.Close()
	}
}

// sessionBroker performs approved needs for one call: every host, redirect
// and connected address is checked against the context's policy (it is the
// fetcher's HostRules and IPRules), and fetches are rate limited per
// principal across sessions, contexts and processes (comm.fetch.per_minute,
// default 10).
type sessionBroker struct {
	cfg    *brokerConfig
	s      *Session
	policy *policy.Policy
	input  *policy.Input // the call's policy input; redirect hops are judged as this call with their URL
}

// hopPolicy is the fetcher's rules for one call: the policy's host and
// address checks, and for every redirect target the policy's full decision
// for this call with the target as its URL (comm.HopRules). Rules see the
// hop through url.*; args stay the call's. A hop a rule gates or denies, or
// the network section refuses, stops the fetch with the code a direct
// request gets (issue 10, item 2; TestDeclareNeedRedirectJudgedByPolicy).
type hopPolicy struct {
	*policy.Policy
	in policy.Input
}

var (
	_ comm.HostRules = (*hopPolicy)(nil)
	_ comm.IPRules   = (*hopPolicy)(nil)
	_ comm.HopRules  = (*hopPolicy)(nil)
)

// CheckHop implements comm.HopRules.
func (h *hopPolicy) CheckHop(u *url.URL) error {
	in := h.in
	in.URL = u.String()
	d := h.Decide(&in)
	switch d.Effect {
	case policy.Allow:
		return nil
	case policy.RequireApproval:
		return &comm.RuleError{RuleID: d.RuleID, Approval: true, Err: errors.New(d.Reason)}
	}
	return &comm.RuleError{RuleID: d.RuleID, Err: errors.New(d.Reason)}
}

var _ toolkit.Broker = (*sessionBroker)(nil)

// Execute implements toolkit.Broker.
func (b *sessionBroker) Execute(ctx context.Context, need declarations.Need) (*toolkit.External, error) {
	switch need.Operation {
	case declarations.OpFetch:
		if err := b.s.r.admitRate(ctx, "fetch-rate:"+b.s.principal, b.cfg.rate, "comm.fetch"); err != nil {
			return nil, err
		}
		if b.input == nil {
			return nil, fmt.Errorf("fetch without the call's policy input: redirects could not be judged")
		}
		opts := b.cfg.fetch
		opts.Rules = &hopPolicy{Policy: b.policy, in: *b.input}
		opts.Now = b.s.r.now
		// The role's header credentials, asked per hop by comm; every
		// secret injected is scrubbed from what the host sent back (a
		// server echoing its Authorization header into the page).
		scrub := &credentials.Scrubber{}
		opts.Headers = fetchHeaders(b.s.r.creds.ForHosts(b.s.role, scrub))
		f, err := comm.NewFetcher(opts)
		if err != nil {
			return nil, fmt.Errorf("fetcher: %w", err)
		}
		defer f.CloseIdleConnections()
		doc, err := f.Fetch(ctx, need.Parameters.URL)
		if err != nil {
			return nil, comm.Violation(err)
		}
		// A named host could also put it into a redirect's Location: the URLs
		// are scrubbed too, here and after the fence's sanitizer (Scrub).
		doc.Text, doc.URL, doc.RequestedURL = scrub.String(doc.Text), scrub.String(doc.URL), scrub.String(doc.RequestedURL)
		for i, u := range doc.Redirects {
			doc.Redirects[i] = scrub.String(u)
		}
		return &toolkit.External{Text: doc.Text, Source: doc.URL, ContentType: doc.ContentType, RetrievedAt: doc.RetrievedAt, Scrub: scrub.String,
			Truncated: doc.Truncated, Details: map[string]any{"status": doc.Status, "redirects": doc.Redirects, "requested_url": doc.RequestedURL}}, nil
	case declarations.OpSearch:
		if b.cfg.search.Endpoint == "" {
			return nil, violation.New(violation.Unavailable, "no search endpoint is configured (comm.search.endpoint)")
		}
		opts := b.cfg.fetch
		opts.Now = b.s.r.now
		sr, err := comm.NewSearcher(b.cfg.search.Endpoint, opts, b.cfg.search.MaxResults)
		if err != nil {
			return nil, fmt.Errorf("searcher: %w", err)
		}
		res, err := sr.Search(ctx, need.Parameters.Query)
		if err != nil {
			return nil, comm.Violation(err)
		}
		src := b.cfg.search.Endpoint + "/search?q=" + url.QueryEscape(need.Parameters.Query)
		return &toolkit.External{Text: res.Text(), Source: src, ContentType: "application/json", RetrievedAt: res.RetrievedAt,
			Truncated: res.Truncated, Details: map[string]any{"result_count": len(res.Results), "dropped": res.Dropped}}, nil
	case declarations.OpQuery:
		q, ok := b.cfg.queriers[need.Parameters.Source]
		if !ok {
			return nil, violation.New(violation.NotFound, "no database %q is configured for comm.query", need.Parameters.Source)
		}
		t, err := q.Query(ctx, need.Parameters.Query)
		if err != nil {
			return nil, comm.Violation(err)
		}
		return &toolkit.External{Text: t.Text(), Source: "db:" + need.Parameters.Source, ContentType: "text/tab-separated-values",
			RetrievedAt: b.s.r.now().UTC(), Truncated: t.Truncated, Details: map[string]any{"rows": len(t.Rows), "columns": t.Columns}}, nil
	case declarations.OpMCP:
		return b.s.r.callUpstream(ctx, b.s, b.policy, need)
	default:
		return nil, violation.New(violation.InvalidArguments, "unknown operation %q", need.Operation)
	}
}
