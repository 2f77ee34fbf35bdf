package fence

import "encoding/json"

// Structured is a tool's structured result with the fenced untrusted
// content added beside the tool's own fields, kept at the top level so
// programmatic clients see one shape whether or not the call carried
// untrusted text: untrusted (true), untrusted_content (the fenced text as
// the agent gets it), untrusted_source and untrusted_kind. A result that is
// not a JSON object stays under "result".
func Structured(result any, fenced, source, kind string) map[string]any {
	out := map[string]any{}
	if b, err := json.Marshal(result); err == nil {
		_ = json.Unmarshal(b, &out)
		if out == nil || (len(out) == 0 && string(b) != "{}") {
			out = map[string]any{"result": result}
		}
	}
	out["untrusted"] = true
	out["untrusted_content"] = fenced
	out["untrusted_source"] = source
	out["untrusted_kind"] = kind
	return out
}
