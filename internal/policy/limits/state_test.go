package limits

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// roundTrip marshals and unmarshals s, as a store keeping State as JSON
// does between calls.
func roundTrip(t *testing.T, s State) State {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var out State
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
	return out
}

// cloneState deep-copies s so a later change to s cannot reach the copy.
func cloneState(s State) State {
	out := s
	if s.Buckets != nil {
		out.Buckets = make(map[string]BucketState, len(s.Buckets))
		for k, v := range s.Buckets {
			out.Buckets[k] = v
		}
	}
	return out
}

// exceeded returns the *ExceededError under err, or nil.
func exceeded(err error) *ExceededError {
	var ex *ExceededError
	if errors.As(err, &ex) {
		return ex
	}
	return nil
}

func TestAdmitStateMatchesAdmit(t *testing.T) {
	tests := []scenario{
		{"no limits", Spec{}, []step{{0, "comm.fetch", nil}, {time.Hour, "pool.read", nil}}},
		{"max_actions", Spec{MaxActions: 3}, []step{
			{0, "a", nil}, {0, "b", nil}, {time.Second, "c", nil}, {0, "a", ErrMaxActions}, {time.Hour, "a", ErrMaxActions},
		}},
		{"max_total_cost", Spec{MaxTotalCost: 2.5, Costs: map[string]float64{"comm.*": 1, "comm.fetch": 1.5, "pool.read": 0.25}}, []step{
			{0, "comm.fetch", nil},             // 1.5
			{0, "comm.fetch", ErrMaxTotalCost}, // would be 3
			{0, "pool.read", nil},              // 1.75
			{0, "pool.write", nil},             // free
			{0, "pool.read", nil},              // 2
			{0, "comm.search", ErrMaxTotalCost},
			{0, "pool.read", nil}, {0, "pool.read", nil}, // 2.5 exactly
			{0, "pool.read", ErrMaxTotalCost},
			{0, "pool.write", nil},
		}},
		{"rate with refill", Spec{Rate: map[string]RateSpec{"comm.*": {PerMinute: 6, Burst: 2}}}, []step{
			{0, "comm.fetch", nil}, {0, "comm.search", nil},
			{0, "comm.fetch", ErrRate},
			{3 * time.Second, "comm.fetch", ErrRate}, // 0.3 tokens
			{0, "pool.read", nil},
			{6500 * time.Millisecond, "comm.fetch", ErrRate}, // 0.95 tokens
			{500 * time.Millisecond, "comm.fetch", nil},      // 1 token
			{0, "comm.fetch", ErrRate},
			{time.Hour, "comm.fetch", nil}, {0, "comm.fetch", nil}, {0, "comm.fetch", ErrRate},
			{-time.Minute, "comm.fetch", ErrRate}, // clock went back
			{time.Minute + 10*time.Second, "comm.fetch", nil},
		}},
		{"fractional rate", Spec{Rate: map[string]RateSpec{"a": {PerMinute: 7, Burst: 1}}}, []step{
			{0, "a", nil}, {time.Second, "a", ErrRate}, {7 * time.Second, "a", ErrRate}, {time.Second, "a", nil},
			{1234 * time.Millisecond, "a", ErrRate}, {7654 * time.Millisecond, "a", nil},
		}},
		{"several buckets", Spec{Rate: map[string]RateSpec{"comm.*": {PerMinute: 60, Burst: 3}, "comm.fetch": {PerMinute: 30, Burst: 1}, "*": {PerMinute: 120, Burst: 4}}}, []step{
			{0, "comm.fetch", nil}, {0, "comm.fetch", ErrRate}, {0, "comm.search", nil}, {0, "pool.read", nil},
			{0, "comm.search", nil}, {0, "pool.read", ErrRate}, {500 * time.Millisecond, "pool.read", nil},
			{time.Second, "comm.fetch", ErrRate}, {time.Second, "comm.fetch", nil},
		}},
		{"everything", Spec{
			MaxActions: 6, MaxTotalCost: 4,
			Costs: map[string]float64{"comm.*": 1},
			Rate:  map[string]RateSpec{"comm.*": {PerMinute: 12, Burst: 2}},
		}, []step{
			{0, "comm.fetch", nil}, {0, "comm.fetch", nil}, {0, "comm.fetch", ErrRate},
			{2 * time.Second, "comm.fetch", ErrRate}, {3 * time.Second, "comm.fetch", nil},
			{0, "pool.read", nil},
			{time.Minute, "comm.fetch", nil}, {0, "comm.fetch", ErrMaxTotalCost},
			{0, "pool.read", nil}, {0, "pool.read", ErrMaxActions}, {time.Hour, "comm.fetch", ErrMaxActions},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			mem := NewTracker(tc.spec, c.now)
			persisted := NewTracker(tc.spec, func() time.Time { panic("AdmitState must use the now it is given") })
			var stored State // what the store holds between calls
			for i, s := range tc.steps {
				c.advance(s.advance)
				want := mem.Admit(s.cap)
				st := roundTrip(t, stored)
				got := persisted.AdmitState(&st, &st, s.cap, c.now())
				stored = roundTrip(t, st)

				if !errors.Is(want, s.want) && !(want == nil && s.want == nil) {
					t.Fatalf("step %d (%s): Admit = %v, script wants %v", i, s.cap, want, s.want)
				}
				if (got == nil) != (want == nil) {
					t.Fatalf("step %d (%s): AdmitState = %v, Admit = %v", i, s.cap, got, want)
				}
				if want != nil {
					if got.Error() != want.Error() {
						t.Fatalf("step %d (%s): AdmitState = %q, Admit = %q", i, s.cap, got, want)
					}
					if code, _ := violation.CodeOf(got); code != violation.LimitExceeded {
						t.Fatalf("step %d: code = %q", i, code)
					}
					ge, we := exceeded(got), exceeded(want)
					if ge == nil || we == nil {
						t.Fatalf("step %d: no *ExceededError: %v / %v", i, got, want)
					}
					if ge.Limit != we.Limit || ge.Pattern != we.Pattern || ge.Capability != we.Capability ||
						ge.RetryAfter != we.RetryAfter || !errors.Is(ge, s.want) {
						t.Fatalf("step %d: AdmitState %+v, Admit %+v", i, ge, we)
					}
					if s.want == ErrRate && ge.RetryAfter <= 0 {
						t.Fatalf("step %d: rate refusal without a retry-after: %+v", i, ge)
					}
				}
				if gu, wu := stored.Usage(), mem.Usage(); gu != wu {
					t.Fatalf("step %d: usage %+v, in memory %+v", i, gu, wu)
				}
			}
			mem.mu.Lock()
			defer mem.mu.Unlock()
			if !reflect.DeepEqual(roundTrip(t, mem.mem), stored) {
				t.Fatalf("final state %+v, in memory %+v", stored, mem.mem)
			}
		})
	}
}

