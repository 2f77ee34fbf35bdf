// Package wire checks one JSON-RPC message as it arrives on a transport,
// before any MCP code decodes it.
//
// The MCP library reads messages leniently: the last of two duplicate keys
// wins (so `"name":"list_pools","name":"run_pipeline"` runs the second),
// any JSON value is accepted as an id, and a type mismatch is reported with
// Go type names and the peer's own method echoed back whole. Check refuses
// all of that first, with a fixed, bounded message that never repeats more
// than a short, printable key name of what the peer sent.
package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/internal/kit/strictjson"
)

// Bounds on a message's shape. No MCP message nests deeper than a few
// levels; tool arguments here are flat. A method name is a short path.
const (
	MaxDepth       = 64
	MaxMethodBytes = 128
)

// JSON-RPC error codes a refusal carries.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeInvalidParams  = -32602
)

// Why a message was refused; test with errors.Is.
var (
	ErrNotJSON      = errors.New("not valid JSON")
	ErrDuplicateKey = errors.New("duplicate key")
	ErrTooDeep      = errors.New("nested too deeply")
	ErrNumberRange  = errors.New("number out of range")
	ErrBatch        = errors.New("batch")
	ErrEnvelope     = errors.New("invalid JSON-RPC envelope")
	ErrParams       = errors.New("invalid params")
	ErrTooLarge     = errors.New("message too large")
)

// Error is a refusal: the JSON-RPC code and the public message to answer
// with, the request id when one could be read safely, and the cause.
type Error struct {
	Code    int
	Message string
	ID      json.RawMessage // a scalar id, or nil
	Err     error
}

func (e *Error) Error() string { return e.Message }
func (e *Error) Unwrap() error { return e.Err }

// Message is what Check learned of an accepted message: enough for the
// HTTP session gate to route it without decoding the body again (issue 27;
// TestCheckAllocations).
type Message struct {
	ID     json.RawMessage // nil for a notification
	Method string          // "" for a response
	// MetaVersion is params._meta's protocol version when it is a string.
	MetaVersion string
	// URI is params.uri of a resources/read.
	URI string
	// Name is params.name of a tools/call: which tool, so that the edge
	// can tell a quick call from a slow one (package admission).
	Name string
	// Elicitation: an initialize declares the elicitation capability (a
	// member that is present and not null).
	Elicitation bool
}

// ref is a JSON value decoded in place: a slice of the message, where
// json.RawMessage would copy it. A ref never outlives Check; what Check
// returns is copied.
type ref []byte

func (r *ref) UnmarshalJSON(b []byte) error { *r = b; return nil }

// Check accepts exactly one JSON-RPC 2.0 request, notification or response
// object: no duplicate key at any depth, nesting within MaxDepth, a string
// or integer id, a bounded method name, object params whose well-known
// members have the types MCP gives them.
func Check(msg []byte) (Message, error) {
	if err := strictjson.Check(msg, MaxDepth); err != nil {
		return Message{}, strictError(err)
	}
	trimmed := bytes.TrimLeft(msg, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		return Message{}, &Error{Code: CodeInvalidRequest, Err: ErrBatch,
			Message: "Invalid request: JSON-RPC batches are not accepted (MCP removed batching in 2025-06-18); send one message at a time"}
	}
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return Message{}, envelope(nil, "the message must be a JSON object")
	}
	var env struct {
		JSONRPC ref `json:"jsonrpc"`
		ID      ref `json:"id"`
		Method  ref `json:"method"`
		Params  ref `json:"params"`
		Result  ref `json:"result"`
		Error   ref `json:"error"`
	}
	if err := json.Unmarshal(msg, &env); err != nil {
		return Message{}, envelope(nil, "the message must be a JSON object")
	}
	id, idErr := scalarID(json.RawMessage(env.ID))
	if idErr != "" {
		return Message{}, envelope(nil, idErr)
	}
	if string(env.JSONRPC) != `"2.0"` {
		return Message{}, envelope(id, `"jsonrpc" must be "2.0"`)
	}
	if env.Method == nil {
		return checkResponse(id, json.RawMessage(env.Result), json.RawMessage(env.Error))
	}
	method, ok := decodeString(env.Method)
	if !ok {
		return Message{}, envelope(id, `"method" must be a string`)
	}
	if method == "" || len(method) > MaxMethodBytes {
		return Message{}, envelope(id, fmt.Sprintf(`"method" must be 1 to %d bytes`, MaxMethodBytes))
	}
	if env.Result != nil || env.Error != nil {
		return Message{}, envelope(id, `a request carries "method" or "result"/"error", not both`)
	}
	if isNull(json.RawMessage(env.ID)) {
		return Message{}, envelope(nil, `a request's "id" must be a string or an integer, not null`)
	}
	m := Message{ID: id, Method: method}
	if err := checkParams(&m, json.RawMessage(env.Params)); err != nil {
		err.ID = id
		return Message{}, err
	}
	return m, nil
}

