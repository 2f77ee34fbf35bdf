package limits

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/airlock-dev/airlock/internal/kit/capability"
)

// Spec is the limits section of a policy as written in the configuration.
// Zero means no limit.
type Spec struct {
	MaxExecutionTimeMS int64               `json:"max_execution_time_ms,omitempty" jsonschema:"minimum=0,description=Wall-clock limit of one call in milliseconds (0 = none)."`
	MaxActions         int64               `json:"max_actions,omitempty" jsonschema:"minimum=0,description=Calls a session may make (0 = unlimited)."`
	MaxTotalCost       float64             `json:"max_total_cost,omitempty" jsonschema:"minimum=0,description=Cost budget of a session; each call costs what costs says (0 = unlimited)."`
	Costs              map[string]float64  `json:"costs,omitempty" jsonschema:"description=Capability pattern to the cost of one call. A call costs the highest cost among the patterns it matches; no match costs 0."`
	Rate               map[string]RateSpec `json:"rate,omitempty" jsonschema:"description=Capability pattern to a token-bucket rate limit per session. Every matching pattern's bucket is charged."`
	MaxCPUTimeMS       int64               `json:"max_cpu_time_ms,omitempty" jsonschema:"minimum=0,description=CPU time a pipeline run may use in milliseconds (0 = none)."`
	MaxMemoryBytes     int64               `json:"max_memory_bytes,omitempty" jsonschema:"minimum=0,description=Memory a pipeline run may use in bytes (0 = none)."`
}

// RateSpec is one token bucket.
type RateSpec struct {
	PerMinute float64 `json:"per_minute" jsonschema:"exclusiveMinimum=0,description=Tokens added per minute."`
	Burst     int64   `json:"burst,omitempty" jsonschema:"minimum=0,description=Bucket size: calls allowed back to back (default: per_minute rounded up and at least 1)."`
}

// Bounds that keep arithmetic exact and overflow-free.
const (
	maxCost       = 1e12 // in cost units; ×1e6 micro-units stays far below 2^63
	maxPerMinute  = 1e9
	maxBurst      = 1e9
	microsPerUnit = 1e6
)

// Sentinel errors. Validation and narrowing problems come back as a
// *FieldError wrapping one of these.
var (
	// ErrInvalid reports a limit that cannot be enforced (negative, NaN, too
	// large, or a bad capability pattern).
	ErrInvalid = errors.New("invalid limit")
	// ErrWidens reports a child limit looser than its parent's. It is the
	// same sentinel as policy.ErrWidens.
	ErrWidens = errors.New("child policy widens its parent")

	// ErrMaxActions, ErrMaxTotalCost, ErrRate and ErrExecutionTime name the
	// limit a refusal hit; see ExceededError.
	ErrMaxActions    = errors.New("max_actions exceeded")
	ErrMaxTotalCost  = errors.New("max_total_cost exceeded")
	ErrRate          = errors.New("rate limit exceeded")
	ErrExecutionTime = errors.New("max_execution_time_ms exceeded")
)

// FieldError is a problem with one field of a Spec. Path is relative to the
// limits section and made of YAML path segments (".max_actions",
// ".rate.'comm.*'.burst"), so a caller holding the file can append it to the
// section's path and report a line.
type FieldError struct {
	Path string
	Err  error
}

func (e *FieldError) Error() string { return "limits" + e.Path + ": " + e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

func fieldErr(path string, format string, args ...any) *FieldError {
	return &FieldError{Path: path, Err: fmt.Errorf(format, args...)}
}

// Key renders a map key as a YAML path segment, quoting it when it holds
// anything but letters, digits, '_' and '-' (capability patterns hold '.'
// and '*', which a path would otherwise read as syntax).
func Key(k string) string {
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			q := make([]byte, 0, len(k)+4)
			q = append(q, ".'"...)
			for j := 0; j < len(k); j++ {
				if k[j] == '\'' || k[j] == '\\' {
					q = append(q, '\\')
				}
				q = append(q, k[j])
			}
			return string(append(q, '\''))
		}
	}
	return "." + k
}

// Validate reports the first field (in a fixed order) that cannot be enforced.
func (s Spec) Validate() error {
	ints := []struct {
		name string
		v    int64
	}{
		{"max_execution_time_ms", s.MaxExecutionTimeMS},
		{"max_actions", s.MaxActions},
		{"max_cpu_time_ms", s.MaxCPUTimeMS},
		{"max_memory_bytes", s.MaxMemoryBytes},
	}
	for _, f := range ints {
		if f.v < 0 {
			return fieldErr("."+f.name, "%d is negative: %w", f.v, ErrInvalid)
		}
	}
	if s.MaxExecutionTimeMS > int64(math.MaxInt64/time.Millisecond) || s.MaxCPUTimeMS > int64(math.MaxInt64/time.Millisecond) {
		return fieldErr(".max_execution_time_ms", "too large: %w", ErrInvalid)
	}
	if err := checkCost(s.MaxTotalCost); err != nil {
		return &FieldError{Path: ".max_total_cost", Err: err}
	}
	for _, k := range sortedKeys(s.Costs) {
		if _, err := capability.Parse(k); err != nil {
			return &FieldError{Path: ".costs" + Key(k), Err: err}
		}
		if err := checkCost(s.Costs[k]); err != nil {
			return &FieldError{Path: ".costs" + Key(k), Err: err}
		}
	}
	for _, k := range sortedKeys(s.Rate) {
		path := ".rate" + Key(k)
		if _, err := capability.Parse(k); err != nil {
			return &FieldError{Path: path, Err: err}
		}
		r := s.Rate[k]
		if !(r.PerMinute > 0) || r.PerMinute > maxPerMinute { // !(>0) also catches NaN
			return fieldErr(path+".per_minute", "%v must be above 0 and at most %g (to forbid a capability, deny it in the policy): %w", r.PerMinute, float64(maxPerMinute), ErrInvalid)
		}
		if r.Burst < 0 || r.Burst > maxBurst {
			return fieldErr(path+".burst", "%d must be between 0 and %d: %w", r.Burst, int64(maxBurst), ErrInvalid)
		}
	}
	return nil
}

