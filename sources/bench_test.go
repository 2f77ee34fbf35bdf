package sources

import (
	"strings"
	"testing"
)

// BenchmarkRead reads one 64 KiB page of a 64 KiB file: open through the
// root, hash the whole file, keep the window.
func BenchmarkRead(b *testing.B) {
	content := strings.Repeat("0123456789abcdef", 4096) // 64 KiB
	reg, _ := onePool(b, map[string]string{"f.txt": content}, nil)
	c := bindAll(b, reg)
	b.SetBytes(int64(len(content)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Read("p", "f.txt", 0, 64<<10); err != nil {
			b.Fatal(err)
		}
	}
}
