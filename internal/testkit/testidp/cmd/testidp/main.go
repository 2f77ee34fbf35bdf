// Command testidp runs internal/testkit/testidp's OpenID Provider on loopback for
// the e2e suite: `testidp -clients clients.json` prints the issuer URL on
// its first line of stdout and serves until SIGTERM or SIGINT. A test
// helper, never shipped with airlock.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/airlock-dev/airlock/internal/testkit/testidp"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "testidp:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("testidp", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "loopback address to listen on")
	clientsFile := fs.String("clients", "", "JSON file: [{id, secret, audience, groups, lifetime_ns, opaque}]")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var clients []testidp.Client
	if *clientsFile != "" {
		b, err := os.ReadFile(*clientsFile)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &clients); err != nil {
			return fmt.Errorf("%s: %w", *clientsFile, err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	idp, err := testidp.Start(ln, clients)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, idp.Issuer)
	<-ctx.Done()
	return idp.Close()
}
