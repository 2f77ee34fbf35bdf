package calllog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/kit/calllog"
)

func TestHandlerAddsTheCallID(t *testing.T) {
	id := calllog.NewID()
	if !regexp.MustCompile(`^c_[0-9a-f]{16}$`).MatchString(id) || id == calllog.NewID() {
		t.Fatalf("NewID = %q: want c_ and 16 fresh hex digits", id)
	}
	ctx := calllog.WithID(context.Background(), id)
	tests := []struct {
		name string
		log  func(*slog.Logger)
		want string // the call attribute expected, "" for none
	}{
		{"with the call's context", func(l *slog.Logger) { l.InfoContext(ctx, "x") }, id},
		{"through a child logger", func(l *slog.Logger) { l.With("k", "v").WarnContext(ctx, "x") }, id},
		{"without a context", func(l *slog.Logger) { l.Info("x") }, ""},
		{"another context", func(l *slog.Logger) { l.InfoContext(context.Background(), "x") }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			// Wrapped twice: the id must still appear once.
			h := calllog.Handler(calllog.Handler(slog.NewJSONHandler(&buf, nil)))
			tt.log(slog.New(h))
			if n := strings.Count(buf.String(), `"call"`); n > 1 {
				t.Fatalf("call attribute %d times: %s", n, buf.String())
			}
			var line map[string]any
			if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
				t.Fatal(err)
			}
			got, _ := line[calllog.Key].(string)
			if got != tt.want {
				t.Fatalf("call = %q, want %q (%s)", got, tt.want, buf.String())
			}
		})
	}
}
