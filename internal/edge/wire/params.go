package wire

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/mark3labs/mcp-go/mcp"
)

type kind uint8

const (
	kindInvalid kind = iota
	kindNull
	kindString
	kindNumber
	kindBool
	kindObject
	kindArray
	kindStringOrNumber // a progress token or request id
)

func (k kind) String() string {
	return [...]string{"invalid", "null", "a string", "a number", "a boolean", "an object", "an array", "a string or a number"}[k]
}

func kindOf(raw []byte) kind {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case 'n':
			return kindNull
		case '"':
			return kindString
		case 't', 'f':
			return kindBool
		case '{':
			return kindObject
		case '[':
			return kindArray
		default:
			return kindNumber
		}
	}
	return kindInvalid
}

func (k kind) admits(got kind) bool {
	return k == got || (k == kindStringOrNumber && (got == kindString || got == kindNumber))
}

// field is one well-known member of a method's params.
type field struct {
	kind     kind
	required bool
}

// paramShapes holds the members MCP gives a type for, per method. The MCP
// library decodes params into typed structs and answers a mismatch with Go
// type names; checking here answers it plainly. Members not listed pass.
var paramShapes = map[string]map[string]field{
	"initialize": {
		"protocolVersion": {kind: kindString}, "capabilities": {kind: kindObject}, "clientInfo": {kind: kindObject},
	},
	"tools/call": {
		"name": {kind: kindString, required: true}, "arguments": {kind: kindObject},
		"requestState": {kind: kindString}, "inputResponses": {kind: kindObject},
	},
	"tools/list":               {"cursor": {kind: kindString}},
	"resources/list":           {"cursor": {kind: kindString}},
	"resources/templates/list": {"cursor": {kind: kindString}},
	"prompts/list":             {"cursor": {kind: kindString}},
	"resources/read":           {"uri": {kind: kindString, required: true}},
	"resources/subscribe":      {"uri": {kind: kindString, required: true}},
	"resources/unsubscribe":    {"uri": {kind: kindString, required: true}},
	"prompts/get":              {"name": {kind: kindString, required: true}, "arguments": {kind: kindObject}},
	"logging/setLevel":         {"level": {kind: kindString, required: true}},
	"completion/complete":      {"ref": {kind: kindObject, required: true}, "argument": {kind: kindObject, required: true}},
	"notifications/cancelled":  {"requestId": {kind: kindStringOrNumber}, "reason": {kind: kindString}},
	"notifications/progress": {
		"progressToken": {kind: kindStringOrNumber, required: true}, "progress": {kind: kindNumber, required: true},
		"total": {kind: kindNumber}, "message": {kind: kindString},
	},
}

var metaShape = map[string]field{"progressToken": {kind: kindStringOrNumber}}

// The members of each shape in a fixed order, so that the first of several
// mistakes is always the one named; sorted once, not per message.
var (
	paramOrder = func() map[string][]string {
		o := make(map[string][]string, len(paramShapes))
		for m, shape := range paramShapes {
			o[m] = sortedNames(shape)
		}
		return o
	}()
	metaOrder = sortedNames(metaShape)
)

// checkParams refuses params that are not an object, and well-known members
// of the wrong type; it fills in what m's fields name from the members it
// decoded.
func checkParams(m *Message, raw json.RawMessage) *Error {
	method := m.Method
	shape := paramShapes[method]
	if raw == nil || kindOf(raw) == kindNull {
		for _, name := range paramOrder[method] {
			if shape[name].required {
				return paramsError(method, fmt.Sprintf("%q is required", name))
			}
		}
		return nil
	}
	if kindOf(raw) != kindObject {
		return paramsError(method, `"params" must be an object`)
	}
	var members map[string]ref
	if json.Unmarshal(raw, &members) != nil {
		return paramsError(method, `"params" must be an object`)
	}
	if meta, ok := members["_meta"]; ok {
		if kindOf(meta) != kindObject {
			return paramsError(method, `"_meta" must be an object`)
		}
		var mm map[string]ref
		_ = json.Unmarshal(meta, &mm)
		if err := checkMembers(method, "_meta.", mm, metaShape, metaOrder); err != nil {
			return err
		}
		m.MetaVersion = metaVersion(mm)
		if removedInModern[method] && mcp.IsModernProtocol(m.MetaVersion) {
			return nil
		}
	}
	if err := checkMembers(method, "", members, shape, paramOrder[method]); err != nil {
		return err
	}
	switch method {
	case string(mcp.MethodResourcesRead):
		m.URI, _ = decodeString(members["uri"]) // a string: checked above
	case string(mcp.MethodToolsCall):
		m.Name, _ = decodeString(members["name"]) // a string: checked above
	case string(mcp.MethodInitialize):
		var caps map[string]ref
		_ = json.Unmarshal(members["capabilities"], &caps) // an object or absent: checked above
		e, ok := caps["elicitation"]
		m.Elicitation = ok && kindOf(e) != kindNull && kindOf(e) != kindInvalid
	}
	return nil
}

// removedInModern are the methods protocol 2026-07-28 removed (SEP-2575).
// A request that declares that revision in its _meta and names one of them
// is passed on unchecked: the MCP library answers it "method not found"
// (HTTP 404 and -32601, as the revision requires). Checking its old params
// first answered 400 and -32602 ("level" is required), which told a client
// of the new revision to fix its params instead of that the method is gone
// (TestRemovedMethodsAreNotFound).
var removedInModern = map[string]bool{
	"initialize": true, "ping": true, "logging/setLevel": true,
	"resources/subscribe": true, "resources/unsubscribe": true,
}

// metaVersion is the protocol version _meta names, "" if none or not a
// string; a modern one (2026-07-28 or later) is how the MCP library tells
// the revisions apart.
func metaVersion(meta map[string]ref) string {
	v, _ := decodeString(meta[mcp.MetaKeyProtocolVersion])
	return v
}

func checkMembers(method, prefix string, members map[string]ref, shape map[string]field, names []string) *Error {
	for _, name := range names {
		f := shape[name]
		v, ok := members[name]
		if !ok {
			if f.required {
				return paramsError(method, fmt.Sprintf("%q is required", prefix+name))
			}
			continue
		}
		if got := kindOf(v); !f.kind.admits(got) && (f.required || got != kindNull) {
			return paramsError(method, fmt.Sprintf("%q must be %s, not %s", prefix+name, f.kind, got))
		}
	}
	return nil
}

func paramsError(method, why string) *Error {
	// The method is a known one (paramShapes) or refused before reaching
	// here for its length, so naming it echoes nothing unbounded.
	return &Error{Code: CodeInvalidParams, Err: ErrParams, Message: fmt.Sprintf("Invalid params for %s: %s", printableMethod(method), why)}
}

func printableMethod(m string) string {
	if _, known := paramShapes[m]; known {
		return m
	}
	if k := printableKey(fmt.Sprintf("%q", m)); k != "" {
		return k
	}
	return "this method"
}

func sortedNames(shape map[string]field) []string {
	names := make([]string, 0, len(shape))
	for n := range shape {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
