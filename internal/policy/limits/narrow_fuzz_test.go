package limits

import (
	"errors"
	"testing"
	"time"
)

// fuzzPatterns and fuzzCaps are the capability patterns a generated spec
// keys its costs and rates by, and the capabilities the calls name: few
// enough that patterns of parent and child overlap and calls match them.
var (
	fuzzPatterns = [...]string{"comm.*", "comm.fetch", "pool.read", "*", "pipeline.run:*"}
	fuzzCaps     = [...]string{"comm.fetch", "comm.search", "pool.read", "pipeline.run:report"}
)

// fuzzSpec builds a spec from the fuzzer's numbers: one cost and one rate
// pattern chosen by pat.
func fuzzSpec(maxActions int64, maxCost float64, pat uint8, cost, perMinute float64, burst int64) Spec {
	s := Spec{MaxActions: maxActions, MaxTotalCost: maxCost}
	if cost != 0 {
		s.Costs = map[string]float64{fuzzPatterns[int(pat)%len(fuzzPatterns)]: cost}
	}
	if perMinute != 0 {
		s.Rate = map[string]RateSpec{fuzzPatterns[int(pat>>4)%len(fuzzPatterns)]: {PerMinute: perMinute, Burst: burst}}
	}
	return s
}

// FuzzMergeNeverWidens checks the package's narrowing promise end to end:
// for a valid parent and a valid child that Narrows accepts, the merged
// limits a child policy runs under never admit a call the parent's would
// refuse. Every call the merged tracker admits (clock moved by the
// fuzzer's steps) is replayed on a tracker of the parent's limits, which
// must admit it too; the merged deadline, CPU time and memory are within
// the parent's; and every rate refusal says to retry after a positive,
// finite wait. It would catch a child policy (`extends`) that lifts its
// parent's budget, rate or action count by a value that validates and
// narrows on paper but is enforced as "no limit", and a Retry-After that
// tells a client to come back in the past.
func FuzzMergeNeverWidens(f *testing.F) {
	seeds := []struct {
		pActions, cActions int64
		pMax, cMax         float64
		pPat, cPat         uint8
		pCost, cCost       float64
		pPerMin, cPerMin   float64
		pBurst, cBurst     int64
		calls              []byte
	}{
		{10, 5, 3, 2, 0, 0x10, 1, 1, 6, 3, 2, 1, []byte{0, 0, 1, 0x41, 2, 0x10, 0}},
		{0, 0, 1, 0.5, 0, 1, 0.1, 0.2, 0, 0, 0, 0, []byte{0, 0, 0, 0, 0, 0, 0, 0}},
		{3, 0, 0, 0, 0x33, 0x33, 0, 0, 60, 60, 0, 1, []byte{2, 2, 2, 2, 0xf2, 2}},
		{0, 0, 100, 100, 3, 0, 10, 10, 1, 0.5, 1, 1, []byte{3, 0x83, 3, 0xff, 3}},
		// A fractional budget and per-minute rate, as a policy may write them.
		{0, 0, 0.25, 0.125, 0, 0, 0.05, 0.05, 0.5, 0.25, 0, 0, []byte{0, 0, 0, 0, 0, 0, 0}},
	}
	for _, s := range seeds {
		f.Add(s.pActions, s.cActions, s.pMax, s.cMax, s.pPat, s.cPat, s.pCost, s.cCost, s.pPerMin, s.cPerMin, s.pBurst, s.cBurst, s.calls)
	}
	f.Fuzz(func(t *testing.T, pActions, cActions int64, pMax, cMax float64, pPat, cPat uint8,
		pCost, cCost, pPerMin, cPerMin float64, pBurst, cBurst int64, calls []byte) {
		parent := fuzzSpec(pActions, pMax, pPat, pCost, pPerMin, pBurst)
		child := fuzzSpec(cActions, cMax, cPat, cCost, cPerMin, cBurst)
		parent.MaxExecutionTimeMS, child.MaxExecutionTimeMS = pActions%1000, cActions%1000
		if parent.Validate() != nil || child.Validate() != nil || Narrows(parent, child) != nil {
			t.Skip("only valid specs that narrow are merged")
		}
		merged := Merge(parent, child)
		if err := merged.Validate(); err != nil {
			t.Fatalf("Merge of a valid parent and child is invalid: %v", err)
		}
		if len(calls) > 64 {
			calls = calls[:64]
		}
		clk := newClock()
		mt, pt := NewTracker(merged, clk.now), NewTracker(parent, clk.now)
		if pd, md := pt.Deadline(), mt.Deadline(); pd > 0 && (md <= 0 || md > pd) {
			t.Fatalf("merged deadline %v, parent's %v", md, pd)
		}
		for i, c := range calls {
			clk.advance(time.Duration(c>>2) * time.Second)
			id := fuzzCaps[int(c)%len(fuzzCaps)]
			err := mt.Admit(id)
			if err != nil {
				checkRetryAfter(t, merged, err)
				continue
			}
			if perr := pt.Admit(id); perr != nil {
				t.Fatalf("call %d (%s) admitted under the merged limits but refused by the parent's: %v\nparent %+v\nchild  %+v\nmerged %+v",
					i, id, perr, parent, child, merged)
			}
		}
		// The parent alone refuses with a positive wait too.
		pt2 := NewTracker(parent, clk.now)
		for _, c := range calls {
			if err := pt2.Admit(fuzzCaps[int(c)%len(fuzzCaps)]); err != nil {
				checkRetryAfter(t, parent, err)
			}
		}
	})
}

// checkRetryAfter fails t when err is a rate refusal whose wait is not a
// positive duration.
func checkRetryAfter(t *testing.T, spec Spec, err error) {
	t.Helper()
	var e *ExceededError
	if !errors.As(err, &e) {
		t.Fatalf("refusal without an ExceededError: %v", err)
	}
	if errors.Is(err, ErrRate) && e.RetryAfter <= 0 {
		t.Fatalf("rate refusal says retry after %v (spec %+v): %v", e.RetryAfter, spec, err)
	}
}
