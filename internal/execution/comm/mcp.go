package comm

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-dev/airlock/internal/kit/strictjson"
	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// The MCP client's sentinel errors (comm.mcp, issue 15). [MCPViolation]
// maps them to the agent's codes.
var (
	// ErrMCPUnavailable: the upstream could not be reached, would not
	// start, broke the protocol or went away.
	ErrMCPUnavailable = errors.New("upstream MCP server unavailable")
	// ErrMCPTimeout: the upstream did not answer in time.
	ErrMCPTimeout = errors.New("upstream MCP server timed out")
	// ErrMCPTooLarge: the upstream sent more than the session's byte cap.
	ErrMCPTooLarge = errors.New("upstream MCP answer too large")
	// ErrMCPSessionEnded: an HTTP upstream no longer knows the session
	// (it answered 404): the request was not handled, and a new session
	// may be initialized and the request sent again.
	ErrMCPSessionEnded = errors.New("upstream MCP session ended by the server")
)

// MCPConn says how to reach one upstream MCP server: either URL (streamable
// HTTP) or In/Out (the stdio pipes of a process the caller started, in the
// sandbox).
type MCPConn struct {
	// URL of a streamable HTTP server; Headers go with every request
	// (credentials the operator configured, never the agent's token).
	URL     string
	Headers map[string]string
	// AllowPrivate are the address ranges the HTTP connection may reach
	// although private or loopback (comm.fetch.allow_private); every
	// other such address is refused when connecting, as for comm.fetch.
	AllowPrivate []netip.Prefix
	// Rules, if set, also judge every address connected to (the policy's
	// deny_hosts for IPs).
	Rules IPRules
	// Resolver resolves host names; default net.DefaultResolver.
	Resolver Resolver

	// In and Out are a stdio server's stdout and stdin.
	In  io.Reader
	Out io.WriteCloser

	// MaxBytes caps everything read from the upstream in this session
	// (listing and answer): a hostile upstream cannot exhaust memory. A
	// warm session's cap is per request ([MCPSession.Refill]).
	MaxBytes int64

	// OnNotify, if set, is called with the method of every notification
	// the upstream sends (notifications/tools/list_changed), on the
	// transport's reading goroutine: over stdio in the order the upstream
	// wrote them, so one written before an answer is seen before the
	// answer is returned.
	OnNotify func(method string)
}

// MCPSession is one initialized connection to an upstream. Not safe for
// concurrent use beyond what the transport allows; one call uses one.
type MCPSession struct {
	t           transport.Interface
	budget      *byteBudget
	max         int64
	id          atomic.Int64
	listChanged bool
}

// ListChanged reports whether the upstream declared, when the session
// was initialized, that it announces changes of its tool list
// (capabilities.tools.listChanged).
func (s *MCPSession) ListChanged() bool { return s.listChanged }

// Refill gives the session its whole byte cap again: a warm session's
// cap bounds each request (its listing and answer), not its lifetime.
func (s *MCPSession) Refill() {
	s.budget.mu.Lock()
	s.budget.left, s.budget.over = s.max, false
	s.budget.mu.Unlock()
}

// mcpProtocolVersion is offered in initialize: the newest revision with the
// initialize handshake, which the npm servers speak.
const mcpProtocolVersion = mcp.ProtocolVersion20250618

// DialMCP connects and runs the initialize handshake. The client declares
// no capabilities (no sampling, no roots, no elicitation): an upstream can
// ask Airlock for nothing.
func DialMCP(ctx context.Context, c MCPConn) (*MCPSession, error) {
	if c.MaxBytes <= 0 {
		return nil, errors.New("comm: MCPConn.MaxBytes is required")
	}
	b := &byteBudget{left: c.MaxBytes}
	var t transport.Interface
	switch {
	case c.URL != "":
		ht, err := transport.NewStreamableHTTP(c.URL, transport.WithHTTPBasicClient(guardedHTTPClient(c, b)))
		if err != nil {
			return nil, mcpErr(ErrMCPUnavailable, "the upstream URL cannot be used", err)
		}
		t = ht
	case c.In != nil && c.Out != nil:
		t = transport.NewIO(&budgetReader{r: c.In, b: b}, c.Out, nil)
	default:
		return nil, errors.New("comm: MCPConn needs a URL or In and Out")
	}
	s := &MCPSession{t: t, budget: b, max: c.MaxBytes}
	if c.OnNotify != nil {
		t.SetNotificationHandler(func(n mcp.JSONRPCNotification) { c.OnNotify(n.Method) })
	}
	if err := t.Start(ctx); err != nil {
		return nil, s.fail(ctx, "starting the connection", err)
	}
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
		Capabilities    struct {
			Tools *struct {
				ListChanged bool `json:"listChanged"`
			} `json:"tools"`
		} `json:"capabilities"`
	}
	params := map[string]any{
		"protocolVersion": mcpProtocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "airlock", "version": "1"},
	}
	if err := s.request(ctx, "initialize", params, &init); err != nil {
		t.Close()
		return nil, err
	}
	s.listChanged = init.Capabilities.Tools != nil && init.Capabilities.Tools.ListChanged
	if hc, ok := t.(transport.HTTPConnection); ok && init.ProtocolVersion != "" {
		hc.SetProtocolVersion(init.ProtocolVersion)
	}
	if err := t.SendNotification(ctx, mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{Method: "notifications/initialized"}}); err != nil {
		t.Close()
		return nil, s.fail(ctx, "initialized notification", err)
	}
	return s, nil
}