func TestAdmitStateRetryAfter(t *testing.T) {
	c := newClock()
	tr := NewTracker(Spec{Rate: map[string]RateSpec{"comm.*": {PerMinute: 10, Burst: 1}}}, nil)
	var st State
	if err := tr.AdmitState(&st, &st, "comm.fetch", c.now()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		advance time.Duration
		want    time.Duration
	}{{0, 6 * time.Second}, {time.Second, 5 * time.Second}, {2500 * time.Millisecond, 2500 * time.Millisecond}, {2499 * time.Millisecond, time.Millisecond}} {
		c.advance(tc.advance)
		st = roundTrip(t, st)
		err := tr.AdmitState(&st, &st, "comm.fetch", c.now())
		var ex *ExceededError
		if !errors.As(err, &ex) {
			t.Fatalf("err = %v, want *ExceededError", err)
		}
		// Float arithmetic may round the wait up by a few nanoseconds.
		if ex.Limit != "rate" || ex.Pattern != "comm.*" || ex.RetryAfter < tc.want || ex.RetryAfter > tc.want+time.Microsecond || !errors.Is(err, ErrRate) {
			t.Fatalf("after %v: %+v, want retry after %v", tc.advance, ex, tc.want)
		}
		// Waiting the retry-after admits; waiting less does not.
		early := roundTrip(t, st)
		if err := tr.AdmitState(&early, &early, "comm.fetch", c.now().Add(ex.RetryAfter-time.Microsecond)); !errors.Is(err, ErrRate) {
			t.Fatalf("admitted before the retry-after: %v", err)
		}
		onTime := roundTrip(t, st)
		if err := tr.AdmitState(&onTime, &onTime, "comm.fetch", c.now().Add(ex.RetryAfter)); err != nil {
			t.Fatalf("after waiting the retry-after %v: %v", ex.RetryAfter, err)
		}
	}
}

