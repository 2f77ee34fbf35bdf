package store

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// TestHexSHANoCopy: hashing a label's text must not copy it to a []byte
// first (a page of content per call was copied only to be hashed; issue
// 27). The one allocation left is the hex string itself.
func TestHexSHANoCopy(t *testing.T) {
	for _, n := range []int{0, 10, 4096, 64 << 10} {
		s := strings.Repeat("a", n)
		sum := sha256.Sum256([]byte(s))
		if got, want := hexSHA(s), hex.EncodeToString(sum[:]); got != want {
			t.Fatalf("hexSHA(%d bytes) = %s, want %s", n, got, want)
		}
		if allocs := testing.AllocsPerRun(20, func() { _ = hexSHA(s) }); allocs > 1 {
			t.Errorf("hexSHA of %d bytes: %v allocations, want at most 1 (the hex string)", n, allocs)
		}
	}
}