// Close ends the session.
func (s *MCPSession) Close() error { return s.t.Close() }

// maxListPages bounds tools/list pagination (a server that never stops
// handing out cursors).
const maxListPages = 32

// ListTools returns the upstream's tool definitions exactly as listed (the
// schemas as raw JSON, for pinning), all pages.
func (s *MCPSession) ListTools(ctx context.Context) ([]MCPTool, error) {
	var out []MCPTool
	cursor := ""
	for page := 0; ; page++ {
		if page == maxListPages {
			return nil, mcpErr(ErrMCPUnavailable, "the upstream's tool list does not end", nil)
		}
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		var res struct {
			Tools []struct {
				Name         string          `json:"name"`
				Description  string          `json:"description"`
				InputSchema  json.RawMessage `json:"inputSchema"`
				OutputSchema json.RawMessage `json:"outputSchema"`
			} `json:"tools"`
			NextCursor string `json:"nextCursor"`
		}
		if err := s.request(ctx, "tools/list", params, &res); err != nil {
			return nil, err
		}
		for _, t := range res.Tools {
			out = append(out, MCPTool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema, OutputSchema: t.OutputSchema})
		}
		if res.NextCursor == "" {
			return out, nil
		}
		cursor = res.NextCursor
	}
}

// MCPTool is one tool as the upstream lists it (what package pinning pins).
type MCPTool struct {
	Name         string
	Description  string
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
}

// MCPResult is an upstream tool's answer: untrusted text, to be fenced.
type MCPResult struct {
	Text string
	// IsError: the tool (or the upstream, with a JSON-RPC error) reported
	// an error; Text is its message.
	IsError bool
	// Omitted counts content blocks that are not text (images, audio,
	// binary resources); they are not passed on.
	Omitted int
}

