package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-dev/airlock/internal/execution/runner"
	"github.com/airlock-dev/airlock/internal/execution/toolkit"
	"github.com/airlock-dev/airlock/internal/testkit/testpool"
)

// marshalLine is what mcp-go's stdio server writes for a result.
func marshalLine(t *testing.T, res *mcp.CallToolResult) []byte {
	t.Helper()
	b, err := json.Marshal(mcp.JSONRPCResponse{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(7)), Result: res})
	must(t, err)
	return fmt.Appendf(nil, "%s\n", b)
}

// bigFileFixture is a fixture whose pages are page bytes (max_read_bytes and
// max_output_bytes), serving pool alpha's big.bin: size random bytes.
func bigFileFixture(t *testing.T, page, size int) (*fixture, []byte) {
	t.Helper()
	cfg := strings.Replace(fmt.Sprintf(testConfig, "local"), "max_read_bytes: 4096\n  max_output_bytes: 16384",
		fmt.Sprintf("max_read_bytes: %d\n  max_output_bytes: %d", page, page), 1)
	f := newFixtureConfig(t, cfg)
	data := randomBytes(size)
	testpool.WriteFile(t, filepath.Join(f.dir, "pools", "alpha"), "big.bin", string(data))
	appendManifest(t, filepath.Join(f.dir, "pools", "alpha"), "big.bin", string(data))
	return f.withRunner(t, runner.Options{}, nil), data // a runner that loads the manifest with big.bin
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// TestStdioBlobSpliceMatchesMarshal: what the line writer sends for an
// answer with placeholders is byte for byte what mcp-go would have written
// with the blobs inline — whatever the blobs' sizes (base64 padding), how
// many, and when too many pages are pending to take a placeholder.
func TestStdioBlobSpliceMatchesMarshal(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sizes   []int
		pending int // placeholders registered and never written, first
	}{
		{"one page", []int{512 << 10}, 0},
		{"padding 1", []int{1000}, 0},
		{"padding 2", []int{1001}, 0},
		{"empty", []int{0}, 0},
		{"two blobs", []int{3000, 70000}, 0},
		{"bound reached: inline", []int{4096}, maxPendingBlobs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := &runner.Response{Text: "a page \"quoted\" <tag>", Structured: map[string]any{"eof": false, "offset": 3}}
			for i, n := range tc.sizes {
				resp.Blobs = append(resp.Blobs, toolkit.Blob{URI: fmt.Sprintf("airlock://pool/p/b%d.bin", i), MIMEType: "application/octet-stream", Data: randomBytes(n), Trust: "trusted"})
			}
			spliceMatchesInline(t, resp, tc.pending, func(line []byte) {
				if tc.pending == 0 && bytes.Contains(line, []byte(base64.StdEncoding.EncodeToString(resp.Blobs[0].Data[:min(len(resp.Blobs[0].Data), 300)]))) && len(resp.Blobs[0].Data) > 0 {
					t.Fatal("the blob was marshalled inline, not spliced")
				}
			})
		})
	}
}

