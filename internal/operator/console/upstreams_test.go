package console

import (
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/internal/operator/operator"
	"github.com/airlock-dev/airlock/internal/policy/pinning"
)

// TestVisible: every character a reviewer could not see on the
// Upstreams page, or that reorders the text around it, becomes a marker;
// ordinary text (any script, emoji, newlines) is left alone.
func TestVisible(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Echoes back the message.", "Echoes back the message."},
		{"line one\n\tline two", "line one\n\tline two"},
		{"Grüße, 世界 🙂", "Grüße, 世界 🙂"},
		{"a\u200bb", "a⟦U+200B⟧b"},                         // zero-width space
		{"\u202egnp.exe", "⟦U+202E⟧gnp.exe"},               // bidi override
		{"x\U000E0041\U000E0042", "x⟦U+E0041⟧⟦U+E0042⟧"},   // tag characters
		{"nbsp\u00a0here", "nbsp⟦U+00A0⟧here"},             // a space that is not U+0020
		{"esc\x1b[31mred", "esc⟦U+001B⟧[31mred"},           // terminal escape
		{"cr\rhidden", "cr⟦U+000D⟧hidden"},                 // carriage return
		{"vs\ufe0f\U000e0100", "vs⟦U+FE0F⟧⟦U+E0100⟧"},      // variation selectors
		{"blank\u2800\u3164", "blank⟦U+2800⟧⟦U+3164⟧"},     // blank-looking letters
		{"bad\xff\xfeutf8", "bad⟦0xFF⟧⟦0xFE⟧utf8"},         // not UTF-8
		{"\ufeffbom", "⟦U+FEFF⟧bom"},                       // byte-order mark
		{"soft\u00adhyphen", "soft⟦U+00AD⟧hyphen"},         // soft hyphen
		{"joiner\u2060x\u2061", "joiner⟦U+2060⟧x⟦U+2061⟧"}, // word joiner, invisible operator
	} {
		if got := visible(tc.in); got != tc.want {
			t.Errorf("visible(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzVisible: the output is valid UTF-8, holds no character the page
// would hide (only printable runes, newline and tab), and keeps every
// printable character of the input.
func FuzzVisible(f *testing.F) {
	for _, s := range []string{"", "plain", "a\u200bb", "\u202e\u2066x", "\xff", "\U000E0041", "\ufe0f", "x\n\ty", "⟦U+200B⟧"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := visible(s)
		if !utf8.ValidString(out) {
			t.Fatalf("visible(%q) is not UTF-8", s)
		}
		for _, r := range out {
			if r != '\n' && r != '\t' && hidden(r) {
				t.Fatalf("visible(%q) = %q keeps %U", s, out, r)
			}
		}
		var kept strings.Builder
		for _, r := range s {
			if r != utf8.RuneError && (r == '\n' || r == '\t' || !hidden(r)) {
				kept.WriteRune(r)
			}
		}
		var shown strings.Builder
		for _, r := range out {
			shown.WriteRune(r)
		}
		if !containsInOrder(shown.String(), kept.String()) {
			t.Fatalf("visible(%q) = %q lost printable text %s", s, out, strconv.Quote(kept.String()))
		}
	})
}

// containsInOrder reports whether the runes of sub appear in s in order.
func containsInOrder(s, sub string) bool {
	rs := []rune(s)
	i := 0
	for _, r := range sub {
		for i < len(rs) && rs[i] != r {
			i++
		}
		if i == len(rs) {
			return false
		}
		i++
	}
	return true
}

// TestApprovalRefusalsShown: the approval's refusals reach the admin as
// what they are — a digest that is not one the review showed (a tampered
// form) is a 400 saying so, not an internal error (issue 24 item 6).
func TestApprovalRefusalsShown(t *testing.T) {
	c := &Console{log: slog.New(slog.DiscardHandler)}
	for _, tt := range []struct {
		err    error
		status int
		says   string
	}{
		{fmt.Errorf("up/echo: %w", pinning.ErrDigestSyntax), http.StatusBadRequest, "not a digest the review showed"},
		{fmt.Errorf("up/echo: %w", pinning.ErrStale), http.StatusConflict, "changed since this page showed it"},
		{fmt.Errorf("up/echo: %w", operator.ErrUnknownTool), http.StatusNotFound, "No such upstream tool"},
	} {
		status, msg := c.publicError(tt.err)
		if status != tt.status || !strings.Contains(msg, tt.says) {
			t.Errorf("%v: %d %q, want %d saying %q", tt.err, status, msg, tt.status, tt.says)
		}
	}
}