// CallTool calls one tool with arguments (a JSON object).
func (s *MCPSession) CallTool(ctx context.Context, name string, args json.RawMessage) (*MCPResult, error) {
	var res struct {
		Content []struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			Resource *struct {
				URI  string `json:"uri"`
				Text string `json:"text"`
			} `json:"resource"`
		} `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	}
	err := s.request(ctx, "tools/call", map[string]any{"name": name, "arguments": args}, &res)
	var rpc *rpcError
	if errors.As(err, &rpc) {
		return &MCPResult{Text: rpc.msg, IsError: true}, nil
	}
	if err != nil {
		return nil, err
	}
	out := &MCPResult{IsError: res.IsError}
	var parts []string
	for _, c := range res.Content {
		switch {
		case c.Type == "text":
			parts = append(parts, c.Text)
		case c.Type == "resource" && c.Resource != nil && c.Resource.Text != "":
			parts = append(parts, c.Resource.Text)
		default:
			out.Omitted++
		}
	}
	if len(parts) == 0 && len(bytes.TrimSpace(res.StructuredContent)) > 0 && !bytes.Equal(bytes.TrimSpace(res.StructuredContent), []byte("null")) {
		parts = append(parts, string(res.StructuredContent))
	}
	out.Text = strings.Join(parts, "\n")
	return out, nil
}

// rpcError is a JSON-RPC error the upstream answered with; its message is
// the upstream's text (untrusted).
type rpcError struct {
	code int
	msg  string
}

func (e *rpcError) Error() string { return fmt.Sprintf("upstream JSON-RPC error %d", e.code) }

// maxMessageDepth bounds JSON nesting in what an upstream sends.
const maxMessageDepth = 128

func (s *MCPSession) request(ctx context.Context, method string, params any, out any) error {
	id := s.id.Add(1)
	resp, err := s.t.SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(id), Method: method, Params: params})
	if err != nil {
		return s.fail(ctx, method, err)
	}
	if resp.Error != nil {
		return &rpcError{code: resp.Error.Code, msg: resp.Error.Message}
	}
	// Strict: duplicate keys, depth (two readers, one answer).
	if err := strictjson.Check(resp.Result, maxMessageDepth); err != nil {
		return mcpErr(ErrMCPUnavailable, "the upstream's answer to "+method+" is not strict JSON", err)
	}
	if err := json.Unmarshal(resp.Result, out); err != nil {
		return mcpErr(ErrMCPUnavailable, "the upstream's answer to "+method+" has the wrong shape", err)
	}
	return nil
}

// fail classifies a transport error: the byte cap, the deadline, or the
// upstream being unavailable.
func (s *MCPSession) fail(ctx context.Context, what string, err error) error {
	switch {
	case errors.Is(err, transport.ErrSessionTerminated):
		return mcpErr(ErrMCPSessionEnded, "the upstream ended the session", err)
	case s.budget.exceeded() || errors.Is(err, ErrMCPTooLarge):
		return mcpErr(ErrMCPTooLarge, "the upstream sent more than max_result_bytes", err)
	case errors.Is(context.Cause(ctx), ErrMCPTimeout) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrMCPTimeout):
		return mcpErr(ErrMCPTimeout, "the upstream did not answer in time", err)
	case ctx.Err() != nil:
		return mcpErr(ErrMCPUnavailable, "the call was cancelled", errors.Join(ctx.Err(), err))
	}
	return mcpErr(ErrMCPUnavailable, "the upstream failed during "+what, err)
}

// MCPError is a refusal from the MCP client: Msg is agent-safe (it never
// holds the upstream's own text, which comes back fenced), Err private.
type MCPError struct {
	Kind error
	Msg  string
	Err  error
}

func (e *MCPError) Error() string {
	if e.Err != nil {
		return e.Kind.Error() + ": " + e.Msg + ": " + e.Err.Error()
	}
	return e.Kind.Error() + ": " + e.Msg
}

// Unwrap exposes the kind and the cause to errors.Is/As.
func (e *MCPError) Unwrap() []error { return []error{e.Kind, e.Err} }

func mcpErr(kind error, msg string, cause error) *MCPError {
	return &MCPError{Kind: kind, Msg: msg, Err: cause}
}

// MCPViolation maps an MCP client error to what the agent sees:
// UPSTREAM_TIMEOUT, UPSTREAM_RESULT_TOO_LARGE, else UPSTREAM_UNAVAILABLE.
func MCPViolation(upstream string, err error) *violation.Error {
	var e *MCPError
	msg := "the upstream failed"
	if errors.As(err, &e) {
		msg = e.Msg
	}
	switch {
	case errors.Is(err, ErrMCPTooLarge):
		return violation.Wrap(violation.UpstreamResultTooLarge, err, "upstream %q: %s", upstream, msg)
	case errors.Is(err, ErrMCPTimeout):
		return violation.Wrap(violation.UpstreamTimeout, err, "upstream %q: %s", upstream, msg)
	}
	return violation.Wrap(violation.UpstreamUnavailable, err, "upstream %q: %s", upstream, msg)
}

// byteBudget is the session's cap on bytes read from the upstream.
type byteBudget struct {
	mu   sync.Mutex
	left int64
	over bool
}

func (b *byteBudget) take(n int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.left -= int64(n)
	if b.left < 0 {
		b.over = true
		return ErrMCPTooLarge
	}
	return nil
}

func (b *byteBudget) exceeded() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.over
}

// budgetReader charges what it reads to the budget and fails once it is
// spent (the transport then closes: nothing more is read).
type budgetReader struct {
	r io.Reader
	b *byteBudget
}

func (r *budgetReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		if berr := r.b.take(n); berr != nil {
			return 0, berr
		}
	}
	return n, err
}

// budgetBody is budgetReader for an HTTP body.
type budgetBody struct {
	budgetReader
	c io.Closer
}

func (b *budgetBody) Close() error { return b.c.Close() }

// budgetTransport sets the configured headers on every request (the
// session's DELETE too, which the SDK sends without its own header
// options) and wraps every response body in the session's budget.
type budgetTransport struct {
	rt      http.RoundTripper
	b       *byteBudget
	headers map[string]string
}

func (t *budgetTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		req = req.Clone(req.Context())
		for k, v := range t.headers {
			req.Header.Set(k, v)
		}
	}
	resp, err := t.rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &budgetBody{budgetReader: budgetReader{r: resp.Body, b: t.b}, c: resp.Body}
	return resp, nil
}

// guardedHTTPClient is comm.fetch's protection for an HTTP upstream: every
// connection passes the connect-time address check (private, loopback,
// link-local, metadata ranges refused unless allow_private names them,
// and the policy's IP rules), no proxy from the environment, no
// redirects followed (a redirect could take the session's headers
// elsewhere), TLS 1.2 or later.
func guardedHTTPClient(c MCPConn, b *byteBudget) *http.Client {
	g := &guard{rules: c.Rules}
	for _, p := range c.AllowPrivate {
		if p.IsValid() {
			g.allow = append(g.allow, p.Masked())
		}
	}
	var res Resolver = net.DefaultResolver
	if c.Resolver != nil {
		res = c.Resolver
	}
	d := newDialer(res, g)
	return &http.Client{
		Transport: &budgetTransport{b: b, headers: c.Headers, rt: &http.Transport{
			Proxy:                  nil,
			DialContext:            d.DialContext,
			TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12},
			TLSHandshakeTimeout:    10 * time.Second,
			MaxResponseHeaderBytes: 256 << 10,
			IdleConnTimeout:        30 * time.Second,
		}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
