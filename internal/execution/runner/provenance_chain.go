package runner

import "github.com/airlock-dev/airlock/internal/policy/contexts"

// chainIDs are the ids of a loaded context chain, the context first.
func chainIDs(chain []*contexts.Context) []string {
	ids := make([]string, len(chain))
	for i, cx := range chain {
		ids[i] = cx.ID
	}
	return ids
}
