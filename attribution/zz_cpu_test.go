package attribution_test

import (
	"crypto/sha256"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/attribution"
	"github.com/airlock-dev/airlock/fence"
)

func threadCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(1, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestZZCPU(t *testing.T) {
	runtime.LockOSThread()
	s, _ := attribution.NewSigner(make([]byte, 32))
	content := benchContent()
	for name, fn := range map[string]func(){
		"sha256": func() { sha256.Sum256(content) },
		"signverify": func() { a := s.Sign(benchRecord(content)); s.Verify(a, content, "sess-1") },
		"wrap":       func() { fence.Wrap(content, fence.Meta{Source: "s", Kind: "k"}) },
		"fence+attr": func() {
			f, _ := fence.Wrap(content, fence.Meta{Source: "s", Kind: "k"})
			a := benchRecord(nil)
			a.ContentSHA256 = attribution.ContentHash(f.Content)
			s.Sign(a)
		},
	} {
		best := time.Hour
		for rep := 0; rep < 7; rep++ {
			c0 := threadCPU()
			for i := 0; i < 20; i++ {
				fn()
			}
			if d := threadCPU() - c0; d < best {
				best = d
			}
		}
		t.Logf("%-12s %7.1f MiB/s (thread cpu)", name, 20/best.Seconds())
	}
}
