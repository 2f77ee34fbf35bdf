// Command plainmcp serves [plainmcp.New] over stdio, or over streamable
// HTTP at /mcp with --http ADDR (it prints "listening on http://ADDR/mcp"
// to stderr once it accepts connections). It is a benchmark baseline
// (internal/testkit/benchpeers), not part of Airlock.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/mark3labs/mcp-go/server"

	"github.com/airlock-dev/airlock/internal/testkit/plainmcp"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		slog.Error("plainmcp", "err", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("plainmcp", flag.ContinueOnError)
	addr := fs.String("http", "", "serve streamable HTTP on this address instead of stdio")
	file := fs.String("file", "", "the file read_pool_file returns")
	if err := fs.Parse(args); err != nil {
		return err
	}
	s, err := plainmcp.New(*file)
	if err != nil {
		return err
	}
	if *addr == "" {
		return server.ServeStdio(s)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "listening on http://%s/mcp\n", ln.Addr())
	mux := http.NewServeMux()
	mux.Handle("/mcp", server.NewStreamableHTTPServer(s))
	hs := &http.Server{Handler: mux}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { <-ctx.Done(); hs.Close() }()
	if err := hs.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}