// TestStdioTextSpliceMatchesMarshal: a long text answer spliced into its
// line is byte for byte what mcp-go would have written with the text
// inline — whatever it holds (quotes, HTML, control characters, U+2028,
// invalid UTF-8, a token-like string), beside a blob, and inline when it is
// short or too many placeholders are pending.
func TestStdioTextSpliceMatchesMarshal(t *testing.T) {
	long := func(s string) string { return strings.Repeat(s, minSplicedText/len(s)+1) }
	for _, tc := range []struct {
		name    string
		text    string
		blob    bool
		pending int
		spliced bool
	}{
		{"ascii", long("region,quarter,units\n"), false, 0, true},
		{"quotes and backslashes", long(`a "b" \c\ `), false, 0, true},
		{"html", long("<script>&amp;</script>"), false, 0, true},
		{"control characters", long("\x00\x01\t\n\r\x1f\x7f"), false, 0, true},
		{"line separators", long("a\u2028b\u2029c"), false, 0, true},
		{"invalid utf-8", long("ok\xff\xfe\xc3("), false, 0, true},
		{"multi-byte", long("grüße 日本 🙂 "), false, 0, true},
		{"spells a token", long(blobTokenPrefix + strings.Repeat("a", 32)), false, 0, true},
		{"beside a blob", long("text "), true, 0, true},
		{"short: inline", "a short answer <b>", false, 0, false},
		{"bound reached: inline", long("x"), false, maxPendingBlobs, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := &runner.Response{Text: tc.text, Structured: map[string]any{"eof": true}}
			if tc.blob {
				resp.Blobs = []toolkit.Blob{{URI: "airlock://pool/p/b.bin", MIMEType: "application/octet-stream", Data: randomBytes(3000), Trust: "trusted"}}
			}
			spliceMatchesInline(t, resp, tc.pending, func(line []byte) {
				if spliced := len(line) < len(tc.text); spliced != tc.spliced {
					t.Fatalf("text spliced: %v, want %v (%d-byte line for a %d-byte text)", spliced, tc.spliced, len(line), len(tc.text))
				}
			})
		})
	}
}

// spliceMatchesInline checks that resp's line with placeholders, written
// through a line writer (buffered as on stdio, and not, as over HTTP) with
// pending placeholders already waiting, is byte for byte the inline line;
// check sees the line with its placeholders first.
func spliceMatchesInline(t *testing.T, resp *runner.Response, pending int, check func(line []byte)) {
	t.Helper()
	want := marshalLine(t, toResult(nil, resp))
	for _, buffered := range []bool{true, false} {
		var out bytes.Buffer
		w := &lineWriter{w: &out, blobs: blobSplicer{buffered: buffered}}
		for range pending {
			if _, ok := w.blobs.placeholder([]byte("never written")); !ok {
				t.Fatal("placeholder refused below the bound")
			}
		}
		line := marshalLine(t, toResult(&w.blobs, resp))
		check(line)
		if n, err := w.Write(line); err != nil || n != len(line) {
			t.Fatalf("Write = %d, %v; want %d", n, err, len(line))
		}
		if !bytes.Equal(out.Bytes(), want) {
			t.Fatalf("buffered %v: spliced line differs from mcp-go's (%d vs %d bytes): %.300s", buffered, out.Len(), len(want), out.Bytes())
		}
	}
}

// TestStdioBlobTokenInContentVerbatim (hostile): content that spells a
// placeholder — an unknown token, the prefix cut short, even a token that
// was already written — passes verbatim; only a token pending for a page is
// replaced, and only once.
func TestStdioBlobTokenInContentVerbatim(t *testing.T) {
	var out bytes.Buffer
	w := &lineWriter{w: &out}
	page := []byte("page bytes")
	token, ok := w.blobs.placeholder(page)
	if !ok {
		t.Fatal("placeholder refused")
	}
	forged := blobTokenPrefix + strings.Repeat("0", 32)
	for _, msg := range []string{
		`{"text":"` + forged + `"}` + "\n",
		`{"text":"` + token[:len(token)-1] + "\n", // the prefix and 31 digits at the end
		`{"text":"` + blobTokenPrefix + "\n",
		`{"text":"` + strings.ToUpper(token) + `"}` + "\n",
	} {
		out.Reset()
		must(t, errorOf(w.Write([]byte(msg))))
		if out.String() != msg {
			t.Fatalf("%q written as %q", msg, out.String())
		}
	}
	out.Reset()
	msg := `{"a":"` + forged + `","blob":"` + token + `","again":"` + token + `"}` + "\n"
	must(t, errorOf(w.Write([]byte(msg))))
	want := `{"a":"` + forged + `","blob":"` + base64.StdEncoding.EncodeToString(page) + `","again":"` + token + `"}` + "\n"
	if out.String() != want {
		t.Fatalf("got %q, want %q", out.String(), want)
	}
	out.Reset()
	must(t, errorOf(w.Write([]byte(msg)))) // the token was written: no page behind it now
	if out.String() != msg {
		t.Fatalf("a written token was replaced again: %q", out.String())
	}
}

