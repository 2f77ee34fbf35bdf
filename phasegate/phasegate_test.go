package phasegate

import (
	"errors"
	"testing"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		phase, tier string
		want        Mode
		err         error
	}{
		{Planning, "read", Run, nil},
		{Planning, "external", DryRun, nil},
		{Planning, "act", Blocked, ErrNotInPhase},
		{Execution, "read", Run, nil},
		{Execution, "external", Run, nil},
		{Execution, "act", Run, nil},
		{"", "read", Blocked, ErrUnknownPhase},
		{"EXECUTION", "external", Blocked, ErrUnknownPhase},
		{"review", "read", Blocked, ErrUnknownPhase},
		{Execution, "admin", Blocked, ErrUnknownTier},
		{Execution, "", Blocked, ErrUnknownTier},
	}
	for _, tc := range tests {
		t.Run(tc.phase+"/"+tc.tier, func(t *testing.T) {
			got, err := Check(tc.phase, tc.tier)
			if got != tc.want || !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Fatalf("Check(%q, %q) = %v, %v; want %v, %v", tc.phase, tc.tier, got, err, tc.want, tc.err)
			}
		})
	}
}
