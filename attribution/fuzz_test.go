package attribution

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzVerifyEnvelope feeds hostile JSON, seeded with genuine envelopes in
// every form and their near misses. Nothing panics, and VerifyEnvelope
// succeeds only for the record the key signed, with its content: the
// fuzzer may reformat the JSON but cannot make a new record verify.
func FuzzVerifyEnvelope(f *testing.F) {
	s := testSigner(f)
	bare, tool, rpc := signedEnvelope(f)
	for _, seed := range []string{
		string(bare), tool, rpc, "", "null", "{}", `{"attribution":null}`, `{"structuredContent":{}}`,
		strings.Replace(string(bare), "fenced", "fenceD", 1), strings.Replace(string(bare), `"kind"`, `"Kind"`, 1),
		strings.TrimSuffix(string(bare), "}") + `,"content":"x"}`,
	} {
		f.Add([]byte(seed), "sess-1")
	}
	want := testSigner(f).Sign(testAttribution()) // RetrievedAt already UTC
	f.Fuzz(func(t *testing.T, data []byte, session string) {
		env, err := s.VerifyEnvelope(data, session)
		if err != nil {
			if env != nil {
				t.Fatal("envelope returned with an error")
			}
			return
		}
		got := env.Attribution
		got.RetrievedAt = got.RetrievedAt.UTC()
		if got != want || env.Content != string(testContent) || session != want.SessionID {
			t.Fatalf("verified a record the key never signed: %+v %q (session %q)", env.Attribution, env.Content, session)
		}
	})
}

// FuzzParseEnvelope: whatever ParseEnvelope accepts survives re-encoding
// unchanged, so the record it returns is the only reading of the data.
func FuzzParseEnvelope(f *testing.F) {
	bare, tool, rpc := signedEnvelope(f)
	for _, seed := range []string{string(bare), tool, rpc, `{"attribution":{"id":"x","retrieved_at":"2026-01-01T00:00:00+02:00"},"content":""}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		env, err := ParseEnvelope(data)
		if err != nil {
			return
		}
		again, err := json.Marshal(env)
		if err != nil {
			return // a time outside years 0-9999 parses but cannot be marshalled
		}
		env2, err := ParseEnvelope(again)
		if err != nil {
			t.Fatalf("re-encoded envelope does not parse: %v\n%s", err, again)
		}
		a, b := env.Attribution, env2.Attribution
		if !a.RetrievedAt.Equal(b.RetrievedAt) {
			t.Fatalf("time changed: %v vs %v", a.RetrievedAt, b.RetrievedAt)
		}
		a.RetrievedAt, b.RetrievedAt = a.RetrievedAt.UTC(), b.RetrievedAt.UTC()
		if a != b || env.Content != env2.Content {
			t.Fatalf("round trip changed the envelope: %+v vs %+v", env, env2)
		}
	})
}
