package egress_test

import (
	"bufio"
	"fmt"
	"net/http"
	"strings"

	"github.com/airlock-dev/airlock/internal/execution/egress"
)

// ExampleParseTarget: what a sandboxed upstream's proxy request names, in
// the one form the proxy judges.
func ExampleParseTarget() {
	for _, head := range []string{
		"CONNECT API.Example.com:443 HTTP/1.1\r\n\r\n",
		"GET http://api.example.com/a/../b HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: api.example.com\r\n\r\n",
	} {
		req, _ := http.ReadRequest(bufio.NewReader(strings.NewReader(head)))
		p, err := egress.ParseTarget(req)
		if err != nil {
			fmt.Println("refused:", err)
			continue
		}
		fmt.Println(p.Target, p.Tunnel, p.URL)
	}
	// Output:
	// api.example.com:443 true <nil>
	// api.example.com:80 false http://api.example.com/b
	// refused: egress: malformed proxy request: only CONNECT or an absolute http:// URL
}
