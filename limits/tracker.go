package limits

import (
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/policy/capability"
	"github.com/airlock-dev/airlock/violation"
)

// maxCached bounds the per-capability cache. Capability ids come from the
// runner's tool table, but pipeline.run:<name> carries a name from the call,
// so the cache must not grow with whatever an agent sends.
const maxCached = 256

// Tracker enforces one session's limits. It is safe for concurrent use;
// Admit is serialised so that two concurrent calls cannot both take the last
// token or the last of the budget.
type Tracker struct {
	spec   Spec
	now    func() time.Time
	err    error // why spec is unusable; every Admit is then refused
	costs  []costRule
	maxMic int64 // MaxTotalCost in micro-units; 0 = unlimited

	mu      sync.Mutex
	actions int64
	spent   int64 // micro-units
	buckets []bucket
	plans   map[string]plan // capability → which costs and buckets apply
}

type costRule struct {
	pat capability.Pattern
	mic int64
}

type bucket struct {
	pat    capability.Pattern
	spec   RateSpec
	rate   float64 // tokens per second
	size   float64
	tokens float64
	last   time.Time
}

// plan is what Admit needs to know about one capability, computed once.
type plan struct {
	cost    int64
	buckets []int
}

// Usage is what a session has consumed so far.
type Usage struct {
	Actions int64
	Cost    float64
}

// NewTracker returns a tracker for one session. now is the clock (nil means
// time.Now). An invalid spec (see Spec.Validate) does not panic: the tracker
// fails closed and refuses every call with the validation error as cause.
func NewTracker(spec Spec, now func() time.Time) *Tracker {
	if now == nil {
		now = time.Now
	}
	t := &Tracker{spec: spec, now: now, plans: make(map[string]plan)}
	if t.err = spec.Validate(); t.err != nil {
		return t
	}
	t.maxMic = micros(spec.MaxTotalCost)
	for _, k := range sortedKeys(spec.Costs) {
		t.costs = append(t.costs, costRule{pat: capability.MustParse(k), mic: micros(spec.Costs[k])})
	}
	start := now()
	for _, k := range sortedKeys(spec.Rate) {
		r := spec.Rate[k]
		size := float64(r.burst())
		t.buckets = append(t.buckets, bucket{
			pat: capability.MustParse(k), spec: r, rate: r.PerMinute / 60, size: size, tokens: size, last: start,
		})
	}
	return t
}

func micros(v float64) int64 { return int64(math.Round(v * microsPerUnit)) }