func TestAdmitStateRefusalChangesNothing(t *testing.T) {
	now := newClock().now()
	spec := Spec{
		MaxActions: 5, MaxTotalCost: 3,
		Costs: map[string]float64{"comm.*": 1, "big": 10},
		Rate:  map[string]RateSpec{"*": {PerMinute: 60, Burst: 10}, "comm.*": {PerMinute: 60, Burst: 5}, "comm.fetch": {PerMinute: 1, Burst: 1}},
	}
	tr := NewTracker(spec, nil)
	full := func() map[string]BucketState {
		return map[string]BucketState{"*": {Tokens: 5, Last: now}, "comm.*": {Tokens: 2, Last: now}}
	}
	tests := []struct {
		name             string
		counters, rates  State
		cap              string
		want             error
		countersAreRates bool
	}{
		{"max_actions", State{Actions: 5, SpentMicros: 1e6}, State{Buckets: full()}, "pool.read", ErrMaxActions, false},
		{"max_total_cost", State{Actions: 1, SpentMicros: 25e5}, State{Buckets: full()}, "comm.search", ErrMaxTotalCost, false},
		{"cost above the budget alone", State{}, State{}, "big", ErrMaxTotalCost, false},
		{"last of several buckets empty", State{Actions: 1}, State{Buckets: map[string]BucketState{
			"*": {Tokens: 5, Last: now}, "comm.*": {Tokens: 3, Last: now}, "comm.fetch": {Tokens: 0.5, Last: now.Add(-time.Second)},
		}}, "comm.fetch", ErrRate, false},
		{"first bucket empty, others absent", State{}, State{Buckets: map[string]BucketState{"*": {Tokens: 0.25, Last: now}}}, "comm.fetch", ErrRate, false},
		{"shared state", State{Actions: 2, SpentMicros: 1e6, Buckets: map[string]BucketState{"comm.*": {Tokens: 0, Last: now}}}, State{}, "comm.search", ErrRate, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			counters, rates := &tc.counters, &tc.rates
			if tc.countersAreRates {
				rates = counters
			}
			before := [2]State{cloneState(*counters), cloneState(*rates)}
			err := tr.AdmitState(counters, rates, tc.cap, now.Add(100*time.Millisecond))
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if after := [2]State{*counters, *rates}; !reflect.DeepEqual(before, after) {
				t.Fatalf("refusal changed the state:\nbefore %+v\nafter  %+v", before, after)
			}
		})
	}
	// A refusal leaves a state without buckets without buckets (nil, not
	// an empty map), and the same for an invalid spec.
	var counters, rates State
	if err := NewTracker(Spec{MaxActions: -1}, nil).AdmitState(&counters, &rates, "a", now); !errors.Is(err, ErrInvalid) {
		t.Fatalf("invalid spec: err = %v, want ErrInvalid", err)
	}
	if !reflect.DeepEqual(counters, State{}) || !reflect.DeepEqual(rates, State{}) {
		t.Fatalf("invalid spec changed the state: %+v %+v", counters, rates)
	}
}

