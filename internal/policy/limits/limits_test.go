package limits

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// clock is a fake clock the tests move by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newClock() *clock { return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

// step is one action in a limits scenario: advance the clock, then admit
// capability and expect the sentinel (nil = admitted).
type step struct {
	advance time.Duration
	cap     string
	want    error
}

// scenario is a named script of steps under one Spec.
type scenario struct {
	name  string
	spec  Spec
	steps []step
}

func TestAdmit(t *testing.T) {
	tests := []scenario{
		{"no limits", Spec{}, []step{{0, "comm.fetch", nil}, {0, "comm.fetch", nil}, {0, "pool.read", nil}}},
		{"max_actions", Spec{MaxActions: 2}, []step{
			{0, "pool.read", nil}, {0, "comm.fetch", nil}, {0, "pool.read", ErrMaxActions}, {time.Hour, "pool.read", ErrMaxActions},
		}},
		{"max_total_cost", Spec{MaxTotalCost: 3, Costs: map[string]float64{"comm.*": 1, "comm.fetch": 2}}, []step{
			{0, "comm.fetch", nil},              // 2
			{0, "comm.fetch", ErrMaxTotalCost},  // would be 4
			{0, "comm.search", nil},             // 3: lands exactly on the budget
			{0, "pool.read", nil},               // costs nothing
			{0, "comm.search", ErrMaxTotalCost}, // would be 4
		}},
		{"highest matching cost wins", Spec{MaxTotalCost: 2, Costs: map[string]float64{"comm.fetch": 1, "comm.*": 2}}, []step{
			{0, "comm.fetch", nil}, {0, "comm.fetch", ErrMaxTotalCost},
		}},
		{"fractional costs are exact", Spec{MaxTotalCost: 1, Costs: map[string]float64{"x": 0.1}}, []step{
			{0, "x", nil}, {0, "x", nil}, {0, "x", nil}, {0, "x", nil}, {0, "x", nil},
			{0, "x", nil}, {0, "x", nil}, {0, "x", nil}, {0, "x", nil}, {0, "x", nil},
			{0, "x", ErrMaxTotalCost},
		}},
		{"rate burst then refill", Spec{Rate: map[string]RateSpec{"comm.*": {PerMinute: 6, Burst: 2}}}, []step{
			{0, "comm.fetch", nil}, {0, "comm.search", nil}, // burst shared by the pattern
			{0, "comm.fetch", ErrRate},
			{0, "pool.read", nil},                              // other capabilities unaffected
			{9 * time.Second, "comm.fetch", ErrRate},           // 0.9 tokens
			{time.Second, "comm.fetch", nil},                   // 1 token after 10s
			{10 * time.Minute, "comm.fetch", nil},              // refill caps at burst...
			{0, "comm.fetch", nil}, {0, "comm.fetch", ErrRate}, // ...so only two back to back
		}},
		{"default burst is per_minute rounded up", Spec{Rate: map[string]RateSpec{"a": {PerMinute: 2.5}}}, []step{
			{0, "a", nil}, {0, "a", nil}, {0, "a", nil}, {0, "a", ErrRate},
		}},
		{"every matching bucket is charged", Spec{Rate: map[string]RateSpec{"comm.*": {PerMinute: 60, Burst: 3}, "comm.fetch": {PerMinute: 60, Burst: 1}}}, []step{
			{0, "comm.fetch", nil}, {0, "comm.fetch", ErrRate}, {0, "comm.search", nil}, {0, "comm.search", nil}, {0, "comm.search", ErrRate},
		}},
		{"clock going backwards refills nothing", Spec{Rate: map[string]RateSpec{"a": {PerMinute: 60, Burst: 1}}}, []step{
			{0, "a", nil}, {-time.Hour, "a", ErrRate}, {time.Hour, "a", ErrRate}, {time.Second, "a", nil},
		}},
		{"refusal consumes nothing", Spec{MaxActions: 2, Rate: map[string]RateSpec{"a": {PerMinute: 60, Burst: 1}}}, []step{
			{0, "a", nil}, {0, "a", ErrRate}, {0, "a", ErrRate}, {0, "b", nil}, {time.Minute, "a", ErrMaxActions},
		}},
		{"cost refusal leaves tokens", Spec{MaxTotalCost: 1, Costs: map[string]float64{"a": 1}, Rate: map[string]RateSpec{"*": {PerMinute: 60, Burst: 2}}}, []step{
			{0, "a", nil}, {0, "a", ErrMaxTotalCost}, {0, "b", nil},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			tr := NewTracker(tc.spec, c.now)
			for i, s := range tc.steps {
				c.advance(s.advance)
				err := tr.Admit(s.cap)
				if s.want == nil {
					if err != nil {
						t.Fatalf("step %d (%s): %v", i, s.cap, err)
					}
					continue
				}
				if !errors.Is(err, s.want) {
					t.Fatalf("step %d (%s): err = %v, want %v", i, s.cap, err, s.want)
				}
				if code, _ := violation.CodeOf(err); code != violation.LimitExceeded {
					t.Fatalf("step %d: code = %q", i, code)
				}
			}
		})
	}
}

