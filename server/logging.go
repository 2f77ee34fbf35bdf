package server

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-dev/airlock/internal/execution/runner"
)

// logOutcome sends an MCP log notification about the events a person at
// the client may want to see without reading tool results: pipeline runs
// and declarations changing state. mcp-go drops it below the level the
// client set (logging/setLevel, or per request under 2026-07-28), so a
// client that asked for nothing gets nothing. The data carries ids, states
// and codes only — never content, never a value a remote server chose.
func (s *Server) logOutcome(ctx context.Context, tool string, resp *runner.Response) {
	if tool != "run_pipeline" && tool != "declare_need" {
		return
	}
	level, data := mcp.LoggingLevelInfo, map[string]any{"tool": tool, "audit_seq": resp.AuditSeq}
	var st map[string]any
	decodeStructured(resp, &st) // evidence is a struct; a map either way
	switch {
	case resp.IsError:
		level = mcp.LoggingLevelWarning
		data["event"], data["code"] = tool+".refused", string(resp.Code)
	case tool == "run_pipeline":
		data["event"] = "pipeline.run"
		copyKeys(data, st, "run_id", "pipeline", "exit_code", "killed", "output_pool", "snapshot_hash")
	default:
		data["event"] = "declaration"
		copyKeys(data, st, "declaration_id", "state", "decided_by", "operation")
		if state, _ := st["state"].(string); state == "approved" || state == "denied" {
			level = mcp.LoggingLevelNotice
		}
	}
	if err := s.mcp.SendLogMessageToClient(ctx, mcp.NewLoggingMessageNotification(level, "airlock", data)); err != nil {
		s.log.Debug("log notification not sent", "err", err)
	}
}

func copyKeys(dst, src map[string]any, keys ...string) {
	for _, k := range keys {
		if v, ok := src[k]; ok {
			dst[k] = v
		}
	}
}
