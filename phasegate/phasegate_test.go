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

func TestStateFailsClosed(t *testing.T) {
	var zero State
	if _, err := Check(zero.Phase(), "read"); !errors.Is(err, ErrUnknownPhase) {
		t.Fatalf("zero State must block, got %v", err)
	}
	s := NewState("bogus")
	if _, err := Check(s.Phase(), "read"); !errors.Is(err, ErrUnknownPhase) {
		t.Fatalf("unknown initial phase must block, got %v", err)
	}
	if err := s.Set("bogus2"); !errors.Is(err, ErrUnknownPhase) {
		t.Fatalf("Set unknown = %v", err)
	}
	if err := s.Set(Execution); err != nil || s.Phase() != Execution {
		t.Fatalf("Set execution: %v %q", err, s.Phase())
	}
}
