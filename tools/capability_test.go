package tools

import (
	"slices"
	"testing"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/internal/policy/policy"
)

// TestCapabilitiesAreKnown: every capability a tool can ask the policy
// about is one `policy check` knows, so the misspelling check
// (policy.CheckCapabilities) never refuses a real capability.
func TestCapabilitiesAreKnown(t *testing.T) {
	var got []string
	for _, tool := range All() {
		switch tool.Name {
		case "declare_need":
			for _, op := range []declarations.Operation{declarations.OpFetch, declarations.OpSearch, declarations.OpQuery} {
				got = append(got, tool.Capability(&DeclareNeedArgs{Operation: op}))
			}
		case "run_pipeline":
			if c := tool.Capability(&RunPipelineArgs{Pipeline: "report"}); c != policy.PipelinePrefix+"report" {
				t.Errorf("run_pipeline capability %q", c)
			}
		default:
			got = append(got, tool.Capability(tool.NewArgs()))
		}
	}
	for _, c := range got {
		if !slices.Contains(policy.Capabilities, c) {
			t.Errorf("capability %q is not in policy.Capabilities", c)
		}
	}
}
