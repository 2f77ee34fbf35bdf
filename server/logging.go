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
	level, data := outcome(tool, resp)
	if err := s.mcp.SendLogMessageToClient(ctx, mcp.NewLoggingMessageNotification(level, "airlock", data)); err != nil {
		s.log.Debug("log notification not sent", "err", err)
	}
}

// The keys of a result's structured content a log message carries.
var (
	runKeys  = []string{"run_id", "pipeline", "exit_code", "killed", "output_pool", "snapshot_hash"}
	needKeys = []string{"declaration_id", "state", "decided_by", "operation"}
)

// outcome is the level and data of logOutcome's message about resp.
func outcome(tool string, resp *runner.Response) (mcp.LoggingLevel, map[string]any) {
	level, data := mcp.LoggingLevelInfo, map[string]any{"tool": tool, "audit_seq": resp.AuditSeq}
	switch {
	case resp.IsError:
		level = mcp.LoggingLevelWarning
		data["event"], data["code"] = tool+".refused", string(resp.Code)
	case tool == "run_pipeline":
		data["event"] = "pipeline.run"
		copyKeys(data, structuredKeys(resp, runKeys), runKeys...)
	default:
		data["event"] = "declaration"
		st := structuredKeys(resp, needKeys)
		copyKeys(data, st, needKeys...)
		if state, _ := st["state"].(string); state == "approved" || state == "denied" {
			level = mcp.LoggingLevelNotice
		}
	}
	return level, data
}

// structuredKeys is keys of resp's structured content as the client reads
// them (JSON values). Of a map only those keys are encoded: the rest — an
// executed need's untrusted details — was encoded once per need for
// nothing (issue 23). Evidence is a struct: decoded whole into a map.
func structuredKeys(resp *runner.Response, keys []string) map[string]any {
	var st map[string]any
	if m, ok := resp.Structured.(map[string]any); ok {
		sub := make(map[string]any, len(keys))
		for _, k := range keys {
			if v, ok := m[k]; ok {
				sub[k] = v
			}
		}
		resp = &runner.Response{Structured: sub}
	}
	decodeStructured(resp, &st)
	return st
}

func copyKeys(dst, src map[string]any, keys ...string) {
	for _, k := range keys {
		if v, ok := src[k]; ok {
			dst[k] = v
		}
	}
}
