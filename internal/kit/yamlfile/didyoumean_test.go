package yamlfile

import (
	"strings"
	"testing"
)

type dymLimits struct {
	MaxActions int `json:"max_actions"`
}

type dymPolicy struct {
	Allow  []string  `json:"allow"`
	Deny   []string  `json:"deny"`
	Limits dymLimits `json:"limits"`
}

type dymCommon struct {
	Description string `json:"description"`
}

type dymPool struct {
	dymCommon
	ID    string `json:"id"`
	Trust string `json:"trust"`
}

type dymConfig struct {
	Pools    []dymPool            `json:"pools"`
	Policies map[string]dymPolicy `json:"policies"`
	Server   *struct {
		Name string `json:"name"`
	} `json:"server"`
}

// TestDecodeSuggestsTheKeyMeant (issue 24 item 9): an unknown key is
// reported with the allowed key nearest to it at the same place — at the
// top level, in a list item, under a map's value, in an embedded struct,
// behind a pointer, and inside a quoted map key — and with none when
// nothing is close.
func TestDecodeSuggestsTheKeyMeant(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
	}{
		{"top level", "pool:\n  - id: a\n", `unknown field "pool" (did you mean "pools"?)`},
		{"top level, plural", "policie: {}\n", `(did you mean "policies"?)`},
		{"list item", "pools:\n  - id: a\n    trsut: trusted\n", `unknown field "trsut" (did you mean "trust"?)`},
		{"embedded struct", "pools:\n  - id: a\n    descripton: x\n", `(did you mean "description"?)`},
		{"map value", "policies:\n  base:\n    dney: [x]\n", `unknown field "dney" (did you mean "deny"?)`},
		{"nested struct", "policies:\n  base:\n    limits: {max_action: 2}\n", `(did you mean "max_actions"?)`},
		{"quoted map key", "policies:\n  'a.b':\n    alow: [x]\n", `(did you mean "allow"?)`},
		{"pointer", "server:\n  nmae: x\n", `(did you mean "name"?)`},
		{"nothing close", "zzzzzz: 1\n", `unknown field "zzzzzz"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c dymConfig
			err := Decode("c.yaml", []byte(tc.src), &c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if tc.name == "nothing close" && strings.Contains(err.Error(), "did you mean") {
				t.Fatalf("a guess where nothing is close: %v", err)
			}
		})
	}
}