// Admit counts one call of capability against every limit. If any limit
// would be exceeded nothing is consumed and the result is a *violation.Error
// with code LIMIT_EXCEEDED whose cause is an *ExceededError.
func (t *Tracker) Admit(capability string) error {
	if t.err != nil {
		return violation.Wrap(violation.LimitExceeded, t.err, "limits are misconfigured; no call is admitted")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.spec.MaxActions > 0 && t.actions >= t.spec.MaxActions {
		return t.exceeded(&ExceededError{Limit: "max_actions", Capability: capability, Err: ErrMaxActions},
			"limit max_actions (%d) reached", t.spec.MaxActions)
	}
	pl := t.plan(capability)
	if t.maxMic > 0 && t.spent+pl.cost > t.maxMic {
		return t.exceeded(&ExceededError{Limit: "max_total_cost", Capability: capability, Err: ErrMaxTotalCost},
			"limit max_total_cost (%g) reached: %g spent, this call costs %g",
			t.spec.MaxTotalCost, float64(t.spent)/microsPerUnit, float64(pl.cost)/microsPerUnit)
	}
	now := t.now()
	for _, i := range pl.buckets {
		b := &t.buckets[i]
		b.refill(now)
		if b.tokens < 1 {
			wait := time.Duration(math.Ceil((1 - b.tokens) / b.rate * float64(time.Second)))
			return t.exceeded(&ExceededError{Limit: "rate", Pattern: b.pat.String(), Capability: capability, RetryAfter: wait, Err: ErrRate},
				"rate limit for %s (%s) reached; retry in %s", b.pat, b.spec, wait.Round(time.Second))
		}
	}
	// Every check passed: consume. Refills above are not consumption; they
	// only bring buckets up to date with the clock.
	for _, i := range pl.buckets {
		t.buckets[i].tokens--
	}
	t.actions++
	t.spent += pl.cost
	return nil
}

func (t *Tracker) exceeded(e *ExceededError, format string, args ...any) error {
	return violation.Wrap(violation.LimitExceeded, e, format, args...)
}

// plan returns the costs and buckets for capability, cached. Called with mu held.
func (t *Tracker) plan(id string) plan {
	if pl, ok := t.plans[id]; ok {
		return pl
	}
	var pl plan
	for _, c := range t.costs {
		if c.pat.Match(id) && c.mic > pl.cost {
			pl.cost = c.mic
		}
	}
	for i := range t.buckets {
		if t.buckets[i].pat.Match(id) {
			pl.buckets = append(pl.buckets, i)
		}
	}
	if len(t.plans) < maxCached {
		t.plans[id] = pl
	}
	return pl
}

func (b *bucket) refill(now time.Time) {
	if d := now.Sub(b.last); d > 0 {
		b.tokens = min(b.size, b.tokens+d.Seconds()*b.rate)
		b.last = now
	}
	// A clock that went backwards leaves last where it was, so the bucket
	// refills from the later instant once time catches up.
}

// Deadline is the wall-clock limit of one call (0 = none).
func (t *Tracker) Deadline() time.Duration {
	return time.Duration(t.spec.MaxExecutionTimeMS) * time.Millisecond
}

// DeadlineExceeded is the refusal the runner reports when a call ran past
// Deadline; cause is the handler's error, kept for the audit trail.
func (t *Tracker) DeadlineExceeded(cause error) error {
	return violation.Wrap(violation.LimitExceeded,
		&ExceededError{Limit: "max_execution_time_ms", Err: fmt.Errorf("%w: %w", ErrExecutionTime, cause)},
		"limit max_execution_time_ms (%d) reached", t.spec.MaxExecutionTimeMS)
}

// CPUTime is the CPU-time ceiling for a pipeline run (0 = none).
func (t *Tracker) CPUTime() time.Duration {
	return time.Duration(t.spec.MaxCPUTimeMS) * time.Millisecond
}

// MemoryBytes is the memory ceiling for a pipeline run (0 = none).
func (t *Tracker) MemoryBytes() int64 { return t.spec.MaxMemoryBytes }

// Spec returns the limits the tracker enforces. Its maps are shared and must
// not be modified.
func (t *Tracker) Spec() Spec { return t.spec }

// Usage returns what the session has consumed so far.
func (t *Tracker) Usage() Usage {
	t.mu.Lock()
	defer t.mu.Unlock()
	return Usage{Actions: t.actions, Cost: float64(t.spent) / microsPerUnit}
}

// ExceededError says which limit refused a call. It wraps ErrMaxActions,
// ErrMaxTotalCost, ErrRate or ErrExecutionTime.
type ExceededError struct {
	Limit      string        // the spec field: max_actions, max_total_cost, rate, max_execution_time_ms
	Pattern    string        // for rate: the bucket's capability pattern
	Capability string        // the refused call's capability
	RetryAfter time.Duration // for rate: when the bucket will hold a token again
	Err        error
}

func (e *ExceededError) Error() string {
	s := e.Limit
	if e.Pattern != "" {
		s += "[" + e.Pattern + "]"
	}
	if e.Capability != "" {
		s += " for " + e.Capability
	}
	if e.RetryAfter > 0 {
		s += " (retry after " + strconv.FormatInt(e.RetryAfter.Milliseconds(), 10) + "ms)"
	}
	return s + ": " + e.Err.Error()
}

func (e *ExceededError) Unwrap() error { return e.Err }
