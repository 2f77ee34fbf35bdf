// Command mcpprobe is a stdio MCP server for the sandboxed-upstream tests:
// its one tool, probe, tries to reach the network and to read a path, and
// reports what happened. Run inside Airlock's sandbox, every attempt must
// fail. With url, it also fetches that URL through the proxy its
// environment names (HTTPS_PROXY / HTTP_PROXY: the upstream's egress) and
// reports the status and body, or the refusal.
package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	s := server.NewMCPServer("mcpprobe", "1", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("probe", mcp.WithDescription("Tries to connect to addr and to read path; reports the outcome."),
		mcp.WithString("addr", mcp.Required()), mcp.WithString("path", mcp.Required()), mcp.WithString("url")),
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
			if u := req.GetString("url", ""); u != "" {
				fetch(&out, u)
			}
			fmt.Fprintf(&out, "env: %s\n", strings.Join(os.Environ(), " "))
			return mcp.NewToolResultText(out.String()), nil
		})
	if err := server.ServeStdio(s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// fetch GETs u through the environment's proxy. The test's TLS server has
// a self-signed certificate; what is tested is where the bytes may go, so
// the probe does not verify it.
func fetch(out *strings.Builder, u string) {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		Proxy:           http.ProxyFromEnvironment,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	}}
	resp, err := c.Get(u)
	if err != nil {
		fmt.Fprintf(out, "fetch: refused (%v)\n", err)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	fmt.Fprintf(out, "fetch: %d %s\n", resp.StatusCode, b)
}
