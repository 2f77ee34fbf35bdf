// Command airlock is an MCP server that stands between an AI agent and the
// world: every tool call crosses one audited boundary. See README.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/airlock-dev/airlock/cli"
	"github.com/airlock-dev/airlock/internal/execution/sandbox"
)

func main() {
	// When re-executed as the sandbox trampoline, confine and exec the
	// pipeline; this never returns in that case.
	sandbox.MaybeRunTrampoline()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := cli.Run(ctx, os.Args[1:], cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	stop()
	if err != nil && !cli.Reported(err) {
		fmt.Fprintln(os.Stderr, "airlock:", err)
	}
	os.Exit(cli.ExitCode(err))
}
