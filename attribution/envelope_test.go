package attribution

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// signedEnvelope returns a genuine envelope as JSON, and the three forms
// VerifyEnvelope reads.
func signedEnvelope(t testing.TB) (env []byte, toolResult, rpc string) {
	t.Helper()
	a := testSigner(t).Sign(testAttribution())
	b, err := json.Marshal(Envelope{Attribution: a, Content: string(testContent)})
	if err != nil {
		t.Fatal(err)
	}
	toolResult = `{"content":[{"type":"text","text":"fenced text"}],"structuredContent":` + string(b) + `,"isError":false}`
	rpc = `{"jsonrpc":"2.0","id":7,"result":` + toolResult + `}`
	return b, toolResult, rpc
}

func TestVerifyEnvelope(t *testing.T) {
	s := testSigner(t)
	bare, tool, rpc := signedEnvelope(t)
	b := string(bare)
	tests := []struct {
		name string
		data string
		want error
	}{
		{"bare envelope", b, nil},
		{"tool result", tool, nil},
		{"json-rpc response", rpc, nil},
		{"extra envelope fields", strings.Replace(tool, `"content":"the`, `"untrusted":true,"content":"the`, 1), nil},
		{"whitespace", "\n " + strings.ReplaceAll(b, `":`, "\" :\n\t") + "\n", nil},

		{"content changed", strings.Replace(b, "fenced page", "fenced pages", 1), ErrContentMismatch},
		{"source changed", strings.Replace(b, "example.com", "example.org", 1), ErrBadSignature},
		{"time changed", strings.Replace(b, "10:30:00.123456789Z", "10:30:01.123456789Z", 1), ErrBadSignature},
		{"signature removed", strings.Replace(b, `"signature":"hmac`, `"signaturX":"hmac`, 1), ErrMalformed},
		{"signature emptied", strings.Split(b, `"signature":"`)[0] + `"signature":""},"content":"the fenced page content"}`, ErrMissing},
		{"attribution null", `{"attribution":null,"content":"x"}`, ErrMissing},
		{"no attribution", `{"content":[{"type":"text","text":"plain result"}]}`, ErrMissing},
		{"rpc error", `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"x"}}`, ErrMissing},

		{"duplicate content key", strings.TrimSuffix(b, "}") + `,"content":"evil"}`, ErrMalformed},
		{"duplicate nested key", strings.Replace(b, `"kind":`, `"kind":"x","kind":`, 1), ErrMalformed},
		{"case-variant envelope key", strings.TrimSuffix(b, "}") + `,"Content":"evil"}`, ErrMalformed},
		{"case-variant attribution key", strings.Replace(b, `"source":`, `"Source":`, 1), ErrMalformed},
		{"unknown attribution field", strings.Replace(b, `"kind":`, `"admin":"yes","kind":`, 1), ErrMalformed},
		{"field not a string", strings.Replace(b, `"trust_level":"untrusted"`, `"trust_level":1`, 1), ErrMalformed},
		{"field null", strings.Replace(b, `"trust_level":"untrusted"`, `"trust_level":null`, 1), ErrMalformed},
		{"bad time", strings.Replace(b, "2026-01-31T", "2026-13-31T", 1), ErrMalformed},
		{"content not a string", `{"attribution":{"id":"x"},"content":["x"]}`, ErrMalformed},
		{"content missing", `{"attribution":{"id":"x"}}`, ErrMalformed},
		{"attribution not an object", `{"attribution":"x","content":"y"}`, ErrMalformed},
		{"both forms", `{"attribution":{},"content":"x","structuredContent":` + b + `}`, ErrMalformed},
		{"trailing data", b + `{}`, ErrMalformed},
		{"not json", `attribution`, ErrMalformed},
		{"array", `[` + b + `]`, ErrMalformed},
		{"empty", ``, ErrMalformed},
		{"deep nesting", strings.Repeat(`{"a":`, 100) + `1` + strings.Repeat(`}`, 100), ErrMalformed},
		{"structuredContent null", `{"structuredContent":null}`, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, err := s.VerifyEnvelope([]byte(tt.data), "sess-1")
			if tt.want == nil {
				if err != nil || env == nil || env.Content != string(testContent) {
					t.Fatalf("VerifyEnvelope = %+v, %v; want the envelope", env, err)
				}
				return
			}
			if !errors.Is(err, tt.want) || env != nil {
				t.Fatalf("VerifyEnvelope = %+v, %v; want %v", env, err, tt.want)
			}
		})
	}
	if _, err := s.VerifyEnvelope(bare, "sess-2"); !errors.Is(err, ErrWrongSession) {
		t.Fatalf("other session: %v, want ErrWrongSession", err)
	}
}
