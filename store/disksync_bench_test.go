package store_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkDiskSync is the floor under every durable commit, measured on
// the file system the tests' stores live on (internal: no store, no
// SQLite): a write of n 4 KiB pages then fsync, as SQLite's WAL does per
// commit. "append" grows the file each time (a new WAL, or one growing
// past its largest size so far: the file system also journals the new
// size and blocks); "overwrite" writes within blocks already on disk (a
// WAL that started over after a checkpoint: the steady state). Issue 23
// and 27's targets are judged against it (BENCHMARKS.md).
func BenchmarkDiskSync(b *testing.B) {
	for _, mode := range []string{"append", "overwrite"} {
		for _, pages := range []int{2, 10} {
			b.Run(fmt.Sprintf("%s/pages=%d", mode, pages), func(b *testing.B) {
				buf := make([]byte, pages<<12)
				f, err := os.Create(filepath.Join(b.TempDir(), "wal"))
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				if mode == "overwrite" {
					zero := make([]byte, 1<<20)
					for written := 0; written < (b.N+1)*len(buf); written += len(zero) {
						if _, err := f.Write(zero); err != nil {
							b.Fatal(err)
						}
					}
					if err := f.Sync(); err != nil {
						b.Fatal(err)
					}
				}
				b.ResetTimer()
				for i := range b.N {
					if _, err := f.WriteAt(buf, int64(i*len(buf))); err != nil {
						b.Fatal(err)
					}
					if err := f.Sync(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
