package server

import (
	"context"
	"io"
	"log"

	mcpserver "github.com/mark3labs/mcp-go/server"
)

// ServeStdio serves one client over in/out until ctx ends or in closes.
// Stdout carries only the protocol; diagnostics go to the logger.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer, errLog io.Writer) error {
	stdio := mcpserver.NewStdioServer(s.mcp)
	stdio.SetErrorLogger(log.New(errLog, "airlock stdio: ", log.LstdFlags))
	return stdio.Listen(ctx, in, out)
}
