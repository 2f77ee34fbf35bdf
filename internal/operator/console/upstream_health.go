package console

import (
	"context"
	"time"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/operator/operator"
)

// upstreamHealth is one upstream's warm sessions on the Upstreams page
// (issue 23 item 5), as `airlock upstreams status` prints them.
type upstreamHealth struct {
	Sessions                      string
	Warm, Restarts, Calls, Errors int64
	Latency                       time.Duration
	LastError                     string // the upstream's failure, made visible
	LastErrAt                     string
	Updated                       string
}

// addHealth sets each group's health from the store; an unreadable
// status leaves the page without it (the pins are what it is for).
func (c *Console) addHealth(ctx context.Context, byID map[string]*upstreamGroup) {
	cfg := &config.Config{}
	if c.opts.Config != nil {
		cfg = c.opts.Config()
	}
	st, err := c.op.UpstreamStatus(ctx, cfg)
	if err != nil {
		return
	}
	for _, s := range st {
		g := byID[s.Upstream]
		if g == nil {
			continue
		}
		g.Health = healthOf(s)
	}
}

func healthOf(s operator.UpstreamStatus) *upstreamHealth {
	h := &upstreamHealth{Sessions: s.Sessions, Warm: s.Warm, Restarts: s.Restarts, Calls: s.Calls, Errors: s.Errors,
		Latency: s.Latency, LastError: visible(s.LastError)}
	if !s.LastErrAt.IsZero() {
		h.LastErrAt = s.LastErrAt.UTC().Format(time.RFC3339)
	}
	if !s.UpdatedAt.IsZero() {
		h.Updated = s.UpdatedAt.UTC().Format(time.RFC3339)
	}
	return h
}
