// Command mcpprobe is a stdio MCP server for the sandboxed-upstream tests:
// its one tool, probe, tries to reach the network and to read a path, and
// reports what happened. Run inside Airlock's sandbox, every attempt must
// fail.
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	s := server.NewMCPServer("mcpprobe", "1", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("probe", mcp.WithDescription("Tries to connect to addr and to read path; reports the outcome."),
		mcp.WithString("addr", mcp.Required()), mcp.WithString("path", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var out strings.Builder
			c, err := net.DialTimeout("tcp", req.GetString("addr", ""), 2*time.Second)
			if err == nil {
				c.Write([]byte("leak"))
				c.Close()
				out.WriteString("dial: CONNECTED\n")
			} else {
				fmt.Fprintf(&out, "dial: refused (%v)\n", err)
			}
			if _, err := os.ReadDir(req.GetString("path", "")); err == nil {
				out.WriteString("read: LISTED\n")
			} else {
				fmt.Fprintf(&out, "read: refused (%v)\n", err)
			}
			fmt.Fprintf(&out, "env: %s\n", strings.Join(os.Environ(), " "))
			return mcp.NewToolResultText(out.String()), nil
		})
	if err := server.ServeStdio(s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
