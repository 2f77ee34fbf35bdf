package declarations

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/airlock-dev/airlock/internal/kit/rawjson"
)

// Operation is the kind of external information a need asks for. Every
// operation is in the comm.* namespace the phase gate knows (seed 002).
type Operation string

// The operations.
const (
	// OpFetch retrieves one URL.
	OpFetch Operation = "comm.fetch"
	// OpSearch asks the configured search endpoint (or a named one).
	OpSearch Operation = "comm.search"
	// OpQuery runs read-only SQL against a configured database.
	OpQuery Operation = "comm.query"
	// OpMCP calls one tool of a configured upstream MCP server (issue
	// 15), in the definition an operator approved.
	OpMCP Operation = "comm.mcp"
)

// Limits of a need's fields, in bytes of UTF-8.
const (
	MaxURLBytes           = 2048
	MaxSearchQueryBytes   = 512
	MaxSQLBytes           = 8 << 10
	MaxSourceBytes        = 64
	MaxJustificationBytes = 2000
	MaxUpstreamBytes      = 32
	MaxToolBytes          = 64
	MaxArgumentsBytes     = 16 << 10
)

// Need is what an agent declares: the declare_need tool's input. It says
// what is needed (Operation and Parameters: the where) and why
// (Justification). [Need.Validate] is the authority on what is acceptable;
// the jsonschema tags are a looser summary for clients (maxLength there
// counts characters, the limits here count bytes).
type Need struct {
	Operation     Operation     `json:"operation" jsonschema:"enum=comm.fetch,enum=comm.search,enum=comm.query,enum=comm.mcp,description=What to do: comm.fetch retrieves one URL; comm.search asks a search endpoint; comm.query runs read-only SQL against a configured database; comm.mcp calls a tool of an upstream MCP server."`
	Parameters    Parameters    `json:"parameters" jsonschema:"description=Where to get it. comm.fetch takes url only; comm.search takes query and optionally source; comm.query takes query and source."`
	Justification Justification `json:"justification" jsonschema:"description=Why it is needed. Shown to the person who approves it and kept in the audit trail."`
}

// Parameters says where the information comes from. Which fields an
// operation takes is fixed; a field an operation does not take must be
// absent.
type Parameters struct {
	URL    string `json:"url,omitempty" jsonschema:"maxLength=2048,description=comm.fetch only: the absolute http or https URL to fetch. ASCII only (percent-encode the path and use xn-- host names); no user:password@."`
	Query  string `json:"query,omitempty" jsonschema:"maxLength=8192,description=comm.search: the search terms (at most 512 bytes). comm.query: the SQL text (at most 8 KiB)\\, read-only."`
	Source string `json:"source,omitempty" jsonschema:"maxLength=64,pattern=^[a-z0-9][a-z0-9_.-]{0\\,63}$,description=The name of a configured source: the database for comm.query (required) or the search endpoint for comm.search (optional)."`
	// Upstream, Tool and Arguments are comm.mcp's: which configured
	// upstream MCP server, which of its tools, and the tool's arguments
	// (a JSON object, kept in canonical form: sorted keys, compact).
	Upstream  string          `json:"upstream,omitempty" jsonschema:"maxLength=32,pattern=^[a-z0-9][a-z0-9_-]{0\\,31}$,description=comm.mcp only: the id of a configured upstream MCP server."`
	Tool      string          `json:"tool,omitempty" jsonschema:"maxLength=64,pattern=^[A-Za-z0-9_-]{1\\,64}$,description=comm.mcp only: the name of one of the upstream's approved tools."`
	Arguments json.RawMessage `json:"arguments,omitempty" jsonschema:"type=object,description=comm.mcp only: the tool's arguments (a JSON object matching the tool's pinned input schema; at most 16 KiB)."`
}

// Justification is why the need exists. Every field is required.
type Justification struct {
	UserRequest      string `json:"user_request" jsonschema:"minLength=1,maxLength=2000,description=What the user asked for that this need serves."`
	MissingKnowledge string `json:"missing_knowledge" jsonschema:"minLength=1,maxLength=2000,description=What is not known without it: why the bound data is not enough."`
	ExpectedUse      string `json:"expected_use" jsonschema:"minLength=1,maxLength=2000,description=How the result will be used in the answer."`
}

// Canonical returns the need's canonical encoding: compact JSON with the
// fields in declaration order, empty parameters omitted, and no HTML
// escaping. Equal needs give equal bytes, and decoding the bytes gives the
// need back.
//
// The encoding is defined for any need, but only a valid one (see
// [Need.Validate]) is injective: JSON encoding replaces invalid UTF-8 with
// U+FFFD, so two invalid needs can share one encoding. The Manager only
// fingerprints validated needs.
func (n *Need) Canonical() []byte {
	// A struct of strings cannot fail to encode.
	b, _ := rawjson.Plain(n)
	return b
}

// Fingerprint returns the lowercase hex SHA-256 of [Need.Canonical]. An
// approval is bound to the fingerprint of the need it approved: Begin
// refuses to execute a stored need that no longer matches it.
func (n *Need) Fingerprint() string {
	sum := sha256.Sum256(n.Canonical())
	return hex.EncodeToString(sum[:])
}
