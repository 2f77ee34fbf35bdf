package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/edge/edge"
	"github.com/airlock-dev/airlock/internal/edge/wire"
	"github.com/airlock-dev/airlock/internal/execution/tokenexchange"
	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// guard is the HTTP edge every request crosses before mcp-go sees it, in
// this order, each refusal audited through the aggregator:
//
//  1. Origin: a browser page from a site not on the allow-list gets 403
//     (cross-site requests and DNS rebinding against a local Airlock);
//  2. authentication: no valid bearer token gets 401 — and the connection
//     stays "unauthenticated", so the tracker may evict it; with OAuth
//     configured the 401 names the protected resource metadata, and a
//     valid access token that maps to no role gets 403 insufficient_scope;
//  3. for POST: the content type must be JSON (415), the body must arrive
//     within body_read_timeout (408) and fit max_body_bytes (413, decided
//     from Content-Length before reading when it says so), and it must be
//     one strict JSON-RPC message (wire.Check: 400 with a JSON-RPC error).
//
// After the body is in, the read deadline is lifted (a long tool call must
// not be cancelled by it) and the write deadline is set for the response.
func (s *Server) guard(transport string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cfg := s.r.Config().Transports.HTTP
		remote := edge.RemoteHost(r.RemoteAddr)
		ref := edge.Refusal{Transport: transport, Remote: remote, Principal: "anonymous"}
		if !s.origins.Load().Allowed(r.Header.Get("Origin")) {
			ref.Code, ref.Reason = string(violation.OriginRefused), r.Method+" "+r.URL.Path+" refused: Origin not on transports.http.allowed_origins"
			s.refuseEdge(w, ref, http.StatusForbidden, mcp.INVALID_REQUEST, nil, "Forbidden: this Origin may not reach Airlock (transports.http.allowed_origins)")
			return
		}
		res := s.auth.Load().identify(r)
		if !res.ok {
			ref.Code, ref.Kind, ref.Reason = string(violation.Unauthenticated), res.kind, res.reason
			message := "Unauthorized: a valid bearer token is required"
			if res.status == http.StatusForbidden {
				// A valid token that maps to no role: the principal is
				// known, so the record names it (and its client).
				ref.Code, ref.Principal, ref.ClientID = string(violation.InsufficientScope), res.id.Principal, res.id.ClientID
				message = "Forbidden: the access token grants no role here (insufficient_scope)"
			}
			w.Header().Set("WWW-Authenticate", res.challenge)
			s.refuseEdge(w, ref, res.status, mcp.INVALID_REQUEST, nil, message)
			return
		}
		id := res.id
		edge.ConnFrom(r.Context()).MarkAuthenticated()
		id.Transport = transport
		id.ContextHandle = r.Header.Get(HeaderContext)
		ref.Principal, ref.Role = id.Principal, id.Role
		ctx := withIdentity(r.Context(), id)
		if res.caller.Token != "" {
			ctx = tokenexchange.WithCaller(ctx, res.caller) // an upstream's token exchange (issue 23 item 3)
		}
		if r.Method == http.MethodPost {
			body, ok := s.guardBody(w, r, cfg, ref, "application/json")
			if !ok {
				return
			}
			msg, err := wire.Check(body)
			if err != nil {
				var we *wire.Error
				errors.As(err, &we)
				ref.Code, ref.Kind, ref.Reason = string(violation.MalformedMessage), we.Err.Error(), r.Method+" "+r.URL.Path+" refused: "+we.Message
				s.refuseEdge(w, ref, http.StatusBadRequest, we.Code, we.ID, we.Message)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			ctx = context.WithValue(ctx, checkedKey{}, &msg)
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// checkedKey carries what wire.Check read of the POST body, so that the
// session gate routes the request without decoding the body again.
type checkedKey struct{}

// guardBody reads a POST body of mediaType with readBody; a body it
// refuses is answered and counted as an edge refusal of ref, and ok is
// false.
func (s *Server) guardBody(w http.ResponseWriter, r *http.Request, cfg config.HTTPTransport, ref edge.Refusal, mediaType string) (body []byte, ok bool) {
	body, status, code, why := readBody(w, r, cfg, mediaType)
	if status != 0 {
		ref.Code, ref.Kind, ref.Reason = string(code), http.StatusText(status), r.Method+" "+r.URL.Path+" refused: "+why
		s.refuseEdge(w, ref, status, mcp.INVALID_REQUEST, nil, why)
		return nil, false
	}
	return body, true
}

// acceptsMediaType: contentType names mediaType (parameters aside). The
// exact type, as MCP clients send it, needs no parse: ParseMediaType builds
// a parameter map per request (TestReadBodyPlainJSONSkipsTheMediaTypeParse).
func acceptsMediaType(contentType, mediaType string) bool {
	if contentType == mediaType {
		return true
	}
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == mediaType
}

// readBody reads a POST body of mediaType under the edge's bounds; a
// non-zero status says why it was refused.
func readBody(w http.ResponseWriter, r *http.Request, cfg config.HTTPTransport, mediaType string) (body []byte, status int, code violation.Code, why string) {
	if !acceptsMediaType(r.Header.Get("Content-Type"), mediaType) {
		why := "Unsupported Media Type: a POST carries one JSON-RPC message as application/json"
		if mediaType != "application/json" {
			why = "Unsupported Media Type: a POST here carries " + mediaType
		}
		return nil, http.StatusUnsupportedMediaType, violation.MalformedMessage, why
	}
	if r.ContentLength > cfg.MaxBodyBytes {
		return nil, http.StatusRequestEntityTooLarge, violation.MessageTooLarge, "Request Entity Too Large: the body is over transports.http.max_body_bytes"
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(config.Seconds(cfg.BodyReadTimeoutSeconds)))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, cfg.MaxBodyBytes))
	var tooBig *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &tooBig):
		return nil, http.StatusRequestEntityTooLarge, violation.MessageTooLarge, "Request Entity Too Large: the body is over transports.http.max_body_bytes"
	case errors.As(err, &ne) && ne.Timeout():
		return nil, http.StatusRequestTimeout, violation.RequestTimeout, "Request Timeout: the body did not arrive within transports.http.body_read_timeout_seconds"
	case err != nil:
		return nil, http.StatusBadRequest, violation.MalformedMessage, "Bad Request: the body could not be read"
	}
	// The body is in: a deadline left on the read side would cancel a long
	// tool call's context when it fires; the response gets its own bound.
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Now().Add(config.Seconds(cfg.WriteTimeoutSeconds)))
	return body, 0, "", ""
}

