package wire

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCheck(t *testing.T) {
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	bigMethod := `{"jsonrpc":"2.0","id":1,"method":"` + strings.Repeat("m", 50000) + `"}`
	cases := []struct {
		name, msg string
		want      error // nil = accepted
		code      int
	}{
		{"request", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_pools","arguments":{}}}`, nil, 0},
		{"string id", `{"jsonrpc":"2.0","id":"a-1","method":"ping"}`, nil, 0},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil, 0},
		{"response", `{"jsonrpc":"2.0","id":7,"result":{}}`, nil, 0},
		{"error response", `{"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"no"}}`, nil, 0},
		{"unknown method passes", `{"jsonrpc":"2.0","id":1,"method":"x/y","params":{"a":[1,2]}}`, nil, 0},
		{"progress meta", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":"t"}}}`, nil, 0},
		// Removed by 2026-07-28: passed on for the MCP library's -32601
		// (404), not refused for the params they used to take.
		{"removed setLevel, 2026-07-28", `{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, nil, 0},
		{"removed subscribe, 2026-07-28", `{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, nil, 0},
		{"removed unsubscribe, 2026-07-28", `{"jsonrpc":"2.0","id":1,"method":"resources/unsubscribe","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, nil, 0},
		{"removed initialize, 2026-07-28", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":5,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, nil, 0},

		{"garbage", "\x00\x01\xff binary", ErrNotJSON, CodeParseError},
		{"truncated", `{"jsonrpc":"2.0","id":1,`, ErrNotJSON, CodeParseError},
		{"trailing", `{"jsonrpc":"2.0","id":1,"method":"ping"} {}`, ErrNotJSON, CodeParseError},
		{"deep", deep, ErrTooDeep, CodeInvalidRequest},
		// mcp-go could not decode it and answered unaudited (FuzzRawMessage).
		{"number past a float64", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_pools","arguments":{"offset":1e309}}}`, ErrNumberRange, CodeInvalidRequest},
		{"batch", `[` + strings.TrimSuffix(strings.Repeat(`{"jsonrpc":"2.0","id":1,"method":"ping"},`, 1000), ",") + `]`, ErrBatch, CodeInvalidRequest},
		{"duplicate in envelope", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_pools","name":"run_pipeline"}}`, ErrDuplicateKey, CodeInvalidRequest},
		{"duplicate in arguments", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_pool_file","arguments":{"path":"../x","path":"ok.txt"}}}`, ErrDuplicateKey, CodeInvalidRequest},
		{"duplicate method", `{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call"}`, ErrDuplicateKey, CodeInvalidRequest},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, ErrEnvelope, CodeInvalidRequest},
		{"array id", `{"jsonrpc":"2.0","id":[1],"method":"ping"}`, ErrEnvelope, CodeInvalidRequest},
		{"fraction id", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, ErrEnvelope, CodeInvalidRequest},
		{"null id request", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, ErrEnvelope, CodeInvalidRequest},
		{"wrong version", `{"jsonrpc":"1.0","id":1,"method":"ping"}`, ErrEnvelope, CodeInvalidRequest},
		{"no version", `{"id":1,"method":"ping"}`, ErrEnvelope, CodeInvalidRequest},
		{"scalar", `42`, ErrEnvelope, CodeInvalidRequest},
		{"method not string", `{"jsonrpc":"2.0","id":1,"method":5}`, ErrEnvelope, CodeInvalidRequest},
		{"huge method", bigMethod, ErrEnvelope, CodeInvalidRequest},
		{"method and result", `{"jsonrpc":"2.0","id":1,"method":"ping","result":{}}`, ErrEnvelope, CodeInvalidRequest},
		{"neither", `{"jsonrpc":"2.0","id":1}`, ErrEnvelope, CodeInvalidRequest},
		{"array params", `{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}`, ErrParams, CodeInvalidParams},
		{"name not string", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}`, ErrParams, CodeInvalidParams},
		{"name missing", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`, ErrParams, CodeInvalidParams},
		{"no params but required", `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, ErrParams, CodeInvalidParams},
		{"arguments not object", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":"a"}}`, ErrParams, CodeInvalidParams},
		{"meta not object", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":1}}`, ErrParams, CodeInvalidParams},
		{"progress token object", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"progressToken":{}}}}`, ErrParams, CodeInvalidParams},
		// The removed methods keep their checks in the revisions that have
		// them, and a 2026-07-28 _meta exempts nothing else.
		{"setLevel without level, 2025-11-25", `{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}`, ErrParams, CodeInvalidParams},
		{"setLevel without level, no version", `{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{}}`, ErrParams, CodeInvalidParams},
		{"setLevel, version not a string", `{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":20260728}}}`, ErrParams, CodeInvalidParams},
		{"tools/call without name, 2026-07-28", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, ErrParams, CodeInvalidParams},
		{"removed method, bad progress token", `{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":{}}}}`, ErrParams, CodeInvalidParams},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Check([]byte(tc.msg))
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			var we *Error
			if !errors.As(err, &we) || we.Code != tc.code {
				t.Fatalf("code = %+v, want %d", we, tc.code)
			}
			assertPlain(t, we.Message)
		})
	}
}

// assertPlain: a refusal message is short and names no Go type.
func assertPlain(t *testing.T, msg string) {
	t.Helper()
	if len(msg) > 300 {
		t.Errorf("message is %d bytes; refusals are bounded", len(msg))
	}
	for _, leak := range []string{"Go struct", "json:", "map[", "interface", "float64", "[]"} {
		if strings.Contains(msg, leak) {
			t.Errorf("message %q shows %q", msg, leak)
		}
	}
}

func TestCheckKeepsTheID(t *testing.T) {
	_, err := Check([]byte(`{"jsonrpc":"2.0","id":"k","method":"tools/call","params":{"name":1}}`))
	var we *Error
	if !errors.As(err, &we) || string(we.ID) != `"k"` {
		t.Fatalf("id not kept for the answer: %+v", we)
	}
	m, err := Check([]byte(`{"jsonrpc":"2.0","id":3,"method":"ping"}`))
	if err != nil || string(m.ID) != "3" || m.Method != "ping" {
		t.Fatalf("Check = %+v, %v", m, err)
	}
}

func TestDuplicateKeyNamesOnlyAShortKey(t *testing.T) {
	long := strings.Repeat("k", 5000)
	_, err := Check([]byte(`{"jsonrpc":"2.0","id":1,"method":"x","params":{"` + long + `":1,"` + long + `":2}}`))
	if err == nil || strings.Contains(err.Error(), long[:100]) {
		t.Fatalf("long key echoed: %v", err)
	}
	_, err = Check([]byte(`{"jsonrpc":"2.0","id":1,"method":"x","params":{"path":1,"path":2}}`))
	if err == nil || !strings.Contains(err.Error(), `"path"`) {
		t.Fatalf("short key not named: %v", err)
	}
}

func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_pools","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":"x","result":{}}`, `[{"jsonrpc":"2.0"}]`, `{"a":1,"a":2}`, `{"jsonrpc":"2.0","id":{},"method":"m"}`,
		"\xff", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":2}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		m, err := Check(msg)
		if err != nil {
			var we *Error
			if !errors.As(err, &we) {
				t.Fatalf("untyped refusal %v", err)
			}
			if len(we.Message) > 300 || !utf8.ValidString(we.Message) {
				t.Fatalf("unbounded or invalid message %q", we.Message)
			}
			if we.ID != nil && kindOf(we.ID) != kindString && kindOf(we.ID) != kindNumber {
				t.Fatalf("non-scalar id kept: %s", we.ID)
			}
			return
		}
		// Accepted: every reader sees one object with a scalar id.
		var v map[string]any
		if json.Unmarshal(msg, &v) != nil {
			t.Fatalf("accepted a message encoding/json cannot read: %q", msg)
		}
		if m.ID != nil && kindOf(m.ID) != kindString && kindOf(m.ID) != kindNumber {
			t.Fatalf("non-scalar id accepted: %s", m.ID)
		}
	})
}

