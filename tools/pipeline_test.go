package tools

import (
	"errors"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/config"
	"github.com/airlock-dev/airlock/limits"
	"github.com/airlock-dev/airlock/sandbox"
	"github.com/airlock-dev/airlock/violation"
)

func TestCapLimits(t *testing.T) {
	tests := []struct {
		name string
		in   sandbox.Limits
		pol  limits.Spec
		cpu  time.Duration
		mem  int64
	}{
		{"policy lowers", sandbox.Limits{CPU: 30 * time.Second, MemoryBytes: 1 << 30}, limits.Spec{MaxCPUTimeMS: 5000, MaxMemoryBytes: 1 << 20}, 5 * time.Second, 1 << 20},
		{"policy fills defaults", sandbox.Limits{}, limits.Spec{MaxCPUTimeMS: 5000, MaxMemoryBytes: 1 << 20}, 5 * time.Second, 1 << 20},
		{"pipeline already lower", sandbox.Limits{CPU: time.Second, MemoryBytes: 1 << 10}, limits.Spec{MaxCPUTimeMS: 5000, MaxMemoryBytes: 1 << 20}, time.Second, 1 << 10},
		{"no policy limit", sandbox.Limits{CPU: time.Second}, limits.Spec{}, time.Second, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.in
			capLimits(&l, tc.pol)
			if l.CPU != tc.cpu || l.MemoryBytes != tc.mem {
				t.Fatalf("got cpu %v mem %d", l.CPU, l.MemoryBytes)
			}
		})
	}
}

func TestCheckParams(t *testing.T) {
	p := config.Pipeline{Name: "p", Parameters: map[string]config.Param{
		"region": {Type: "string", Enum: []string{"north", "south"}},
		"n":      {Type: "integer", Required: true},
		"flag":   {Type: "boolean"},
		"word":   {Type: "string", Pattern: "[a-z]+", MaxLength: 5},
	}}
	tests := []struct {
		name string
		in   map[string]any
		ok   bool
	}{
		{"valid", map[string]any{"n": 3.0, "region": "north", "flag": true, "word": "abc"}, true},
		{"missing required", map[string]any{"region": "north"}, false},
		{"not in enum", map[string]any{"n": 1.0, "region": "up"}, false},
		{"fraction for integer", map[string]any{"n": 1.5}, false},
		{"string for integer", map[string]any{"n": "1"}, false},
		{"too long", map[string]any{"n": 1.0, "word": "abcdef"}, false},
		{"pattern", map[string]any{"n": 1.0, "word": "ab1"}, false},
		{"leading dash", map[string]any{"n": 1.0, "word": "-x"}, false},
		{"control char", map[string]any{"n": 1.0, "region": "north\n"}, false},
		{"undeclared", map[string]any{"n": 1.0, "other": "x"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := checkParams(p, tc.in)
			if tc.ok != (err == nil) {
				t.Fatalf("err = %v", err)
			}
			if err != nil && !errors.Is(err, violation.New(violation.InvalidArguments, "")) {
				t.Fatalf("err = %v, want INVALID_ARGUMENTS", err)
			}
		})
	}
}
