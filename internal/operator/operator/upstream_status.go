package operator

import (
	"context"
	"sort"
	"time"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/store"
)

// UpstreamStatus is one upstream's health (issue 23 item 5) as the
// serving instances last wrote it to the store: their warm sessions
// summed, and each instance's row.
type UpstreamStatus struct {
	Upstream   string
	Transport  string // stdio or http; "" when no longer configured
	Sessions   string // context, principal or shared
	Warm       int64
	Restarts   int64
	Calls      int64
	Errors     int64
	LastError  string
	LastErrAt  time.Time
	Latency    time.Duration // the latest call's, of any instance
	UpdatedAt  time.Time
	Instances  []store.UpstreamHealth
	Configured bool
}

// UpstreamStatus returns the health of every upstream cfg configures (and
// of any other a serving instance still reports), by id.
func (o *API) UpstreamStatus(ctx context.Context, cfg *config.Config) ([]UpstreamStatus, error) {
	rows, err := o.db.UpstreamHealthRows(ctx)
	if err != nil {
		return nil, err
	}
	by := map[string]*UpstreamStatus{}
	get := func(id string) *UpstreamStatus {
		if by[id] == nil {
			by[id] = &UpstreamStatus{Upstream: id}
		}
		return by[id]
	}
	for _, up := range cfg.Upstreams {
		s := get(up.ID)
		s.Configured, s.Sessions, s.Transport = true, up.SessionScope(), "http"
		if up.Stdio() {
			s.Transport = "stdio"
		}
	}
	for _, h := range rows {
		s := get(h.Upstream)
		s.Warm += h.Warm
		s.Restarts += h.Restarts
		s.Calls += h.Calls
		s.Errors += h.Errors
		if h.LastErrorAt.After(s.LastErrAt) {
			s.LastError, s.LastErrAt = h.LastError, h.LastErrorAt
		}
		if h.UpdatedAt.After(s.UpdatedAt) {
			s.UpdatedAt, s.Latency = h.UpdatedAt, h.Latency
		}
		s.Instances = append(s.Instances, h)
	}
	out := make([]UpstreamStatus, 0, len(by))
	for _, s := range by {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Upstream < out[j].Upstream })
	return out, nil
}