func errorOf(_ int, err error) error { return err }

// TestStdioPageNotReencoded: a 512 KiB binary page read over ServeStdio
// costs the server about the page, not the four page-sized buffers
// mcp-go's encoding made of it (the base64 string, the escaped result, the
// compacted message, Fprintf's copy: ~5 MiB, issue 27), and arrives intact.
// Memory, not time: the allocation count is the same on a loaded machine.
func TestStdioPageNotReencoded(t *testing.T) {
	const page = 512 << 10
	f, data := bigFileFixture(t, page, 4*page)
	p := startStdioInitialized(t, f)
	read := func(id int, offset int64) (line []byte, allocated uint64) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		p.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"read_pool_file","arguments":{"pool":"alpha","path":"big.bin","offset":%d,"limit":%d}}}`, id, offset, page))
		got := make(chan []byte, 1)
		go func() { l, _ := p.out.ReadSlice('\n'); got <- l }() // ReadSlice: the reader's own buffer, no allocation
		select {
		case line = <-got:
		case <-time.After(time.Minute):
			t.Fatal("no reply")
		}
		runtime.ReadMemStats(&after)
		return line, after.TotalAlloc - before.TotalAlloc
	}
	read(2, 0) // the whole-file check, once
	line, allocated := read(3, page)
	var msg struct {
		Result mcp.CallToolResult `json:"result"`
	}
	must(t, json.Unmarshal(line, &msg))
	if len(msg.Result.Content) < 2 {
		t.Fatalf("no blob: %.400s", line)
	}
	blob := msg.Result.Content[1].(mcp.EmbeddedResource).Resource.(mcp.BlobResourceContents).Blob
	if got, err := base64.StdEncoding.DecodeString(blob); err != nil || !bytes.Equal(got, data[page:2*page]) {
		t.Fatalf("page at %d: %d bytes, %v; not the file's", page, len(got), err)
	}
	t.Logf("%d bytes allocated for a %d-byte page", allocated, page)
	if allocated > 2*page {
		t.Fatalf("%d bytes allocated for a %d-byte page, want at most %d: the page is re-encoded", allocated, page, 2*page)
	}
}

// TestStdioPagesInFlight: pages read concurrently over one stdio
// connection (a bulk reader keeping requests in flight) each arrive with
// their own bytes — placeholders pending side by side are each replaced in
// their own answer.
func TestStdioPagesInFlight(t *testing.T) {
	const page, pages = 20 << 10, 24
	f, data := bigFileFixture(t, page, pages*page)
	c := stdioPipeClient(t, f)
	errs := make(chan error, pages)
	for i := range pages {
		go func() {
			req := mcp.CallToolRequest{}
			req.Params.Name = "read_pool_file"
			req.Params.Arguments = map[string]any{"pool": "alpha", "path": "big.bin", "offset": i * page, "limit": page}
			res, err := c.CallTool(context.Background(), req)
			if err != nil || res.IsError || len(res.Content) < 2 {
				errs <- fmt.Errorf("page %d: %v %+v", i, err, res)
				return
			}
			blob := res.Content[1].(mcp.EmbeddedResource).Resource.(mcp.BlobResourceContents).Blob
			got, err := base64.StdEncoding.DecodeString(blob)
			if err != nil || !bytes.Equal(got, data[i*page:(i+1)*page]) {
				errs <- fmt.Errorf("page %d: %d bytes, %v: not the file's", i, len(got), err)
				return
			}
			errs <- nil
		}()
	}
	for range pages {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
