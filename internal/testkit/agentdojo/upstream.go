package agentdojo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Expected is one call the current scenario expects, with its answer.
type Expected struct {
	Function string
	Args     string // canonical JSON
	Result   string
	// Injected marks a call of the injection task (the attacker's).
	Injected bool
}

// Received is one call the upstream was sent.
type Received struct {
	Function string `json:"function"`
	Args     string `json:"args"`
	// Matched is the index of the expected call it answered, -1 for none.
	Matched  int  `json:"matched"`
	Injected bool `json:"injected,omitempty"`
}

// Upstream is a fake MCP server for one suite: it lists the suite's tools
// as given and answers each call with the next matching expected call of
// the scenario the harness set. It stands in for the world: what reaches
// it is what Airlock let through.
type Upstream struct {
	suite *Suite
	url   string
	http  *http.Server
	ln    net.Listener

	mu       sync.Mutex
	scenario string
	expected []Expected
	used     []bool
	received []Received
}

// injectedAnswer is the answer to an attacker's call: the export has no
// recorded result for them, and a short success is what a real service
// would say.
const injectedAnswer = `{"status": "done"}`

// StartUpstream serves s's tools over streamable HTTP on 127.0.0.1:0 (path
// /mcp) until ctx ends or Close is called.
func StartUpstream(s *Suite) (*Upstream, error) {
	u := &Upstream{suite: s}
	ms := server.NewMCPServer("agentdojo-"+s.Name, "1.0.0", server.WithToolCapabilities(false))
	for _, t := range s.Tools {
		name := t.Name
		ms.AddTool(mcp.NewToolWithRawSchema(t.Name, t.Description, t.InputSchema), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return u.call(name, req.GetRawArguments()), nil
		})
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h := server.NewStreamableHTTPServer(ms, server.WithEndpointPath("/mcp"))
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	u.ln = ln
	u.url = "http://" + ln.Addr().String() + "/mcp"
	u.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := u.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Printf("agentdojo: upstream %s: %v\n", s.Name, err)
		}
	}()
	return u, nil
}

// URL is the server's streamable HTTP endpoint.
func (u *Upstream) URL() string { return u.url }

// Close stops the server.
func (u *Upstream) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return u.http.Shutdown(ctx)
}

// SetScenario is the harness's side channel: the calls the next replay
// will make, in order, and their answers. It forgets what was received.
func (u *Upstream) SetScenario(name string, calls []Expected) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.scenario, u.expected, u.used, u.received = name, calls, make([]bool, len(calls)), nil
}

// Received is every call sent since the scenario was set.
func (u *Upstream) Received() []Received {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]Received(nil), u.received...)
}

// call answers one tool call: the first expected call not answered yet
// with the same function and canonical arguments, else a tool error.
func (u *Upstream) call(function string, raw any) *mcp.CallToolResult {
	b, err := json.Marshal(raw)
	args := ""
	if err == nil {
		args, err = canonicalJSON(b)
	}
	if raw == nil {
		args = "{}"
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	rec := Received{Function: function, Args: args, Matched: -1}
	if err == nil {
		for i, e := range u.expected {
			if !u.used[i] && e.Function == function && e.Args == args {
				u.used[i], rec.Matched, rec.Injected = true, i, e.Injected
				u.received = append(u.received, rec)
				return mcp.NewToolResultText(e.Result)
			}
		}
	}
	u.received = append(u.received, rec)
	return mcp.NewToolResultError(fmt.Sprintf("agentdojo %s: scenario %q expects no call %s(%s)", u.suite.Name, u.scenario, function, args))
}
