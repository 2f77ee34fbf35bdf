package policy

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/invopop/jsonschema"
)

// TestSchemaTags checks that the jsonschema tags on Spec produce what an
// editor needs: the effect enum, required rule fields, and descriptions.
func TestSchemaTags(t *testing.T) {
	// Reflect Spec inside a wrapper, as the configuration's schema does:
	// at the root, invopop's ExpandedStruct looks the root up by bare type
	// name, and limits.Spec (also "Spec") would shadow it.
	type file struct {
		Policies map[string]Spec `json:"policies"`
	}
	r := &jsonschema.Reflector{DoNotReference: true, ExpandedStruct: true}
	raw, err := json.Marshal(r.Reflect(&file{}))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Properties struct {
			Policies struct {
				AdditionalProperties json.RawMessage `json:"additionalProperties"`
			} `json:"policies"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var s struct {
		Properties map[string]struct {
			Description string `json:"description"`
			Items       struct {
				Required   []string `json:"required"`
				Properties map[string]struct {
					Enum []string `json:"enum"`
				} `json:"properties"`
			} `json:"items"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(doc.Properties.Policies.AdditionalProperties, &s); err != nil {
		t.Fatal(err)
	}
	rules := s.Properties["rules"]
	if got := rules.Items.Properties["effect"].Enum; !slices.Equal(got, []string{"allow", "deny", "require_approval"}) {
		t.Errorf("effect enum = %v", got)
	}
	for _, f := range []string{"id", "capability", "effect"} {
		if !slices.Contains(rules.Items.Required, f) {
			t.Errorf("rule field %s not required (required: %v)", f, rules.Items.Required)
		}
	}
	for _, f := range []string{"extends", "allow", "deny", "rules", "network", "filesystem", "limits"} {
		if s.Properties[f].Description == "" {
			t.Errorf("property %s has no description", f)
		}
	}
}
