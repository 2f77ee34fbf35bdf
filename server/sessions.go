package server

import (
	"context"
	"errors"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/airlock-dev/airlock/internal/execution/runner"
	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/policy/contexts"
)

// identity is who is calling and over what; the HTTP middleware puts it in
// the request context, stdio and in-process calls use the local identity.
type identity struct {
	Principal string
	Role      string
	Transport string
	// ClientID is the OAuth client the access token was issued to ("" for
	// static tokens); recorded beside the principal.
	ClientID string
	// ContextHandle names a child context (the Airlock-Context header, or
	// serve --context on stdio); empty means the principal's default.
	ContextHandle string
	// Binding is what the credential allows of contexts: a token or an
	// OAuth rule bound to a context, or required to name one.
	Binding contexts.Binding
}

type identityKey struct{}

func withIdentity(ctx context.Context, id identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

func (s *Server) identityFrom(ctx context.Context) identity {
	if id, ok := ctx.Value(identityKey{}).(identity); ok {
		return id
	}
	// No HTTP middleware ran: stdio, or an in-process client.
	return identity{Principal: "local", Role: s.r.Config().Transports.Stdio.Role, Transport: "stdio", ContextHandle: s.stdioContext}
}

// session returns the runner session a call runs in:
//   - a sessionless request (protocol 2026-07-28, any transport): the
//     principal's context, or the child its handle names;
//   - streamable HTTP: the server-issued session the request names, which
//     the HTTP gate already checked is live and the caller's and handed on;
//   - stdio, SSE and in-process clients: one runner session per transport
//     session, opened on its first call and bound to that caller.
//
// Whatever the handle, the state is the context's, in the store. The
// handle's records name the OAuth client of this request's token.
func (s *Server) session(ctx context.Context) (*runner.Session, error) {
	sess, err := s.handle(ctx)
	if err != nil {
		return nil, err
	}
	return sess.WithClient(s.identityFrom(ctx).ClientID), nil
}

func (s *Server) handle(ctx context.Context) (*runner.Session, error) {
	id := s.identityFrom(ctx)
	if info := mcpserver.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		return s.r.Sessionless(ctx, id.Principal, id.Role, id.Transport, id.ContextHandle, id.Binding)
	}
	key := ""
	if cs := mcpserver.ClientSessionFromContext(ctx); cs != nil {
		key = cs.SessionID()
	}
	if id.Transport == transportStreamable {
		if sess, ok := ctx.Value(attachedKey{}).(*runner.Session); ok {
			return sess, nil // the gate checked it for this very request
		}
		return s.r.AttachSession(ctx, key, id.Principal, id.Role, id.Binding, s.r.Config().Transports.HTTP.SessionIdleTimeout())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess, ok := s.local[key]; ok {
		if sess.Principal() != id.Principal {
			// Holding someone's SSE session id must not grant their context.
			return nil, violation.Wrap(violation.SessionForeign, runner.ErrSessionForeign, "no session with this id was issued by this server")
		}
		return sess, nil
	}
	sess, err := s.r.OpenSession(ctx, runner.SessionParams{Principal: id.Principal, Role: id.Role, Transport: id.Transport,
		ContextHandle: id.ContextHandle, Binding: id.Binding, Elicitation: clientCanElicit(ctx), ClientID: id.ClientID})
	if err != nil {
		return nil, err
	}
	s.local[key] = sess
	return sess, nil
}

// refuseSession turns a failure to find the caller's session into an agent
// error, audited with its stable code.
func (s *Server) refuseSession(ctx context.Context, err error) *violation.Error {
	id := s.identityFrom(ctx)
	var v *violation.Error
	if !errors.As(err, &v) {
		s.log.Error("opening session", "err", err)
		v = violation.Wrap(violation.Unavailable, err, "the session could not be opened")
	}
	presented := ""
	if cs := mcpserver.ClientSessionFromContext(ctx); cs != nil {
		presented = cs.SessionID()
	}
	s.r.RecordSessionRefusal(ctx, id.Transport, id.Principal, id.Role, v.Code, presented, v.Message)
	return publicRefusal(v)
}

// closeLocal ends the runner session of a stdio, SSE or in-process
// transport session that went away. Streamable HTTP sessions end by DELETE
// or idle timeout, never because one connection closed.
func (s *Server) closeLocal(ctx context.Context, key string) {
	s.mu.Lock()
	sess, ok := s.local[key]
	delete(s.local, key)
	s.mu.Unlock()
	if ok {
		s.r.CloseSession(ctx, sess.ID(), "transport closed")
	}
}

// clientCanElicit reports whether the client declared the elicitation
// capability: per request under 2026-07-28, at initialize before.
func clientCanElicit(ctx context.Context) bool {
	if info := mcpserver.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		return info.ClientCapabilities != nil && info.ClientCapabilities.Elicitation != nil
	}
	if cs, ok := mcpserver.ClientSessionFromContext(ctx).(mcpserver.SessionWithClientInfo); ok {
		return cs.GetClientCapabilities().Elicitation != nil
	}
	return false
}