func TestAdmitStateSeparateCountersAndRates(t *testing.T) {
	c := newClock()
	spec := Spec{
		MaxActions: 3, MaxTotalCost: 10,
		Costs: map[string]float64{"comm.*": 2},
		Rate:  map[string]RateSpec{"comm.*": {PerMinute: 60, Burst: 4}},
	}
	tr := NewTracker(spec, nil)
	// Two contexts of one principal: counters per context, rates per
	// principal.
	var ctxA, ctxB, principal State
	admit := func(counters *State, cap string) error {
		*counters = roundTrip(t, *counters)
		principal = roundTrip(t, principal)
		return tr.AdmitState(counters, &principal, cap, c.now())
	}
	for i, s := range []struct {
		ctx  *State
		cap  string
		want error
	}{
		{&ctxA, "comm.fetch", nil},
		{&ctxA, "comm.fetch", nil},
		{&ctxB, "comm.fetch", nil},
		{&ctxA, "pool.read", nil},
		{&ctxA, "pool.read", ErrMaxActions}, // A's counters are spent...
		{&ctxB, "comm.fetch", nil},          // ...B's are not, and takes the last shared token
		{&ctxB, "comm.fetch", ErrRate},
		{&ctxB, "pool.read", nil}, // no bucket for pool.*
	} {
		err := admit(s.ctx, s.cap)
		if (s.want == nil) != (err == nil) || (s.want != nil && !errors.Is(err, s.want)) {
			t.Fatalf("step %d (%s): err = %v, want %v", i, s.cap, err, s.want)
		}
	}
	if ctxA.Actions != 3 || ctxA.SpentMicros != 4e6 || ctxA.Buckets != nil {
		t.Fatalf("context A = %+v, want 3 actions, 4 spent, no buckets", ctxA)
	}
	if ctxB.Actions != 3 || ctxB.SpentMicros != 4e6 || ctxB.Buckets != nil {
		t.Fatalf("context B = %+v, want 3 actions, 4 spent, no buckets", ctxB)
	}
	if principal.Actions != 0 || principal.SpentMicros != 0 {
		t.Fatalf("rates state counted actions or cost: %+v", principal)
	}
	b, ok := principal.Buckets["comm.*"]
	if !ok || b.Tokens != 0 || !b.Last.Equal(c.now()) || len(principal.Buckets) != 1 {
		t.Fatalf("rates state buckets = %+v, want comm.* empty at %v", principal.Buckets, c.now())
	}
}

func TestCounts(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want bool
	}{
		{"empty", Spec{}, false},
		{"per-call limits only", Spec{MaxExecutionTimeMS: 100, MaxCPUTimeMS: 10, MaxMemoryBytes: 1 << 20}, false},
		{"max_actions", Spec{MaxActions: 1}, true},
		{"max_total_cost", Spec{MaxTotalCost: 1}, true},
		{"costs", Spec{Costs: map[string]float64{"comm.*": 1}}, true},
		{"rate", Spec{Rate: map[string]RateSpec{"comm.*": {PerMinute: 1}}}, true},
		{"invalid spec (refuses every call)", Spec{MaxActions: -1}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := NewTracker(tc.spec, nil).Counts(); got != tc.want {
				t.Fatalf("Counts() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStateJSON(t *testing.T) {
	last := newClock().now()
	s := State{Actions: 2, SpentMicros: 1500000, Buckets: map[string]BucketState{"comm.*": {Tokens: 0.1 + 0.2, Last: last}}}
	if got := roundTrip(t, s); !reflect.DeepEqual(got, s) {
		t.Fatalf("round trip = %+v, want %+v", got, s)
	}
	b, _ := json.Marshal(State{})
	if string(b) != "{}" {
		t.Fatalf("empty state encodes as %s", b)
	}
}
