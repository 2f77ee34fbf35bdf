// Package plainmcp is the ungoverned baseline of `make bench` (issue 11):
// a plain mcp-go server with one tool of the same name and shape as
// Airlock's read_pool_file, which returns one file's bytes as text and
// nothing else — no policy, no audit, no fence, no limits.
//
// It exists only to be measured against (internal/testkit/benchpeers) and is never
// part of bin/airlock (TestPlainMCPNotShipped in the repository root). It
// serves exactly one file, named when it starts: the pool and path
// arguments are accepted and ignored, so the agent-facing shape matches
// Airlock's while the work is the least a server can do.
package plainmcp

import (
	"context"
	"fmt"
	"os"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// New returns a server whose read_pool_file returns file's bytes, read
// once here. The server's name is "plainmcp".
func New(file string) (*server.MCPServer, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("plainmcp: %w", err)
	}
	text := string(b)
	s := server.NewMCPServer("plainmcp", "1", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("read_pool_file",
		mcp.WithDescription("Return the file's bytes (ungoverned baseline)."),
		mcp.WithString("pool", mcp.Required()),
		mcp.WithString("path", mcp.Required()),
	), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(text), nil
	})
	return s, nil
}
