package redact

import (
	"regexp"
	"strings"
	"testing"
)

// The patterns the matchers replace, kept here as their oracle.
var (
	keyPattern   = regexp.MustCompile(`(?i)(pass(word|wd|phrase)?|secret|token|api[_-]?key|apikey|auth(orization)?|cookie|credential|private[_-]?key|session[_-]?key|signature)`)
	valuePattern = regexp.MustCompile(`(?i)^(bearer|basic)\s+\S+|-----BEGIN [A-Z ]*PRIVATE KEY-----|\b(sk|pk|rk)[-_](live|test|proj)?[-_]?[A-Za-z0-9]{16,}|\bAKIA[0-9A-Z]{16}\b|\bgh[pousr]_[A-Za-z0-9]{30,}|\bxox[abpr]-[A-Za-z0-9-]{10,}|\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.`)
)

var matcherSeeds = []string{
	"password", "PassPhrase", "paſsword", "user", "X-Api-Key", "api_key", "apikey", "apiKey", "Authorization", "author",
	"private-key", "privatekey", "session_key", "signature", "cookie", "credentials", "token", "tokenizer", "pool", "path",
	"Bearer abc", "bearer ", "basic\tx", "Basic", "bearer  \t", "-----BEGIN RSA PRIVATE KEY-----", "-----begin private key-----",
	"-----BEGIN  PRIVATE KEY-----", "-----BEGIN PRIVATE KEY----", "-----BEGIN ENCRYPTED PRIVATE KEY-----x",
	"sk_live_" + strings.Repeat("a", 16), "sk_test_abc", "pk-" + strings.Repeat("Z", 16), "rk_proj-" + strings.Repeat("9", 16),
	"xsk_live_" + strings.Repeat("a", 16), "_sk_" + strings.Repeat("a", 16), "sk__" + strings.Repeat("a", 16), "ſK_" + strings.Repeat("a", 16),
	"aſk_" + strings.Repeat("a", 16), "AKIA" + strings.Repeat("A", 16), "AKIA" + strings.Repeat("A", 17), "akia" + strings.Repeat("1", 16) + "-",
	"AKIA" + strings.Repeat("A", 15) + "K", "ghp_" + strings.Repeat("x", 30), "ghs_" + strings.Repeat("x", 29), "ghſ_" + strings.Repeat("x", 30),
	"xoxb-1234567890", "xoxp-123456789", "xoxa--------------", "eyJhbGciOi.eyJzdWIiOi.sig", "eyJ12345678.12345678.", "eyJ1234567.12345678.",
	"see https://x/?token=eyJabcdefgh.ijklmnopq.", "\xff\xfeAKIA" + strings.Repeat("B", 16), "", "k", "sk_", "-----BEGIN ",
}

func TestMatchersAgreeWithRegexp(t *testing.T) {
	for _, s := range matcherSeeds {
		if got, want := sensitiveKey(s), keyPattern.MatchString(s); got != want {
			t.Errorf("sensitiveKey(%q) = %v, the pattern says %v", s, got, want)
		}
		if got, want := secretValue(s), valuePattern.MatchString(s); got != want {
			t.Errorf("secretValue(%q) = %v, the pattern says %v", s, got, want)
		}
	}
}

// FuzzMatchersAgreeWithRegexp: the hand-written matchers decide exactly
// what the patterns would, on any input.
func FuzzMatchersAgreeWithRegexp(f *testing.F) {
	for _, s := range matcherSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := sensitiveKey(s), keyPattern.MatchString(s); got != want {
			t.Fatalf("sensitiveKey(%q) = %v, the pattern says %v", s, got, want)
		}
		if got, want := secretValue(s), valuePattern.MatchString(s); got != want {
			t.Fatalf("secretValue(%q) = %v, the pattern says %v", s, got, want)
		}
	})
}

func BenchmarkMatchers(b *testing.B) {
	inputs := []string{"pool", "path", "data/rows.csv", "https://example.com/reports/2026/q3.html", "The user asked for the quarterly figures."}
	b.Run("handwritten", func(b *testing.B) {
		for b.Loop() {
			for _, s := range inputs {
				_ = sensitiveKey(s) || secretValue(s)
			}
		}
	})
	b.Run("regexp", func(b *testing.B) {
		for b.Loop() {
			for _, s := range inputs {
				_ = keyPattern.MatchString(s) || valuePattern.MatchString(s)
			}
		}
	})
}
