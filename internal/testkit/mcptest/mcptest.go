// Package mcptest opens an MCP client session for a test: start, the
// initialize handshake, and the close when the test ends. Invariant: a
// client it returns has completed initialize, and a failed handshake
// fails the test rather than leaving a half-open session.
package mcptest

import (
	"context"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// Connect starts c, closes it when the test ends, and initializes it as
// the client name at the legacy protocol version, the one every
// transport Airlock serves accepts.
func Connect(tb testing.TB, ctx context.Context, c *client.Client, name string) {
	tb.Helper()
	if err := c.Start(ctx); err != nil {
		tb.Fatalf("starting the MCP client %s: %v", name, err)
	}
	tb.Cleanup(func() { c.Close() })
	Initialize(tb, ctx, c, name, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
}

// Initialize sends c's initialize request as the client name asking for
// the protocol version, and returns the server's answer.
func Initialize(tb testing.TB, ctx context.Context, c *client.Client, name, version string) *mcp.InitializeResult {
	tb.Helper()
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: name, Version: "1"}
	init.Params.ProtocolVersion = version
	res, err := c.Initialize(ctx, init)
	if err != nil {
		tb.Fatalf("initialize %s (%s): %v", name, version, err)
	}
	return res
}

// Call calls tool with args, failing the test if the call itself fails
// (a tool's error result is returned, for the test to judge).
func Call(tb testing.TB, ctx context.Context, c *client.Client, tool string, args map[string]any) *mcp.CallToolResult {
	tb.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		tb.Fatalf("CallTool(%s): %v", tool, err)
	}
	return res
}

// Text is the text content of a result, its text blocks joined.
func Text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
