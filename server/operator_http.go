package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/edge/edge"
	"github.com/airlock-dev/airlock/internal/execution/runner"
	"github.com/airlock-dev/airlock/internal/kit/strictjson"
	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/policy/contexts"
)

// The operator's HTTP API (issue 22 item 1): a hosted agent's orchestrator
// creates a child context with the principal's task text — the context's
// trusted input — before it hands the context handle to the agent's MCP
// session.
//
//	POST /operator/contexts  Authorization: Bearer <a static token of transports.http.console_role>
//	{"parent": "ctx_…", "task": "…", "pools": ["a"], "policy": "p", "phase": "execution", "reason": "…"}
//	→ 201 {"context": "ctx_…", "handle": "…"}
//
// Who may call it is the console's admin: a static bearer token of
// transports.http.console_role, checked on every request against the
// current configuration. An agent's token (any other role, the anonymous
// role, an OAuth access token) is refused, 401 without a token and 403
// with one of another role, and the refusal is an edge record. The MCP
// endpoints never reach this handler: it is mounted on its own path, and
// nothing an agent sends through its tools names it
// (TestOperatorContextsRefusesAgent, TestAgentCannotCreateTrustedInput).
// The body is bounded as /mcp's (max_body_bytes, body_read_timeout) and
// checked by strictjson (no duplicate or case-folded keys) before it is
// decoded with unknown fields refused. The context's creation and its task
// are audited by runner.Operator.CreateChild, under the admin's principal,
// transport "operator-http".

// PathOperatorContexts creates child contexts.
const PathOperatorContexts = "/operator/contexts"

// transportOperatorHTTP names this API in audit records.
const transportOperatorHTTP = "operator-http"

// createContextRequest is the body of POST /operator/contexts.
type createContextRequest struct {
	Parent string   `json:"parent"`
	Task   string   `json:"task"`
	Pools  []string `json:"pools,omitempty"`
	Policy string   `json:"policy,omitempty"`
	Phase  string   `json:"phase,omitempty"`
	Reason string   `json:"reason"`
}

// maxOperatorJSONDepth bounds the body's nesting (an object of lists).
const maxOperatorJSONDepth = 4

// handleOperator mounts the operator API.
func (s *Server) handleOperator(mux *http.ServeMux) {
	mux.Handle(PathOperatorContexts, http.HandlerFunc(s.operatorContexts))
}

// operatorError is the API's typed error body.
func operatorError(w http.ResponseWriter, status int, code violation.Code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": string(code), "message": msg}})
}

func (s *Server) operatorContexts(w http.ResponseWriter, r *http.Request) {
	cfg := s.r.Config()
	role := cfg.Transports.HTTP.ConsoleRole
	if role == "" {
		http.NotFound(w, r) // no admin configured: no operator API
		return
	}
	ref := edge.Refusal{Transport: transportOperatorHTTP, Remote: edge.RemoteHost(r.RemoteAddr), Principal: "anonymous"}
	refuse := func(status int, code violation.Code, why, msg string) {
		ref.Code, ref.Reason = string(code), r.Method+" "+r.URL.Path+" refused: "+why
		s.refusals.Refuse(ref)
		operatorError(w, status, code, msg)
	}
	if !s.origins.Load().Allowed(r.Header.Get("Origin")) {
		refuse(http.StatusForbidden, violation.OriginRefused, "Origin not on transports.http.allowed_origins", "this Origin may not reach Airlock")
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		operatorError(w, http.StatusMethodNotAllowed, violation.InvalidArguments, "POST only")
		return
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || tok == "" {
		ref.Kind = "no token"
		w.Header().Set("WWW-Authenticate", `Bearer realm="airlock-operator"`)
		refuse(http.StatusUnauthorized, violation.Unauthenticated, "no bearer token", "a bearer token of transports.http.console_role is required")
		return
	}
	id, ok := s.auth.Load().static(tok)
	if !ok {
		ref.Kind = "token not recognised"
		w.Header().Set("WWW-Authenticate", `Bearer realm="airlock-operator", error="invalid_token"`)
		refuse(http.StatusUnauthorized, violation.Unauthenticated, "bearer token not recognised", "a bearer token of transports.http.console_role is required")
		return
	}
	edge.ConnFrom(r.Context()).MarkAuthenticated()
	ref.Principal, ref.Role = id.Principal, id.Role
	if id.Role != role {
		// An agent's token: whatever its role may do through MCP, it
		// never adds a trusted input.
		refuse(http.StatusForbidden, violation.InsufficientScope, "role "+id.Role+" is not transports.http.console_role", "this token's role may not create contexts")
		return
	}
	body, status, code, why := readBody(w, r, cfg.Transports.HTTP, "application/json")
	if status != 0 {
		refuse(status, code, why, why)
		return
	}
	req, err := decodeCreateContext(body)
	if err != nil {
		refuse(http.StatusBadRequest, violation.InvalidArguments, err.Error(), err.Error())
		return
	}
	cx, handle, err := s.createContext(r, req, id.Principal)
	if err != nil {
		status, code, msg := operatorFailure(err)
		operatorError(w, status, code, msg)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(map[string]string{"context": cx.ID, "handle": handle})
}

// errBadRequest: a body that is not a create request.
var errBadRequest = errors.New("bad request")

// decodeCreateContext checks the body strictly and decodes it.
func decodeCreateContext(body []byte) (*createContextRequest, error) {
	if err := strictjson.Check(body, maxOperatorJSONDepth); err != nil {
		return nil, errors.Join(errBadRequest, err)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var req createContextRequest
	if err := dec.Decode(&req); err != nil {
		return nil, errors.Join(errBadRequest, err)
	}
	switch {
	case req.Parent == "":
		return nil, errors.Join(errBadRequest, errors.New("parent is required"))
	case req.Task == "":
		return nil, errors.Join(errBadRequest, errors.New("task is required: it is the context's trusted input"))
	case req.Reason == "":
		return nil, errors.Join(errBadRequest, errors.New("reason is required (it is audited)"))
	}
	return &req, nil
}

func (s *Server) createContext(r *http.Request, req *createContextRequest, principal string) (*runner.Context, string, error) {
	op := s.r.Operator(transportOperatorHTTP)
	defer op.Close()
	spec := runner.ChildSpec{Parent: req.Parent, Policy: req.Policy, Pools: req.Pools, Phase: req.Phase, Task: req.Task}
	return op.CreateChild(r.Context(), s.r.Config(), spec, principal, req.Reason)
}

// operatorFailure maps a creation error to a status and a public message:
// the typed ones say what was wrong; anything else is internal.
func operatorFailure(err error) (int, violation.Code, string) {
	switch {
	case errors.Is(err, runner.ErrNoSuchContext), errors.Is(err, runner.ErrAmbiguousID):
		return http.StatusNotFound, violation.ContextInvalid, "no such parent context"
	case errors.Is(err, runner.ErrTaskInvalid):
		return http.StatusBadRequest, violation.InvalidArguments, err.Error()
	case errors.Is(err, contexts.ErrWidens), errors.Is(err, config.ErrUnknownReference), errors.Is(err, contexts.ErrInvalid):
		return http.StatusUnprocessableEntity, violation.ContextInvalid, err.Error()
	}
	return http.StatusInternalServerError, violation.Internal, "internal error; see the server log"
}
