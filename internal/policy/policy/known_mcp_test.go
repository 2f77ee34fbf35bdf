package policy

import (
	"errors"
	"testing"
)

// TestCheckCapabilitiesMCP: patterns for upstream tools (mcp.<upstream>.<tool>)
// are capabilities Airlock has; a bare "mcp." or a misspelt prefix is not.
func TestCheckCapabilitiesMCP(t *testing.T) {
	for pat, known := range map[string]bool{
		"mcp.everything.echo": true, "mcp.everything.*": true, "mcp.*": true,
		"mcp.": false, "mpc.everything.echo": false,
	} {
		spec := map[string]Spec{"p": {Allow: []string{pat}}}
		err := CheckCapabilities("p.yaml", []byte("p:\n  allow: [x]\n"), spec, nil)
		if got := err == nil; got != known || (err != nil && !errors.Is(err, ErrUnknownCapability)) {
			t.Errorf("%q: %v, want known=%v", pat, err, known)
		}
	}
}
