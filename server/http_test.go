package server

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/testkit/mcptest"
)

const testToken = "test-token-0123456789"

func httpFixture(t *testing.T) (*fixture, *httptest.Server) {
	t.Helper()
	t.Setenv("AIRLOCK_TEST_TOKEN", testToken)
	f := newFixture(t, "local")
	ts := httptest.NewServer(f.srv.Handler())
	t.Cleanup(ts.Close)
	return f, ts
}

// mcpRequest is a raw request to the MCP endpoint url+PathStreamable
// with the headers a streamable HTTP client sends (JSON in; JSON or SSE
// out) and, unless auth is "", auth as its Authorization header.
func mcpRequest(t testing.TB, method, url string, body io.Reader, auth string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url+PathStreamable, body)
	must(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	return req
}

// roundTrip sends req with the default client and returns the response
// and its body, read to the end and closed.
func roundTrip(t testing.TB, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	return resp, b
}

func initialize(t *testing.T, c *client.Client) {
	t.Helper()
	mcptest.Connect(t, context.Background(), c, "airlock-http-test")
}

// bearerClient is an initialized streamable HTTP client of the server at
// base that presents token as its bearer credential.
func bearerClient(t *testing.T, base, token string, opts ...transport.StreamableHTTPCOption) *client.Client {
	t.Helper()
	return bearerClientHeaders(t, base, map[string]string{"Authorization": "Bearer " + token}, opts...)
}

// bearerClientHeaders is bearerClient with headers given whole.
func bearerClientHeaders(t *testing.T, base string, headers map[string]string, opts ...transport.StreamableHTTPCOption) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(base+PathStreamable, append([]transport.StreamableHTTPCOption{transport.WithHTTPHeaders(headers)}, opts...)...)
	must(t, err)
	initialize(t, c)
	return c
}

// sseBearerClient is bearerClient over the legacy SSE transport.
func sseBearerClient(t *testing.T, base, token string) *client.Client {
	t.Helper()
	c, err := client.NewSSEMCPClient(base+PathSSE, transport.WithHeaders(map[string]string{"Authorization": "Bearer " + token}))
	must(t, err)
	initialize(t, c)
	return c
}

func TestStreamableHTTPWithToken(t *testing.T) {
	f, ts := httpFixture(t)
	c := bearerClient(t, ts.URL, testToken)
	res := call(t, c, "read_pool_file", map[string]any{"pool": "alpha", "path": "hello.txt"})
	if res.IsError || text(res) != "hello, pool\n" {
		t.Fatalf("read over HTTP: %s", text(res))
	}
	// The agent role is bound to alpha only.
	if res := call(t, c, "read_pool_file", map[string]any{"pool": "beta", "path": "notes.md"}); code(res) != "POOL_NOT_SELECTED" {
		t.Fatalf("role binding not applied: %s", text(res))
	}
	recs := f.auditRecords(t)
	last := recs[len(recs)-1]
	if last.Principal != "agent/env:AIRLOCK_TEST_TOKEN" || last.Role != "agent" || last.Transport != "streamable-http" {
		t.Fatalf("attribution: %+v", last)
	}
}

func TestSSEWithToken(t *testing.T) {
	_, ts := httpFixture(t)
	c := sseBearerClient(t, ts.URL, testToken)
	res := call(t, c, "list_pools", nil)
	if res.IsError || !strings.Contains(text(res), "alpha") {
		t.Fatalf("list over SSE: %s", text(res))
	}
}

func TestHTTPRefusesMissingOrWrongToken(t *testing.T) {
	f, ts := httpFixture(t)
	for _, auth := range []string{"", "Bearer wrong-token", "Basic dXNlcjpwYXNz", "Bearer"} {
		resp, body := roundTrip(t, mcpRequest(t, http.MethodPost, ts.URL,
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`), auth))
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("auth %q: status %d", auth, resp.StatusCode)
		}
		if strings.Contains(string(body), testToken) {
			t.Fatal("token echoed")
		}
	}
	// One peer, two causes: "no bearer token" once (one record), "not
	// recognised" three times (a record at once, then one with the count 2).
	if records, total := f.edgeRefusals(t, violation.Unauthenticated); records != 3 || total != 4 {
		t.Fatalf("want 4 anonymous denials audited in 3 records, got %d in %d", total, records)
	}
}

// TestSessionsAreSeparate: two HTTP clients get two sessions, and the
// audit trail attributes each call to its own session and context.
func TestSessionsAreSeparate(t *testing.T) {
	f, ts := httpFixture(t)
	ids := map[string]bool{}
	for range 2 {
		call(t, bearerClient(t, ts.URL, testToken), "list_pools", nil)
	}
	for _, r := range f.auditRecords(t) {
		if r.Tool == "list_pools" {
			ids[r.SessionID+"/"+r.ContextID] = true
		}
	}
	if len(ids) != 2 {
		t.Fatalf("want 2 distinct sessions, got %v", ids)
	}
}
