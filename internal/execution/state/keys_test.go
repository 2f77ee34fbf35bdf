package state

import (
	"strings"
	"testing"
)

// TestContextHandle: a handle names its context only under the key that
// signed it; an edited id, another key, a foreign prefix or an oversized
// handle names none.
func TestContextHandle(t *testing.T) {
	key, other := []byte("k1"), []byte("k2")
	h := ContextHandle(key, "ctx_a")
	if id, ok := ContextOfHandle(key, h); !ok || id != "ctx_a" {
		t.Fatalf("ContextOfHandle(own handle) = %q, %v", id, ok)
	}
	for name, bad := range map[string]string{
		"other key": ContextHandle(other, "ctx_a"),
		"edited id": strings.Replace(h, "ctx_a", "ctx_b", 1),
		"no prefix": strings.TrimPrefix(h, handlePrefix),
		"no mac":    handlePrefix + "ctx_a",
		"oversized": ContextHandle(key, strings.Repeat("x", 300)),
		"empty":     "",
	} {
		if id, ok := ContextOfHandle(key, bad); ok {
			t.Errorf("%s: ContextOfHandle = %q, accepted", name, id)
		}
	}
}
