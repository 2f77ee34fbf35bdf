// Package tools declares the tools the agent sees and implements their
// handlers. Only the runner imports this package (an architecture test
// enforces it), so a handler can run only as step 9 of runner.Run, after
// validation, the phase gate, policy, limits and preconditions.
package tools

import "github.com/airlock-dev/airlock/internal/execution/toolkit"

// All returns every tool, in the order clients list them.
func All() []toolkit.Tool {
	return []toolkit.Tool{listPools(), readPoolFile(), declareNeed(), runPipeline()}
}
