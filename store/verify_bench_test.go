package store

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// BenchmarkVerify1M is a full Verify of a million demo records (issue 11:
// ≤ 2 s), on SQLite; the file is built once, outside the timing. ns/op is
// per million records.
func BenchmarkVerify1M(b *testing.B) {
	n := verifyBenchRecords
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "1m.db")
	db, err := Open(path, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	fillDemo(b, db, n)
	b.Run("records=1M", func(b *testing.B) {
		cpu0 := cpuTime()
		for range b.N {
			res, err := db.Verify(ctx)
			if err != nil || !res.OK || res.Records != int64(n) {
				b.Fatalf("Verify = %+v, %v", res, err)
			}
		}
		b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "records/s")
		// On a shared machine the wall time says more about the neighbours
		// than about Verify; the process's CPU time over the cores it may
		// use is the wall time it would take alone.
		cpu := (cpuTime() - cpu0).Seconds() / float64(b.N)
		b.ReportMetric(cpu, "cpu-s/op")
		b.ReportMetric(cpu/float64(runtime.GOMAXPROCS(0)), "idle-wall-s/op")
	})
}

// fillDemo appends n chained demo records in large transactions.
func fillDemo(t testing.TB, db *DB, n int) {
	const batch = 20_000
	for i := 0; i < n; i += batch {
		reqs := make([]*appendReq, min(batch, n-i))
		for j := range reqs {
			reqs[j] = &appendReq{ctx: context.Background(), rec: *demoRecord(i + j), done: make(chan error, 1)}
		}
		if err := db.writeRecords(reqs); err != nil {
			t.Fatal(fmt.Errorf("filling: %w", err))
		}
	}
}

// verifyBenchRecords is a variable so that a profile run can shrink it.
var verifyBenchRecords = 1_000_000

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