func checkCost(v float64) error {
	if math.IsNaN(v) || v < 0 || v > maxCost {
		return fmt.Errorf("%v must be between 0 and %g: %w", v, float64(maxCost), ErrInvalid)
	}
	// Costs are counted in millionths (the tracker's micros): a smaller
	// positive value would count as 0 — a budget of 0 is no budget, so a
	// child's max_total_cost of 1e-7 lifted its parent's budget of 10.
	if v > 0 && v < 1/microsPerUnit {
		return fmt.Errorf("%v is below the smallest cost counted, %g (0 means none): %w", v, 1/microsPerUnit, ErrInvalid)
	}
	return nil
}

// Narrows reports the first way in which child is looser than parent, as a
// *FieldError wrapping ErrWidens. Zero in the child means "inherit" and is
// never looser. The rules: every maximum must be ≤ the parent's (any value is
// within an unlimited parent); a cost the child sets must be ≥ the parent's
// cost for the same pattern (a cheaper action fits more of them in the
// budget); a rate the child sets for a pattern the parent also limits must
// have per_minute and burst ≤ the parent's. New cost or rate patterns only add
// restrictions, because the parent's buckets still apply ([Merge]).
func Narrows(parent, child Spec) error {
	ints := []struct {
		name string
		p, c int64
	}{
		{"max_execution_time_ms", parent.MaxExecutionTimeMS, child.MaxExecutionTimeMS},
		{"max_actions", parent.MaxActions, child.MaxActions},
		{"max_cpu_time_ms", parent.MaxCPUTimeMS, child.MaxCPUTimeMS},
		{"max_memory_bytes", parent.MaxMemoryBytes, child.MaxMemoryBytes},
	}
	for _, f := range ints {
		if f.c != 0 && f.p != 0 && f.c > f.p {
			return fieldErr("."+f.name, "%d > parent's %d: %w", f.c, f.p, ErrWidens)
		}
	}
	if child.MaxTotalCost != 0 && parent.MaxTotalCost != 0 && child.MaxTotalCost > parent.MaxTotalCost {
		return fieldErr(".max_total_cost", "%g > parent's %g: %w", child.MaxTotalCost, parent.MaxTotalCost, ErrWidens)
	}
	for _, k := range sortedKeys(child.Costs) {
		if pc, ok := parent.Costs[k]; ok && child.Costs[k] < pc {
			return fieldErr(".costs"+Key(k), "%g < parent's %g: %w", child.Costs[k], pc, ErrWidens)
		}
	}
	for _, k := range sortedKeys(child.Rate) {
		pr, ok := parent.Rate[k]
		if !ok {
			continue
		}
		cr := child.Rate[k]
		if cr.PerMinute > pr.PerMinute {
			return fieldErr(".rate"+Key(k)+".per_minute", "%g > parent's %g: %w", cr.PerMinute, pr.PerMinute, ErrWidens)
		}
		if cb, pb := cr.burst(), pr.burst(); cb > pb {
			return fieldErr(".rate"+Key(k)+".burst", "%d > parent's %d: %w", cb, pb, ErrWidens)
		}
	}
	return nil
}

// Merge returns the limits a child policy runs under: each maximum the child
// sets replaces the parent's (Narrows has checked it is tighter), the rest
// are inherited; costs and rates are the union, the child's entry winning for
// a pattern both name. Because a call costs the highest matching cost and is
// charged by every matching bucket, the union never makes a call cheaper or
// faster than the parent allows.
func Merge(parent, child Spec) Spec {
	pick := func(p, c int64) int64 {
		if c != 0 {
			return c
		}
		return p
	}
	out := Spec{
		MaxExecutionTimeMS: pick(parent.MaxExecutionTimeMS, child.MaxExecutionTimeMS),
		MaxActions:         pick(parent.MaxActions, child.MaxActions),
		MaxCPUTimeMS:       pick(parent.MaxCPUTimeMS, child.MaxCPUTimeMS),
		MaxMemoryBytes:     pick(parent.MaxMemoryBytes, child.MaxMemoryBytes),
		MaxTotalCost:       parent.MaxTotalCost,
	}
	if child.MaxTotalCost != 0 {
		out.MaxTotalCost = child.MaxTotalCost
	}
	out.Costs = mergeMaps(parent.Costs, child.Costs)
	out.Rate = mergeMaps(parent.Rate, child.Rate)
	return out
}

func mergeMaps[V any](p, c map[string]V) map[string]V {
	if len(p)+len(c) == 0 {
		return nil
	}
	out := make(map[string]V, len(p)+len(c))
	for k, v := range p {
		out[k] = v
	}
	for k, v := range c {
		out[k] = v
	}
	return out
}

// burst is the bucket size with the default applied.
func (r RateSpec) burst() int64 {
	if r.Burst > 0 {
		return r.Burst
	}
	return max(1, int64(math.Ceil(r.PerMinute)))
}

// String renders a rate for messages, e.g. "10/min, burst 5".
func (r RateSpec) String() string {
	return strconv.FormatFloat(r.PerMinute, 'g', -1, 64) + "/min, burst " + strconv.FormatInt(r.burst(), 10)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
