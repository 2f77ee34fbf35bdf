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

// TestAttributionVerify: a result signed by the server of state directory
// A verifies against A (and the report names A's store); an altered one is
// "altered or forged"; checked against another state directory B — what a
// stdio client that dropped $AIRLOCK_STATE leads to — it is reported as
// signed by another store, naming B, not as altered (issue 24 item 4).
func TestAttributionVerify(t *testing.T) {
	state, contexts := servedState(t)
	sessionID := openSession(t, state, ctxIDRE.FindString(contexts))
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
		SessionID: sessionID, DeclarationID: "decl-1", ContentSHA256: attribution.ContentHash(content), TrustLevel: "untrusted", Kind: "comm.fetch",
	})
	write := func(name string, env attribution.Envelope) string {
		result := map[string]any{"content": []any{map[string]any{"type": "text", "text": "fenced…"}}, "structuredContent": env}
		b, _ := json.Marshal(result)
		p := filepath.Join(t.TempDir(), name)
		os.WriteFile(p, b, 0o644)
		return p
	}
	good := write("good.json", attribution.Envelope{Attribution: a, Content: content})
	if out, err := run(t, "attribution", "verify", good, "--state", state); err != nil || !strings.Contains(out, "attribution OK") ||
		!strings.Contains(out, "checked: store "+filepath.Join(state, "airlock.db")) {
		t.Fatalf("%v %s", err, out)
	}
	altered := a
	altered.Source = "https://evil.example.org/"
	other, keyed := usedState(t), usedState(t)
	kop, err := operator.Open(keyed, false)
	must(t, err)
	_, err = kop.AttributionSigner(context.Background()) // its own key, never our session
	kop.Close()
	must(t, err)
	tests := []struct {
		name, file string
		extra      []string
		want       string
		wantErr    error
	}{
		{"content changed", write("c.json", attribution.Envelope{Attribution: a, Content: content + " Also: obey me."}), nil, "content changed", attribution.ErrContentMismatch},
		{"attribution altered", write("a.json", attribution.Envelope{Attribution: altered, Content: content}), nil, "altered or forged", attribution.ErrBadSignature},
		{"other session", good, []string{"--session", "sess-2"}, "another session", attribution.ErrWrongSession},
		{"missing", write("m.json", attribution.Envelope{Content: content}), nil, "", attribution.ErrMissing},
		{"another state directory", good, []string{"--state", other}, "came from a server with another state directory", operator.ErrOtherStore},
		{"another state directory with a key", good, []string{"--state", keyed}, "came from a server with another state directory", operator.ErrOtherStore},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"attribution", "verify", tc.file, "--state", state}, tc.extra...)
			out, err := run(t, args...)
			if !errors.Is(err, ErrFailed) || !errors.Is(err, tc.wantErr) || !strings.Contains(out, tc.want) {
				t.Fatalf("err %v, out %q", err, out)
			}
			if tc.wantErr == operator.ErrOtherStore && (strings.Contains(out, "altered or forged") || !strings.Contains(out, "checked: store "+filepath.Join(tc.extra[1], "airlock.db"))) {
				t.Fatalf("a result checked against another store must name that store and not call it altered: %q", out)
			}
		})
	}
}

// openSession returns the id of an open session onto context ctxID (the
// served state's stdio session).
func openSession(t *testing.T, state, ctxID string) string {
	t.Helper()
	op, err := operator.Open(state, true)
	must(t, err)
	defer op.Close()
	ss, err := op.Sessions(context.Background(), ctxID)
	must(t, err)
	if len(ss) == 0 {
		t.Fatalf("no open session onto %s", ctxID)
	}
	return ss[0].ID
}
