// Package limits enforces a session's resource limits: how many actions it
// may take, how much they may cost, how fast it may call each capability and
// how long one call may run. It also carries the CPU and memory ceilings a
// pipeline sandbox receives.
//
// The limits are written once, as [Spec], inside a policy (the policy package
// aliases it as policy.LimitsSpec), and enforced per session by a [Tracker],
// which the runner consults at its "limits" step after the policy has allowed
// the call:
//
//	t := limits.NewTracker(pol.Limits(), time.Now)
//	if err := t.Admit("comm.fetch"); err != nil { ... } // *violation.Error, LIMIT_EXCEEDED
//	ctx, cancel := context.WithTimeout(ctx, t.Deadline())
//
// # What each limit means
//
//   - max_actions: admitted calls per session. The call that would be action
//     max_actions+1 is refused.
//   - max_total_cost: the sum of the costs of admitted calls per session. A
//     call whose cost would take the total past the budget is refused; a
//     call that lands exactly on it is admitted. Costs are kept in
//     millionths, so 10 calls costing 0.1 fit a budget of 1 exactly.
//   - costs: capability pattern → cost of one call. When several patterns
//     match, the call costs the highest of their costs; no match costs 0.
//     Taking the highest (rather than the most specific) keeps the rule
//     monotone: adding a pattern can only make calls dearer, which is what
//     lets a child policy add cost patterns without widening its parent.
//   - rate: capability pattern → token bucket {per_minute, burst}. Every
//     pattern that matches a capability takes one token from its own bucket,
//     so "comm.*" is a budget shared by all comm capabilities. A bucket
//     starts full with burst tokens (default: per_minute rounded up, at
//     least 1) and refills continuously at per_minute.
//   - max_execution_time_ms: wall-clock time of one call ([Tracker.Deadline]).
//   - max_cpu_time_ms, max_memory_bytes: handed to the pipeline sandbox
//     ([Tracker.CPUTime], [Tracker.MemoryBytes]); not enforced here.
//
// A zero (or absent) limit means "no limit". A child policy's limits may only
// be tighter than its parent's ([Narrows]); a limit the child leaves at zero
// is inherited ([Merge]).
//
// # Refusals
//
// [Tracker.Admit] checks max_actions, then max_total_cost, then each matching
// rate bucket in pattern order, and reports the first that refuses. It is
// all-or-nothing: it checks every limit first and consumes
// (one action, the cost, one token per matching bucket) only when all pass,
// so a refused call leaves no trace in the budgets. A refusal is a
// *violation.Error with code LIMIT_EXCEEDED whose agent-safe message names
// the limit; its cause is an *[ExceededError] that wraps one of the sentinel
// errors ([ErrMaxActions], [ErrMaxTotalCost], [ErrRate]) for errors.Is.
//
// Time comes from the clock given to [NewTracker], so tests drive every limit
// with a fake clock and never sleep. A clock that steps backwards refills
// nothing rather than draining buckets.
package limits