// refuseEdge answers a refusal at the edge with its status and a JSON-RPC
// error body, and hands it to the aggregator (one record per remote
// address, principal and cause per window, with a count).
func (s *Server) refuseEdge(w http.ResponseWriter, ref edge.Refusal, status, rpcCode int, id json.RawMessage, message string) {
	s.refusals.Refuse(ref)
	writeRefusal(w, status, rpcCode, id, message, ref.Code)
}

// writeRefusal answers with status and the JSON-RPC error body of a
// refusal (id null when the request's could not be read).
func writeRefusal(w http.ResponseWriter, status, rpcCode int, id json.RawMessage, message, code string) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	h := w.Header()
	h["Content-Type"] = jsonContentType
	if status == http.StatusRequestEntityTooLarge || status == http.StatusRequestTimeout {
		h.Set("Connection", "close") // the rest of the body is not read
	}
	w.WriteHeader(status)
	_, _ = w.Write(refusalBody(id, rpcCode, message, code))
}

var jsonContentType = []string{"application/json"}

// refusalBody is the JSON-RPC error of a refusal, written by hand: the
// refusal path is what a flood of unauthenticated requests exercises, so
// it builds one small buffer and no maps (BenchmarkEdgeRefuseUnauthenticated).
func refusalBody(id json.RawMessage, rpcCode int, message, code string) []byte {
	b := make([]byte, 0, 128+len(message))
	b = append(b, `{"error":{"code":`...)
	b = strconv.AppendInt(b, int64(rpcCode), 10)
	b = append(b, `,"data":{"code":`...)
	b = strconv.AppendQuote(b, code) // codes are ASCII identifiers
	b = append(b, `},"message":`...)
	m, _ := json.Marshal(message) // JSON string escaping, never Go quoting
	b = append(b, m...)
	b = append(b, `},"id":`...)
	b = append(b, id...)
	b = append(b, `,"jsonrpc":"2.0"}`+"\n"...)
	return b
}