// TestCheckReadsWhatTheGateRoutesBy: Check hands the HTTP session gate the
// protocol version in _meta, a resources/read's uri, a tools/call's tool
// name and an initialize's elicitation capability, so the gate never
// decodes the body again.
func TestCheckReadsWhatTheGateRoutesBy(t *testing.T) {
	const modern = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	cases := []struct {
		name, msg string
		want      Message
	}{
		{"modern read", `{"jsonrpc":"2.0","id":"r","method":"resources/read","params":{"uri":"airlock://p/f",` + modern + `}}`,
			Message{ID: json.RawMessage(`"r"`), Method: "resources/read", URI: "airlock://p/f", MetaVersion: "2026-07-28"}},
		{"version not a string", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":7}}}`,
			Message{ID: json.RawMessage(`1`), Method: "tools/list"}},
		{"removed method, modern", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{` + modern + `}}`,
			Message{ID: json.RawMessage(`1`), Method: "ping", MetaVersion: "2026-07-28"}},
		{"initialize with elicitation", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{"elicitation":{}}}}`,
			Message{ID: json.RawMessage(`1`), Method: "initialize", Elicitation: true}},
		{"initialize, elicitation null", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{"elicitation":null}}}`,
			Message{ID: json.RawMessage(`1`), Method: "initialize"}},
		{"uri of another method ignored", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","uri":"u"}}`,
			Message{ID: json.RawMessage(`1`), Method: "tools/call", Name: "x"}},
		{"tool name escaped", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_pool\u005ffile"}}`,
			Message{ID: json.RawMessage(`1`), Method: "tools/call", Name: "read_pool_file"}},
		{"name of another method ignored", `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"p"}}`,
			Message{ID: json.RawMessage(`1`), Method: "prompts/get"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Check([]byte(tc.msg))
			if err != nil || string(got.ID) != string(tc.want.ID) || got.Method != tc.want.Method || got.URI != tc.want.URI ||
				got.MetaVersion != tc.want.MetaVersion || got.Elicitation != tc.want.Elicitation || got.Name != tc.want.Name {
				t.Fatalf("Check = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// TestCheckIDOutlivesTheBuffer: the id Check returns is a copy; stdio
// reads its next line into the same buffer.
func TestCheckIDOutlivesTheBuffer(t *testing.T) {
	buf := []byte(`{"jsonrpc":"2.0","id":"abc","method":"ping"}`)
	m, err := Check(buf)
	if err != nil {
		t.Fatal(err)
	}
	copy(buf, strings.Repeat("x", len(buf)))
	if string(m.ID) != `"abc"` {
		t.Fatalf("id %q after the buffer was reused", m.ID)
	}
}

// TestCheckAllocations: checking a governed read's tools/call decodes the
// message in place, not into copies of each member (issue 27: the body was
// decoded three times over, a copy per member each time). The bound fails
// the code before the cut (43 allocations; 31 after, on Go 1.26).
func TestCheckAllocations(t *testing.T) {
	msg := []byte(`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"read_pool_file",` +
		`"arguments":{"pool":"alpha","path":"hello.txt"},"_meta":{"progressToken":3}}}`)
	allocs := testing.AllocsPerRun(50, func() {
		if _, err := Check(msg); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 34 {
		t.Errorf("Check of a tools/call: %v allocations, want at most 34", allocs)
	}
}

// BenchmarkCheck: the strict check of one governed read's tools/call.
func BenchmarkCheck(b *testing.B) {
	msg := []byte(`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"read_pool_file",` +
		`"arguments":{"pool":"alpha","path":"hello.txt"},"_meta":{"progressToken":3}}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Check(msg); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzDecodeString: the direct path reads a string exactly as
// encoding/json (which the MCP library uses) does, or not at all — a
// method or protocol version the gate routes by is the one mcp-go sees.
func FuzzDecodeString(f *testing.F) {
	for _, s := range []string{`"tools/call"`, `"a\"b"`, `"\u0074ools/call"`, "\"\xff\"", `"`, `""`, `7`, ` "x" `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return // Check decodes only what strictjson accepted
		}
		got, ok := decodeString(raw)
		var want string
		wantOK := json.Unmarshal(raw, &want) == nil && kindOf(raw) == kindString
		if ok != wantOK || got != want {
			t.Fatalf("decodeString(%q) = %q, %v; encoding/json: %q, %v", raw, got, ok, want, wantOK)
		}
	})
}
