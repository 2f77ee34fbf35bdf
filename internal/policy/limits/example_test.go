package limits_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/policy/limits"
)

func ExampleTracker_Admit() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	tr := limits.NewTracker(limits.Spec{
		MaxActions: 100,
		Rate:       map[string]limits.RateSpec{"comm.*": {PerMinute: 10, Burst: 2}},
	}, clock)

	for i := range 3 {
		err := tr.Admit("comm.fetch")
		var v *violation.Error
		if errors.As(err, &v) {
			fmt.Printf("call %d: %s (rate: %v)\n", i+1, v.Public(), errors.Is(err, limits.ErrRate))
			continue
		}
		fmt.Printf("call %d: admitted\n", i+1)
	}
	now = now.Add(6 * time.Second) // one token back at 10/min
	fmt.Println("after 6s:", tr.Admit("comm.fetch"))
	// Output:
	// call 1: admitted
	// call 2: admitted
	// call 3: LIMIT_EXCEEDED: rate limit for comm.* (10/min, burst 2) reached; retry in 6s (rate: true)
	// after 6s: <nil>
}
