package declarations

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/airlock-dev/airlock/internal/kit/rawjson"
	"github.com/airlock-dev/airlock/internal/kit/strictjson"
)

// maxArgumentsDepth bounds the nesting of a comm.mcp need's arguments.
const maxArgumentsDepth = 32

// validateMCP applies the comm.mcp rules, and the attack each blocks:
//
//   - upstream matches ^[a-z0-9][a-z0-9_-]{0,31}$ and tool
//     ^[A-Za-z0-9_-]{1,64}$: names, never paths or URLs, and no '.' so the
//     capability mcp.<upstream>.<tool> splits one way only (a tool named
//     "x.y" cannot pose as upstream "x"'s tool "y" to a policy pattern).
//   - arguments are one strict JSON object of at most 16 KiB and depth 32:
//     no duplicate keys (the policy, the schema check and the upstream
//     would each read a different value), no trailing data. They are
//     rewritten in canonical form (sorted keys, compact, numbers as
//     written), so the fingerprint an approval binds, the policy's view
//     and what is sent upstream are the same bytes.
//   - url, query and source are not comm.mcp's (validateParameters).
//
// Whether the arguments satisfy the tool's pinned input schema is the
// runner's check (it needs the store): server's TestUpstreamPolicy.
func (p *Parameters) validateMCP() error {
	if p.URL != "" || p.Query != "" || p.Source != "" {
		return invalid("parameters.url", "comm.mcp takes upstream, tool and arguments only")
	}
	if !validUpstream(p.Upstream) {
		return invalid("parameters.upstream", "required: the id of a configured upstream (lower-case letters, digits, '_' and '-', at most 32)")
	}
	if !validTool(p.Tool) {
		return invalid("parameters.tool", "required: the tool's name (letters, digits, '_' and '-', at most 64)")
	}
	args, err := CanonicalArguments(p.Arguments)
	if err != nil {
		return err
	}
	p.Arguments = args
	return nil
}

// CanonicalArguments checks a comm.mcp need's arguments and returns them
// in canonical form; absent arguments are the empty object.
func CanonicalArguments(raw json.RawMessage) (json.RawMessage, error) {
	const field = "parameters.arguments"
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return json.RawMessage(`{}`), nil
	}
	if len(raw) > MaxArgumentsBytes {
		return nil, invalid(field, fmt.Sprintf("longer than %d bytes", MaxArgumentsBytes))
	}
	if err := strictjson.Check(raw, maxArgumentsDepth); err != nil {
		return nil, invalid(field, "not one strict JSON object (duplicate keys — keys differing only in case count as duplicates —, nesting deeper than 32, or not JSON)")
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, invalid(field, "not valid JSON")
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, invalid(field, "must be a JSON object")
	}
	b, err := rawjson.Plain(v)
	if err != nil {
		return nil, invalid(field, "cannot be encoded")
	}
	return json.RawMessage(b), nil
}

func validUpstream(s string) bool {
	if len(s) == 0 || len(s) > MaxUpstreamBytes || !isLowerAlnum(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if b := s[i]; !isLowerAlnum(b) && b != '_' && b != '-' {
			return false
		}
	}
	return true
}

func validTool(s string) bool {
	if len(s) == 0 || len(s) > MaxToolBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		if b := s[i]; !isAlnum(b) && b != '_' && b != '-' {
			return false
		}
	}
	return true
}

// ValidToolName reports whether an upstream's tool name can be pinned and
// called: the comm.mcp tool rule.
func ValidToolName(s string) bool { return validTool(s) }