func TestExceededErrorNamesTheLimit(t *testing.T) {
	c := newClock()
	tr := NewTracker(Spec{Rate: map[string]RateSpec{"comm.*": {PerMinute: 10, Burst: 1}}}, c.now)
	_ = tr.Admit("comm.fetch")
	err := tr.Admit("comm.fetch")
	var ex *ExceededError
	if !errors.As(err, &ex) {
		t.Fatalf("err = %v, want *ExceededError", err)
	}
	if ex.Limit != "rate" || ex.Pattern != "comm.*" || ex.Capability != "comm.fetch" || ex.RetryAfter != 6*time.Second {
		t.Fatalf("ExceededError = %+v", ex)
	}
	var v *violation.Error
	errors.As(err, &v)
	if pub := v.Public(); !strings.Contains(pub, "LIMIT_EXCEEDED") || !strings.Contains(pub, "comm.*") {
		t.Fatalf("public message %q does not name the limit", pub)
	}
}

func TestDeadlineAndPipelineLimits(t *testing.T) {
	tr := NewTracker(Spec{MaxExecutionTimeMS: 1500, MaxCPUTimeMS: 200, MaxMemoryBytes: 1 << 20}, nil)
	if tr.Deadline() != 1500*time.Millisecond || tr.CPUTime() != 200*time.Millisecond || tr.MemoryBytes() != 1<<20 {
		t.Fatalf("deadline %v cpu %v mem %d", tr.Deadline(), tr.CPUTime(), tr.MemoryBytes())
	}
	if NewTracker(Spec{}, nil).Deadline() != 0 {
		t.Fatal("zero spec has a deadline")
	}
	err := tr.DeadlineExceeded(errors.New("handler: context deadline exceeded"))
	if !errors.Is(err, ErrExecutionTime) {
		t.Fatalf("err = %v", err)
	}
	if code, _ := violation.CodeOf(err); code != violation.LimitExceeded {
		t.Fatalf("code = %q", code)
	}
}

func TestInvalidSpecFailsClosed(t *testing.T) {
	tr := NewTracker(Spec{MaxActions: -1}, nil)
	err := tr.Admit("pool.read")
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
}

func TestUsage(t *testing.T) {
	tr := NewTracker(Spec{Costs: map[string]float64{"a": 0.25}}, nil)
	for range 3 {
		if err := tr.Admit("a"); err != nil {
			t.Fatal(err)
		}
	}
	if u := tr.Usage(); u.Actions != 3 || u.Cost != 0.75 {
		t.Fatalf("usage = %+v", u)
	}
}

func TestAdmitConcurrent(t *testing.T) {
	tr := NewTracker(Spec{MaxActions: 100, Rate: map[string]RateSpec{"*": {PerMinute: 1, Burst: 60}}}, newClock().now)
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if tr.Admit("comm.fetch") == nil {
					mu.Lock()
					admitted++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if admitted != 60 {
		t.Fatalf("admitted %d, want exactly the burst of 60", admitted)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		path string // "" = valid
	}{
		{"zero", Spec{}, ""},
		{"full", Spec{MaxExecutionTimeMS: 1, MaxActions: 1, MaxTotalCost: 1, Costs: map[string]float64{"comm.*": 1}, Rate: map[string]RateSpec{"comm.*": {PerMinute: 1}}, MaxCPUTimeMS: 1, MaxMemoryBytes: 1}, ""},
		{"negative actions", Spec{MaxActions: -1}, ".max_actions"},
		{"negative memory", Spec{MaxMemoryBytes: -1}, ".max_memory_bytes"},
		{"huge time", Spec{MaxExecutionTimeMS: 1 << 62}, ".max_execution_time_ms"},
		{"negative budget", Spec{MaxTotalCost: -1}, ".max_total_cost"},
		{"bad cost pattern", Spec{Costs: map[string]float64{"comm fetch": 1}}, ".costs.'comm fetch'"},
		{"negative cost", Spec{Costs: map[string]float64{"comm.*": -1}}, ".costs.'comm.*'"},
		// Below a millionth a budget counted as none (fuzz: FuzzMergeNeverWidens).
		{"budget below the resolution", Spec{MaxTotalCost: 1e-7}, ".max_total_cost"},
		{"cost below the resolution", Spec{Costs: map[string]float64{"comm.*": 1e-7}}, ".costs.'comm.*'"},
		{"smallest budget", Spec{MaxTotalCost: 1e-6, Costs: map[string]float64{"comm.*": 1e-6}}, ""},
		{"zero rate", Spec{Rate: map[string]RateSpec{"a": {}}}, ".rate.a.per_minute"},
		{"negative burst", Spec{Rate: map[string]RateSpec{"a": {PerMinute: 1, Burst: -1}}}, ".rate.a.burst"},
		{"bad rate pattern", Spec{Rate: map[string]RateSpec{"a?": {PerMinute: 1}}}, ".rate.'a?'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.spec.Validate()
			if tc.path == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Path != tc.path {
				t.Fatalf("err = %v, want FieldError at %s", err, tc.path)
			}
		})
	}
}