func checkResponse(id, result, rpcErr json.RawMessage) (Message, error) {
	if (result == nil) == (rpcErr == nil) {
		return Message{}, envelope(id, `a message needs "method", or exactly one of "result" and "error"`)
	}
	if id == nil && result != nil {
		return Message{}, envelope(nil, `a response needs the "id" of the request it answers`)
	}
	if rpcErr != nil && kindOf(rpcErr) != kindObject {
		return Message{}, envelope(id, `"error" must be an object`)
	}
	return Message{ID: id}, nil
}

// scalarID returns the id if it is absent, a string or an integer; JSON-RPC
// ids are scalars, and an object id would be echoed back into responses.
// The id is a copy: raw is a slice of the message, whose buffer a
// transport may reuse (stdio reads the next line into it).
func scalarID(raw json.RawMessage) (json.RawMessage, string) {
	switch {
	case raw == nil || isNull(raw):
		return nil, ""
	case kindOf(raw) == kindString:
		if len(raw) > 258 {
			return nil, `"id" must be at most 256 characters`
		}
		return bytes.Clone(raw), ""
	case kindOf(raw) == kindNumber:
		if !isInteger(raw) {
			return nil, `"id" must be a string or an integer`
		}
		return bytes.Clone(raw), ""
	default:
		return nil, `"id" must be a string or an integer`
	}
}

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

// decodeString decodes a JSON string: one without escapes directly (most
// are), the rest through encoding/json, as the MCP library reads them.
func decodeString(raw []byte) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' && bytes.IndexByte(raw[1:len(raw)-1], '\\') < 0 &&
		bytes.IndexByte(raw[1:len(raw)-1], '"') < 0 && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	if kindOf(raw) != kindString || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// isInteger: raw, a JSON number (strictjson checked the message), has no
// fraction or exponent and at most 20 bytes — what an int64 id can hold.
func isInteger(raw []byte) bool {
	n := bytes.TrimSpace(raw)
	return len(n) > 0 && len(n) <= 20 && !bytes.ContainsAny(n, ".eE")
}

func envelope(id json.RawMessage, why string) *Error {
	return &Error{Code: CodeInvalidRequest, ID: id, Err: ErrEnvelope, Message: "Invalid request: " + why}
}

// strictError turns strictjson's verdict into a refusal that names at most
// a short printable key, never the peer's bytes.
func strictError(err error) *Error {
	switch {
	case errors.Is(err, strictjson.ErrDuplicateKey):
		msg := "Invalid request: an object has the same key twice"
		if _, key, ok := strings.Cut(err.Error(), `duplicate key `); ok {
			if k := printableKey(key); k != "" {
				msg = fmt.Sprintf("Invalid request: an object has the key %s twice", k)
			}
		}
		return &Error{Code: CodeInvalidRequest, Err: ErrDuplicateKey, Message: msg + " (duplicate keys are refused: readers disagree on which one counts)"}
	case errors.Is(err, strictjson.ErrNumberRange):
		// The MCP library reads every tool argument number as a float64:
		// it refused 1e309 itself, with its own error, before anything
		// audited the call. Refused here, the refusal is the edge's,
		// typed and audited like every malformed message.
		return &Error{Code: CodeInvalidRequest, Err: ErrNumberRange,
			Message: "Invalid request: a number is beyond what a 64-bit float holds (about 1.8e308)"}
	case errors.Is(err, strictjson.ErrTooDeep):
		return &Error{Code: CodeInvalidRequest, Err: ErrTooDeep, Message: fmt.Sprintf("Invalid request: nested deeper than %d levels", MaxDepth)}
	default:
		return &Error{Code: CodeParseError, Err: ErrNotJSON, Message: "Parse error: the message is not one valid JSON value"}
	}
}

// printableKey returns the quoted key if it is short and plain, else "".
func printableKey(quoted string) string {
	if len(quoted) > 66 {
		return ""
	}
	for _, r := range quoted {
		if !unicode.IsPrint(r) || r > unicode.MaxASCII {
			return ""
		}
	}
	return quoted
}
