package fence

import "testing"

func TestTextualMIME(t *testing.T) {
	tests := []struct {
		mt   string
		want bool
	}{
		{"text/plain; charset=utf-8", true},
		{"text/markdown", true},
		{"application/json", true},
		{"application/ld+json", true},
		{"image/svg+xml", true},
		{"application/xml", true},
		{"application/x-yaml", true},
		{"application/javascript", true},
		{"not a media type", true}, // fails closed
		{"", true},
		{"image/png", false},
		{"application/octet-stream", false},
		{"application/pdf", false},
		{"application/zip", false},
		{"audio/mpeg", false},
	}
	for _, tt := range tests {
		if got := TextualMIME(tt.mt); got != tt.want {
			t.Errorf("TextualMIME(%q) = %v, want %v", tt.mt, got, tt.want)
		}
	}
}