func TestNarrows(t *testing.T) {
	parent := Spec{
		MaxExecutionTimeMS: 1000, MaxActions: 10, MaxTotalCost: 5,
		Costs: map[string]float64{"comm.*": 1},
		Rate:  map[string]RateSpec{"comm.*": {PerMinute: 10, Burst: 5}},
	}
	tests := []struct {
		name  string
		child Spec
		path  string // "" = narrows
	}{
		{"empty inherits", Spec{}, ""},
		{"tighter", Spec{MaxExecutionTimeMS: 500, MaxActions: 5, MaxTotalCost: 1, MaxMemoryBytes: 1 << 20, Costs: map[string]float64{"comm.*": 2, "pool.read": 0.5}, Rate: map[string]RateSpec{"comm.*": {PerMinute: 5, Burst: 1}, "pool.*": {PerMinute: 100}}}, ""},
		{"more time", Spec{MaxExecutionTimeMS: 2000}, ".max_execution_time_ms"},
		{"more actions", Spec{MaxActions: 11}, ".max_actions"},
		{"bigger budget", Spec{MaxTotalCost: 6}, ".max_total_cost"},
		{"cheaper action", Spec{Costs: map[string]float64{"comm.*": 0.5}}, ".costs.'comm.*'"},
		{"faster rate", Spec{Rate: map[string]RateSpec{"comm.*": {PerMinute: 20, Burst: 5}}}, ".rate.'comm.*'.per_minute"},
		{"bigger burst", Spec{Rate: map[string]RateSpec{"comm.*": {PerMinute: 10, Burst: 6}}}, ".rate.'comm.*'.burst"},
		{"default burst above parent's", Spec{Rate: map[string]RateSpec{"comm.*": {PerMinute: 9}}}, ".rate.'comm.*'.burst"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Narrows(parent, tc.child)
			if tc.path == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Path != tc.path || !errors.Is(err, ErrWidens) {
				t.Fatalf("err = %v, want ErrWidens at %s", err, tc.path)
			}
		})
	}
	if err := Narrows(Spec{}, Spec{MaxActions: 1 << 40}); err != nil {
		t.Fatalf("anything is within an unlimited parent: %v", err)
	}
}

func TestMerge(t *testing.T) {
	parent := Spec{MaxActions: 10, MaxTotalCost: 5, MaxCPUTimeMS: 100, Costs: map[string]float64{"comm.*": 1}, Rate: map[string]RateSpec{"comm.*": {PerMinute: 10}}}
	child := Spec{MaxActions: 3, Costs: map[string]float64{"pool.read": 1}, Rate: map[string]RateSpec{"comm.*": {PerMinute: 5}}}
	m := Merge(parent, child)
	if m.MaxActions != 3 || m.MaxTotalCost != 5 || m.MaxCPUTimeMS != 100 || len(m.Costs) != 2 || m.Rate["comm.*"].PerMinute != 5 {
		t.Fatalf("merged = %+v", m)
	}
	if parent.Rate["comm.*"].PerMinute != 10 {
		t.Fatal("Merge modified the parent")
	}
}

func TestKey(t *testing.T) {
	for in, want := range map[string]string{"max": ".max", "comm.*": ".'comm.*'", `it's`: `.'it\'s'`} {
		if got := Key(in); got != want {
			t.Errorf("Key(%q) = %q, want %q", in, got, want)
		}
	}
}

func BenchmarkAdmit(b *testing.B) {
	spec := Spec{
		MaxActions: 1 << 62, MaxTotalCost: 1e12,
		Costs: map[string]float64{"comm.*": 1, "pool.*": 0.01},
		Rate:  map[string]RateSpec{"comm.*": {PerMinute: 1e9, Burst: 1e9}, "pool.*": {PerMinute: 1e9, Burst: 1e9}},
	}
	tr := NewTracker(spec, time.Now)
	b.ReportAllocs()
	for b.Loop() {
		if err := tr.Admit("comm.fetch"); err != nil {
			b.Fatal(err)
		}
	}
}
