package state

import (
	"context"
	"time"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/internal/kit/metrics"
	"github.com/airlock-dev/airlock/store"
)

// scrapeTimeout bounds the store queries behind the scrape-time gauges.
const scrapeTimeout = 2 * time.Second

// RegisterGauges adds to m the gauges computed from the store at scrape time:
// state every process on the store shares, so a count kept in memory
// would be wrong (another process approves, a session idles out).
func RegisterGauges(m *metrics.Metrics, db *store.DB) {
	count := func(f func(ctx context.Context) (int, error)) func() float64 {
		return func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
			defer cancel()
			n, err := f(ctx)
			if err != nil {
				return -1 // a scrape must not fail; -1 says "unknown" on a dashboard
			}
			return float64(n)
		}
	}
	m.GaugeFunc("airlock_approvals_pending", "Declarations waiting for an approver's decision (all processes on the store; -1 when the store cannot be read).",
		count(func(ctx context.Context) (int, error) {
			ds, err := db.Declarations().List(ctx, declarations.Filter{States: []declarations.State{declarations.StateDeclared}})
			return len(ds), err
		}))
	m.GaugeFunc("airlock_sessions_open", "Transport sessions open on the store (all processes; -1 when the store cannot be read).",
		count(func(ctx context.Context) (int, error) {
			ss, err := db.ListSessions(ctx, "", true)
			return len(ss), err
		}))
}
