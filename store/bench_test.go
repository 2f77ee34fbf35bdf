package store_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/airlock-dev/airlock/store"
	"github.com/airlock-dev/airlock/store/pgtest"
)

// The append benchmarks run on a real file with fsync, so their figures are
// bounded by the disk's fsync latency; records/s is the number to compare.
// Serial pays one fsync per record; group commit shares one among a batch.

func BenchmarkAppendSerial(b *testing.B) {
	ctx := context.Background()
	db, _ := openTemp(b, nil)
	base := *sample(1)
	b.ResetTimer()
	for range b.N {
		r := base
		if err := db.Append(ctx, &r); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

func BenchmarkAppendGroupCommit(b *testing.B) {
	ctx := context.Background()
	db, _ := openTemp(b, nil)
	base := *sample(1)
	// 32 appending goroutines, whatever GOMAXPROCS is.
	b.SetParallelism((32 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r := base
			if err := db.Append(ctx, &r); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkVerify reports the time to verify a 10,000-record chain (ns/op
// is per 10k records).
func BenchmarkVerify(b *testing.B) {
	const records = 10_000
	ctx := context.Background()
	db, _ := openTemp(b, nil)
	var next atomic.Int64
	done := make(chan error, 64)
	for range 64 {
		go func() {
			for {
				i := next.Add(1)
				if i > records {
					done <- nil
					return
				}
				if err := db.Append(ctx, sample(int(i))); err != nil {
					done <- err
					return
				}
			}
		}()
	}
	for range 64 {
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		res, err := db.Verify(ctx)
		if err != nil || !res.OK || res.Records != records {
			b.Fatalf("Verify = %+v, %v", res, err)
		}
	}
	b.ReportMetric(float64(b.N*records)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkKillSwitch compares the uncached read with the data_version
// cache the runner's per-call check uses.
func BenchmarkKillSwitch(b *testing.B) {
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		get  func(*store.DB) func(context.Context) (bool, error)
	}{
		{"KillSwitch/select", func(db *store.DB) func(context.Context) (bool, error) { return db.KillSwitch }},
		{"KillSwitchEngaged/cached", func(db *store.DB) func(context.Context) (bool, error) { return db.KillSwitchEngaged }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			db, _ := openTemp(b, nil)
			if err := db.SetKillSwitch(ctx, false, "bench", "bench"); err != nil {
				b.Fatal(err)
			}
			get := bc.get(db)
			b.ResetTimer()
			for range b.N {
				if on, err := get(ctx); on || err != nil {
					b.Fatal(fmt.Sprint(on, err))
				}
			}
		})
	}
}

// BenchmarkPostgresAppend is the shared store's capacity: audit appends/s
// into one PostgreSQL chain from 1 or 3 instances (handles), each with 32
// appending goroutines and its own group commit; every batch waits for the
// head row lock the other instances' batches hold. The test cluster runs
// with fsync off (scripts/pg-test-cluster), so this measures CPU and lock
// hand-off, not the disk.
func BenchmarkPostgresAppend(b *testing.B) {
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("instances=%d", n), func(b *testing.B) {
			dsn := pgtest.DSN(b)
			dbs := make([]*store.DB, n)
			for i := range dbs {
				dbs[i] = openPG(b, dsn, &store.Options{Instance: fmt.Sprintf("bench-%d", i)})
			}
			base := *sample(1)
			var next atomic.Int64
			b.SetParallelism((32*n + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				db := dbs[int(next.Add(1))%n]
				for pb.Next() {
					r := base
					if err := db.Append(context.Background(), &r); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
