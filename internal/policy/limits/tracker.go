package limits

import (
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/internal/kit/capability"
	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// maxCached bounds the per-capability cache. Capability ids come from the
// runner's tool table, but pipeline.run:<name> carries a name from the call,
// so the cache must not grow with whatever an agent sends.
const maxCached = 256

// Tracker enforces one spec of limits. Its consumption lives in a [State]:
// either the tracker's own (Admit, for a single process) or one the caller
// loads from and saves to the store (AdmitState), which is how Airlock keeps
// limits per runtime context across reconnects, restarts and processes. It
// is safe for concurrent use; Admit is serialised so that two concurrent
// calls cannot both take the last token or the last of the budget.
type Tracker struct {
	spec   Spec
	now    func() time.Time
	err    error // why spec is unusable; every Admit is then refused
	costs  []costRule
	maxMic int64 // MaxTotalCost in micro-units; 0 = unlimited
	rates  []rateRule

	mu     sync.Mutex // serialises Admit on mem
	mem    State      // Admit's own state
	planMu sync.Mutex
	plans  map[string]plan // capability → which costs and buckets apply
}

type costRule struct {
	pat capability.Pattern
	mic int64
}

type rateRule struct {
	pat  capability.Pattern
	key  string // pat.String(): the bucket's key in State.Buckets
	spec RateSpec
	rate float64 // tokens per second
	size float64
}

// State is what one scope (a runtime context for counters, a principal for
// rates) has consumed. It is plain data so a store can keep it as JSON.
type State struct {
	Actions     int64                  `json:"actions,omitempty"`
	SpentMicros int64                  `json:"spent_micros,omitempty"`
	Buckets     map[string]BucketState `json:"buckets,omitempty"` // by capability pattern
}

// BucketState is one token bucket; a bucket not yet in a State is full.
type BucketState struct {
	Tokens float64   `json:"tokens"`
	Last   time.Time `json:"last"`
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

// Usage converts a State's counters to cost units.
func (s *State) Usage() Usage {
	return Usage{Actions: s.Actions, Cost: float64(s.SpentMicros) / microsPerUnit}
}

// NewTracker returns a tracker for spec. now is the clock (nil means
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
	for _, k := range sortedKeys(spec.Rate) {
		r := spec.Rate[k]
		pat := capability.MustParse(k)
		t.rates = append(t.rates, rateRule{pat: pat, key: pat.String(), spec: r, rate: r.PerMinute / 60, size: float64(r.burst())})
	}
	return t
}

// maxRetryAfter bounds the wait a rate refusal names.
const maxRetryAfter = 100 * 365 * 24 * time.Hour

func micros(v float64) int64 { return int64(math.Round(v * microsPerUnit)) }

// Counts reports whether the spec limits anything Admit counts (actions,
// cost or rates); when it does not, callers need not load or save state.
func (t *Tracker) Counts() bool {
	return t.err != nil || t.spec.MaxActions > 0 || t.maxMic > 0 || len(t.costs) > 0 || len(t.rates) > 0
}

// Admit counts one call of capability against every limit, in the tracker's
// own state. If any limit would be exceeded nothing is consumed and the
// result is a *violation.Error with code LIMIT_EXCEEDED whose cause is an
// *ExceededError.
func (t *Tracker) Admit(capability string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.AdmitState(&t.mem, &t.mem, capability, t.now())
}

// AdmitState is Admit against state the caller holds: max_actions and
// max_total_cost are counted in counters, rate buckets in rates (the two may
// be the same). On refusal neither is changed. The caller serialises calls
// on the same states (the store does, in a transaction).
func (t *Tracker) AdmitState(counters, rates *State, capability string, now time.Time) error {
	if t.err != nil {
		return violation.Wrap(violation.LimitExceeded, t.err, "limits are misconfigured; no call is admitted")
	}
	if t.spec.MaxActions > 0 && counters.Actions >= t.spec.MaxActions {
		return t.exceeded(&ExceededError{Limit: "max_actions", Capability: capability, Err: ErrMaxActions},
			"limit max_actions (%d) reached", t.spec.MaxActions)
	}
	pl := t.plan(capability)
	if t.maxMic > 0 && counters.SpentMicros+pl.cost > t.maxMic {
		return t.exceeded(&ExceededError{Limit: "max_total_cost", Capability: capability, Err: ErrMaxTotalCost},
			"limit max_total_cost (%g) reached: %g spent, this call costs %g",
			t.spec.MaxTotalCost, float64(counters.SpentMicros)/microsPerUnit, float64(pl.cost)/microsPerUnit)
	}
	refilled := make([]BucketState, len(pl.buckets))
	for j, i := range pl.buckets {
		r := &t.rates[i]
		b, ok := rates.Buckets[r.key]
		if !ok {
			b = BucketState{Tokens: r.size, Last: now}
		}
		b = r.refill(b, now)
		if b.Tokens < 1 {
			// At most maxRetryAfter: a rate of 1e-9 a minute would wait
			// ~2,000 years, past what a Duration holds (it wrapped negative).
			wait := time.Duration(min(math.Ceil((1-b.Tokens)/r.rate*float64(time.Second)), float64(maxRetryAfter)))
			return t.exceeded(&ExceededError{Limit: "rate", Pattern: r.key, Capability: capability, RetryAfter: wait, Err: ErrRate},
				"rate limit for %s (%s) reached; retry in %s", r.key, r.spec, wait.Round(time.Second))
		}
		refilled[j] = b
	}
	// Every check passed: consume.
	for j, i := range pl.buckets {
		if rates.Buckets == nil {
			rates.Buckets = map[string]BucketState{}
		}
		b := refilled[j]
		b.Tokens--
		rates.Buckets[t.rates[i].key] = b
	}
	counters.Actions++
	counters.SpentMicros += pl.cost
	return nil
}

func (t *Tracker) exceeded(e *ExceededError, format string, args ...any) error {
	return violation.Wrap(violation.LimitExceeded, e, format, args...)
}

// plan returns the costs and buckets for capability, cached.
func (t *Tracker) plan(id string) plan {
	t.planMu.Lock()
	defer t.planMu.Unlock()
	if pl, ok := t.plans[id]; ok {
		return pl
	}
	var pl plan
	for _, c := range t.costs {
		if c.pat.Match(id) && c.mic > pl.cost {
			pl.cost = c.mic
		}
	}
	for i := range t.rates {
		if t.rates[i].pat.Match(id) {
			pl.buckets = append(pl.buckets, i)
		}
	}
	if len(t.plans) < maxCached {
		t.plans[id] = pl
	}
	return pl
}

func (r *rateRule) refill(b BucketState, now time.Time) BucketState {
	if d := now.Sub(b.Last); d > 0 {
		b.Tokens = min(r.size, b.Tokens+d.Seconds()*r.rate)
		b.Last = now
	}
	// A clock that went backwards leaves Last where it was, so the bucket
	// refills from the later instant once time catches up.
	return b
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
	return t.mem.Usage()
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
