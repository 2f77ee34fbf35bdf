package server

import (
	"bytes"
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// catalogFilter is mcp-go's tool filter: it gives each caller the
// declarations its own context sees (runner.Session.Tools), so
// declare_need's comm.mcp catalog lists only the upstream tools that are
// approved in the store now and that the caller's policy does not deny
// outright (issue 15). The context comes from the request as for a call:
// the transport session, or the principal (and Airlock-Context handle) of
// a sessionless 2026-07-28 request.
//
// It never removes a tool: Airlock withholds none of its four (the runner
// decides every call), so a caller whose context cannot be read gets the
// base declarations, which name no upstream tool (fail closed: nothing is
// advertised that was not checked for this caller).
func (s *Server) catalogFilter(ctx context.Context, tools []mcp.Tool) []mcp.Tool {
	if len(tools) < 2 {
		// tools/call: mcp-go passes only the called tool, as an access
		// check; there is nothing to specialise, and the call resolves
		// its session once, in forward.
		return tools
	}
	sess, err := s.session(ctx)
	if err != nil {
		s.log.Debug("tools/list without a context: base declarations", "err", err)
		return tools
	}
	infos, err := sess.Tools(ctx)
	if err != nil {
		s.log.Warn("tools/list: the caller's catalog cannot be built; base declarations", "err", err)
		return tools
	}
	out := make([]mcp.Tool, len(tools))
	copy(out, tools)
	for i := range out {
		for _, info := range infos {
			if info.Name != out[i].Name {
				continue
			}
			if info.Description != out[i].Description || !bytes.Equal(info.InputSchema, out[i].RawInputSchema) {
				out[i].Description, out[i].RawInputSchema = info.Description, info.InputSchema
			}
			break
		}
	}
	return out
}

// catalogPoll is how often the server reads the pins to notice a catalog
// change made by another process (`airlock upstreams approve`, a rug pull
// seen by a call or a review elsewhere). One small store read per poll.
const catalogPoll = time.Second

// watchCatalog sends notifications/tools/list_changed to every connected
// client when the usable upstream definitions change, so a client that
// caches its tool list lists again and sees its new catalog. It is a hint:
// each tools/list reads the pins itself, and every call is checked
// against them whatever a client cached.
func (s *Server) watchCatalog(ctx context.Context) {
	tick := time.NewTicker(catalogPoll)
	defer tick.Stop()
	last := s.r.CatalogVersion(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if v := s.r.CatalogVersion(ctx); v != last {
			last = v
			s.mcp.SendNotificationToAllClients(mcp.MethodNotificationToolsListChanged, nil)
		}
	}
}
