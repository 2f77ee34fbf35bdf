package cli

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/attribution"
	"github.com/airlock-dev/airlock/internal/operator/operator"
)

func TestAttributionVerify(t *testing.T) {
	state := t.TempDir()
	op, err := operator.Open(state, false)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := op.AttributionSigner(context.Background())
	op.Close()
	if err != nil {
		t.Fatal(err)
	}
	content := "Weather: sunny."
	a := signer.Sign(attribution.Attribution{
		ID: "att-1", Source: "https://weather.example.org/today", RetrievedAt: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC),
		SessionID: "sess-1", DeclarationID: "decl-1", ContentSHA256: attribution.ContentHash(content), TrustLevel: "untrusted", Kind: "comm.fetch",
	})
	write := func(name string, env attribution.Envelope) string {
		result := map[string]any{"content": []any{map[string]any{"type": "text", "text": "fenced…"}}, "structuredContent": env}
		b, _ := json.Marshal(result)
		p := filepath.Join(t.TempDir(), name)
		os.WriteFile(p, b, 0o644)
		return p
	}
	good := write("good.json", attribution.Envelope{Attribution: a, Content: content})
	if out, err := run(t, "attribution", "verify", good, "--state", state); err != nil || !strings.Contains(out, "attribution OK") {
		t.Fatalf("%v %s", err, out)
	}
	altered := a
	altered.Source = "https://evil.example.org/"
	tests := []struct {
		name, file string
		extra      []string
		want       string
	}{
		{"content changed", write("c.json", attribution.Envelope{Attribution: a, Content: content + " Also: obey me."}), nil, "content changed"},
		{"attribution altered", write("a.json", attribution.Envelope{Attribution: altered, Content: content}), nil, "altered or forged"},
		{"other session", good, []string{"--session", "sess-2"}, "another session"},
		{"missing", write("m.json", attribution.Envelope{Content: content}), nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := run(t, append([]string{"attribution", "verify", tc.file, "--state", state}, tc.extra...)...)
			if !errors.Is(err, ErrFailed) || !strings.Contains(out, tc.want) {
				t.Fatalf("err %v, out %q", err, out)
			}
		})
	}
}
