package server

import (
	"context"
	"fmt"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/airlock-dev/airlock/runner"
)

// identity is who is calling and over what; the HTTP middleware puts it in
// the request context, stdio and in-process calls use the local identity.
type identity struct {
	Principal string
	Role      string
	Transport string
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
	return identity{Principal: "local", Role: s.r.Config().Transports.Stdio.Role, Transport: "stdio"}
}

// session finds or opens the runner session for the calling MCP session.
// A session id presented by a different principal than the one that opened
// it is refused: holding someone's session id must not grant their pools.
func (s *Server) session(ctx context.Context) (*runner.Session, error) {
	id := s.identityFrom(ctx)
	key := ""
	if cs := mcpserver.ClientSessionFromContext(ctx); cs != nil {
		key = cs.SessionID()
	}
	if key == "" {
		// Sessionless request (2026-07-28 revision): one context per principal.
		key = "principal:" + id.Principal
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if rid, ok := s.sessions[key]; ok {
		if sess, ok := s.r.Session(rid); ok {
			if sess.Principal() != id.Principal {
				return nil, fmt.Errorf("session belongs to another principal")
			}
			return sess, nil
		}
	}
	sess, err := s.r.OpenSession(ctx, runner.SessionParams{Principal: id.Principal, Role: id.Role, Transport: id.Transport})
	if err != nil {
		s.log.Error("opening session", "err", err)
		return nil, fmt.Errorf("UNAVAILABLE: session could not be opened")
	}
	s.sessions[key] = sess.ID()
	return sess, nil
}

func (s *Server) closeSession(ctx context.Context, key string) {
	s.mu.Lock()
	rid, ok := s.sessions[key]
	delete(s.sessions, key)
	s.mu.Unlock()
	if ok {
		s.r.CloseSession(ctx, rid)
	}
}
