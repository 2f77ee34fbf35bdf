package sources

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/testkit/testpool"
)

// TestSymlinkSwapRace swaps symlinks inside the pool between an inside
// target and an outside secret while reads run. Every read must return the
// inside content or PATH_OUTSIDE_POOLS. An INTEGRITY_FAILURE would mean the
// outside file was opened and only the hash check caught it, so it fails
// the test too: the root, not the hash, must stop the escape.
func TestSymlinkSwapRace(t *testing.T) {
	const inside = "inside content"
	base := t.TempDir()
	pool := filepath.Join(base, "pool")
	testpool.WriteFile(t, base, "secret.txt", secretMarker)
	testpool.WriteFile(t, base, "outdir/f", secretMarker)
	testpool.WriteFile(t, pool, "inside.txt", inside)
	testpool.WriteFile(t, pool, "realdir/f", inside)
	mklink(t, "inside.txt", filepath.Join(pool, "link"))
	mklink(t, "realdir", filepath.Join(pool, "dlink"))
	writeSums(t, filepath.Join(pool, DefaultManifestName), map[string]string{"link": inside, "dlink/f": inside})
	reg, err := OpenRegistry([]PoolConfig{{ID: "p", Path: pool}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	c := bindAll(t, reg)

	swaps := []struct{ link, in, out string }{
		{"link", "inside.txt", "../secret.txt"},
		{"link", "inside.txt", filepath.Join(base, "secret.txt")},
		{"dlink", "realdir", "../outdir"},
	}
	stop := make(chan struct{})
	var swapper sync.WaitGroup
	swapper.Add(1)
	go func() {
		defer swapper.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			s := swaps[i%len(swaps)]
			target := s.in
			if i%2 == 1 {
				target = s.out
			}
			tmp := filepath.Join(pool, s.link+".tmp")
			os.Remove(tmp)
			if err := os.Symlink(target, tmp); err != nil {
				t.Error(err)
				return
			}
			if err := os.Rename(tmp, filepath.Join(pool, s.link)); err != nil { // atomic swap
				t.Error(err)
				return
			}
		}
	}()

	var ok, refused atomic.Int64
	// Until both outcomes were seen: how many reads that takes is the
	// scheduler's business (a swapper starved on a loaded machine), so it
	// is not capped; the two minutes are a hang guard.
	deadline := time.Now().Add(2 * time.Minute)
	var readers sync.WaitGroup
	for g := 0; g < 4; g++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			name := []string{"link", "dlink/f"}[g%2]
			for i := 0; time.Now().Before(deadline); i++ {
				res, err := c.Read("p", name, 0, 0)
				switch code := codeOf(err); code {
				case "":
					if bytes.Contains(res.Data, []byte(secretMarker)) || string(res.Data) != inside {
						t.Errorf("read %q returned %q", name, res.Data)
						return
					}
					ok.Add(1)
				case violation.PathOutsidePools:
					refused.Add(1)
				default:
					t.Errorf("read %q: %v (the outside file was reached)", name, err)
					return
				}
				if i >= 500 && ok.Load() > 0 && refused.Load() > 0 {
					return
				}
			}
		}()
	}
	readers.Wait()
	close(stop)
	swapper.Wait()
	if ok.Load() == 0 || refused.Load() == 0 {
		t.Fatalf("race not exercised: %d ok, %d refused", ok.Load(), refused.Load())
	}
	t.Logf("%d reads ok, %d refused", ok.Load(), refused.Load())
}
