package sources

import (
	"testing"
)

// TestPageAllocations: building a page's result costs the result and its
// hex digest, one allocation each; the digest is encoded on the stack, not
// in a []byte copied to a string (issue 27: garbage per governed read).
func TestPageAllocations(t *testing.T) {
	reg, _ := onePool(t, map[string]string{"hello.txt": "hello, world\n"}, nil)
	c := bindAll(t, reg)
	p := c.bound["p"]
	data := []byte("hello, world\n")
	want := sum("hello, world\n")
	res := c.page(p, "hello.txt", want, data, 0, int64(len(data)), false)
	if res.SHA256 != hexSum("hello, world\n") {
		t.Fatalf("sha256 %q, want %q", res.SHA256, hexSum("hello, world\n"))
	}
	mimeType("hello.txt", false) // the mime table loads once
	if allocs := testing.AllocsPerRun(50, func() { c.page(p, "hello.txt", want, data, 0, int64(len(data)), false) }); allocs > 2 {
		t.Errorf("page: %v allocations, want at most 2 (the result, its digest)", allocs)
	}
}
