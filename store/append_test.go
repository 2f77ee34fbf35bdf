package store_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/testkit/childtest"
	"github.com/airlock-dev/airlock/store"
)

func TestAppendAssignsChain(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t, nil)
	prev := strings.Repeat("0", 64)
	for i := 1; i <= 3; i++ {
		rec := sample(i)
		if err := db.Append(ctx, rec); err != nil {
			t.Fatal(err)
		}
		if rec.Seq != int64(i) || rec.PrevHash != prev || rec.Hash != rec.ComputeHash() || len(rec.Hash) != 64 {
			t.Fatalf("record %d: seq %d prev %s hash %s", i, rec.Seq, rec.PrevHash, rec.Hash)
		}
		prev = rec.Hash
	}
	if n, err := db.LastSeq(ctx); err != nil || n != 3 {
		t.Fatalf("LastSeq = %d, %v", n, err)
	}
	mustVerify(t, db, 3)
}

func TestAppendRoundTrip(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t, nil)
	tests := []struct {
		name string
		rec  *audit.Record
	}{
		{"sample", sample(1)},
		{"empty strings and no JSON", &audit.Record{Time: time.Unix(0, 0), Outcome: audit.OutcomeDenied}},
		{"started, before a consequential call runs", &audit.Record{Outcome: audit.OutcomeStarted, Tool: "run_pipeline"}},
		{"args kept byte for byte", &audit.Record{
			Outcome: audit.OutcomeOK,
			Args:    json.RawMessage("{ \"b\" : 1,\n \"a\":\"<&>\" }"), // not compacted, not HTML-escaped
		}},
		{"odd bytes", &audit.Record{
			Outcome:   audit.OutcomeError,
			Reason:    "nul\x00inside, bad utf8 \xff\xfe, emoji 🙂, quote \" and \\",
			Error:     strings.Repeat("x", 70000),
			SessionID: "\u2028\u202e",
		}},
		{"extremes", &audit.Record{
			Time:           time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
			Outcome:        audit.OutcomeViolation,
			DurationMicros: -1 << 63,
			OutputBytes:    1<<63 - 1,
			Truncated:      true,
			Extra:          json.RawMessage(`[null]`),
		}},
		{"time in another zone, nanoseconds", &audit.Record{
			Time:    time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.FixedZone("X", 5*3600)),
			Outcome: audit.OutcomeOK,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := *tt.rec
			if err := db.Append(ctx, tt.rec); err != nil {
				t.Fatal(err)
			}
			if want := in.Time.UTC().Truncate(time.Microsecond); !in.Time.IsZero() && !tt.rec.Time.Equal(want) {
				t.Errorf("Append set time %v, want %v", tt.rec.Time, want)
			}
			got, err := db.Tail(ctx, 1)
			if err != nil || len(got) != 1 {
				t.Fatalf("Tail: %d, %v", len(got), err)
			}
			if d := sameRecord(&got[0], tt.rec); d != "" {
				t.Errorf("read back differs: %s", d)
			}
			if got[0].ComputeHash() != got[0].Hash {
				t.Error("read-back record does not re-hash to its hash")
			}
		})
	}
	mustVerify(t, db, int64(len(tests)))
}

func TestAppendZeroTimeIsNow(t *testing.T) {
	db, _ := openTemp(t, nil)
	before := time.Now().Add(-time.Millisecond)
	rec := &audit.Record{Outcome: audit.OutcomeOK}
	if err := db.Append(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	if rec.Time.Before(before) || rec.Time.After(time.Now()) || rec.Time.Location() != time.UTC {
		t.Fatalf("time = %v", rec.Time)
	}
}

func TestAppendRejectsInvalid(t *testing.T) {
	db, _ := openTemp(t, nil)
	tests := []struct {
		name string
		rec  audit.Record
	}{
		{"no outcome", audit.Record{}},
		{"unknown outcome", audit.Record{Outcome: "maybe"}},
		{"args not JSON", audit.Record{Outcome: "ok", Args: json.RawMessage(`{"a":`)}},
		{"extra not JSON", audit.Record{Outcome: "ok", Extra: json.RawMessage(`nope`)}},
		{"year 10000", audit.Record{Outcome: "ok", Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := db.Append(context.Background(), &tt.rec); !errors.Is(err, store.ErrInvalidRecord) {
				t.Fatalf("err = %v, want ErrInvalidRecord", err)
			}
			if tt.rec.Seq != 0 || tt.rec.Hash != "" {
				t.Error("a refused record was given a seq or hash")
			}
		})
	}
	mustVerify(t, db, 0)
}

func TestAppendAfterClose(t *testing.T) {
	db, _ := openTemp(t, nil)
	appendN(t, db, 0, 1)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ctx := context.Background()
	if err := db.Append(ctx, sample(1)); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Append: %v, want ErrClosed", err)
	}
	_, err := db.Verify(ctx)
	if !errors.Is(err, store.ErrClosed) {
		t.Errorf("Verify: %v, want ErrClosed", err)
	}
	if on, err := db.KillSwitchEngaged(ctx); !errors.Is(err, store.ErrClosed) || !on {
		t.Errorf("KillSwitchEngaged = %v, %v; want engaged, ErrClosed", on, err)
	}
}

func TestAppendCancelledContext(t *testing.T) {
	db, _ := openTemp(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := db.Append(ctx, sample(1)); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	mustVerify(t, db, 0)
}

// TestCloseDrainsQueue: appends racing with Close either commit (nil) or
// are refused with ErrClosed, and every nil is really in the file.
func TestCloseDrainsQueue(t *testing.T) {
	db, path := openTemp(t, nil)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for i := range 64 {
		wg.Go(func() {
			err := db.Append(context.Background(), sample(i))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, store.ErrClosed):
				t.Errorf("Append: %v", err)
			}
		})
	}
	time.Sleep(time.Millisecond)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	ro := openRO(t, path)
	mustVerify(t, ro, int64(ok))
}

func TestAppendConcurrent(t *testing.T) {
	db, _ := openTemp(t, nil)
	const goroutines, each = 50, 20
	var wg sync.WaitGroup
	seen := make(chan int64, goroutines*each)
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				rec := sample(g*each + i)
				if err := db.Append(context.Background(), rec); err != nil {
					t.Error(err)
					return
				}
				seen <- rec.Seq
			}
		})
	}
	wg.Wait()
	close(seen)
	uniq := map[int64]bool{}
	for s := range seen {
		if uniq[s] {
			t.Fatalf("seq %d handed out twice", s)
		}
		uniq[s] = true
	}
	mustVerify(t, db, goroutines*each)
	if n := mustBeContiguous(t, db); n != goroutines*each {
		t.Fatalf("%d records", n)
	}
}

// TestAppendTwoHandles simulates the server and the operator CLI: two DBs on
// one file, appending at once. The head is read inside each transaction, so
// the chain stays single and contiguous.
func TestAppendTwoHandles(t *testing.T) {
	server, path := openTemp(t, nil)
	cli := openPath(t, path)
	const each = 100
	var wg sync.WaitGroup
	for h, db := range []*store.DB{server, cli} {
		for g := range 4 {
			wg.Go(func() {
				for i := range each / 4 {
					if err := db.Append(context.Background(), sample(h*1000+g*100+i)); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	mustVerify(t, server, 2*each)
	mustVerify(t, cli, 2*each)
	mustBeContiguous(t, server)
}

// TestAppendCrossProcess runs a second process (this test binary, as
// TestHelperAppender) that appends to the same file while this one does.
func TestAppendCrossProcess(t *testing.T) {
	db, path := openTemp(t, nil)
	const each = 100
	cmd := childtest.Command("^TestHelperAppender$", "STORE_HELPER_PATH="+path, "STORE_HELPER_N="+strconv.Itoa(each))
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	appendConcurrently(t, db, each, 4)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper process: %v\n%s", err, out)
	}
	mustVerify(t, db, 2*each)
	mustBeContiguous(t, db)
}

func TestHelperAppender(t *testing.T) {
	path := os.Getenv("STORE_HELPER_PATH")
	if path == "" {
		t.Skip("only run as a helper process by TestAppendCrossProcess")
	}
	n, _ := strconv.Atoi(os.Getenv("STORE_HELPER_N"))
	db := openPath(t, path)
	appendConcurrently(t, db, n, 4)
}

func appendConcurrently(t *testing.T, db *store.DB, n, workers int) {
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				if err := db.Append(context.Background(), sample(i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestAppendFailsClosed makes the store really unable to write: the file is
// capped at its current size (Options.MaxPageCount), so SQLite fails the
// insert with SQLITE_FULL. Append must say so with ErrUnavailable, hand out
// no seq or hash, and leave the chain as it was.
func TestAppendFailsClosed(t *testing.T) {
	ctx := context.Background()
	full := fullAfter(t, 5)
	big := sample(99)
	big.Reason = strings.Repeat("r", 64<<10) // needs new pages
	err := full.Append(ctx, big)
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Append on a full store: err = %v, want ErrUnavailable", err)
	}
	if !strings.Contains(err.Error(), "full") {
		t.Errorf("err = %v, want the cause (database or disk is full) kept", err)
	}
	if big.Seq != 0 || big.Hash != "" {
		t.Errorf("failed Append assigned seq %d hash %q", big.Seq, big.Hash)
	}
	// Still full: a second attempt fails the same way, not silently.
	if err := full.Append(ctx, big); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("second Append: %v", err)
	}
	mustVerify(t, full, 5)
	if n, _ := full.LastSeq(ctx); n != 5 {
		t.Fatalf("LastSeq = %d after failed appends, want 5", n)
	}
}

func Example() {
	dir, _ := os.MkdirTemp("", "airlock-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()

	db, err := store.Open(dir+"/airlock.db", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()

	rec := &audit.Record{
		Tool: "read_pool_file", Capability: "pool.read", Tier: "read",
		Decision: "allow", Outcome: audit.OutcomeOK,
		Args: json.RawMessage(`{"pool":"p1","path":"a.csv"}`),
	}
	if err := db.Append(ctx, rec); err != nil { // committed and fsynced
		fmt.Println("refuse the call:", err)
		return
	}
	res, _ := db.Verify(ctx)
	fmt.Println(rec.Seq, rec.PrevHash[:8], res.OK, res.Records)
	// Output: 1 00000000 true 1
}

// TestDurableAcrossSIGKILL is the durability guarantee of issue 11 with one
// fsync per commit group and nothing else on the path: a child process (this
// test binary, as TestHelperCalls) plays a server under 16-way load — for
// each "call" it counts limit usage (a deferred-durability write, no fsync of
// its own), appends the call's audit record, and only then "answers" by
// printing the record's seq. The parent SIGKILLs it mid-stream, right after
// reading answers, then reopens the file: every answered seq must be in a
// chain that verifies, and the usage counter must cover every answered call
// (its update precedes the record in the log the record's commit synced).
func TestDurableAcrossSIGKILL(t *testing.T) {
	for round := range 3 {
		t.Run(strconv.Itoa(round), func(t *testing.T) {
			_, path := openTemp(t, nil)
			cmd := childtest.Command("^TestHelperCalls$", "STORE_HELPER_CALLS="+path)
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			stderr := &strings.Builder{}
			cmd.Stderr = stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			answered := map[int64]bool{}
			sc := bufio.NewScanner(stdout)
			for sc.Scan() && len(answered) < 300+100*round {
				seq, err := strconv.ParseInt(sc.Text(), 10, 64)
				if err != nil {
					t.Fatalf("helper said %q", sc.Text())
				}
				answered[seq] = true
			}
			// Kill while it is still appending: answers after this point
			// are unread, the ones read are what the "agent" saw.
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
			if len(answered) < 300 {
				t.Fatalf("helper answered only %d calls: %s", len(answered), stderr)
			}
			db := openPath(t, path)
			res, err := db.Verify(context.Background())
			if err != nil || !res.OK {
				t.Fatalf("Verify after SIGKILL = %+v, %v", res, err)
			}
			ctx := context.Background()
			labelOf := map[int64]int64{} // record seq → its label's seq
			if err := db.Scan(ctx, 0, func(r *audit.Record) error {
				var x struct{ Labels []struct{ Seq int64 } }
				if json.Unmarshal(r.Extra, &x) == nil && len(x.Labels) == 1 {
					labelOf[r.Seq] = x.Labels[0].Seq
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			prov, err := db.ContextProvenance(ctx, "c1")
			if err != nil {
				t.Fatal(err)
			}
			stored := map[int64]bool{}
			for _, l := range prov.Content {
				stored[l.Seq] = true
			}
			for seq := range answered {
				if _, ok, err := db.HashAt(ctx, seq); err != nil || !ok {
					t.Errorf("answered call's record %d missing after SIGKILL (%v)", seq, err)
				}
				if ls, ok := labelOf[seq]; !ok || !stored[ls] {
					t.Errorf("answered call's record %d: label %d (named: %v) not in the store after SIGKILL", seq, ls, ok)
				}
			}
			var calls int64
			err = db.UpdateUsage(ctx, []string{"calls"}, func(cur map[string][]byte) (map[string][]byte, error) {
				calls, _ = strconv.ParseInt(string(cur["calls"]), 10, 64)
				return nil, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if calls < int64(len(answered)) {
				t.Errorf("usage counted %d calls, %d were answered", calls, len(answered))
			}
			t.Logf("answered %d, chain holds %d, usage %d", len(answered), res.Records, calls)
		})
	}
}

// TestHelperCalls is the child of TestDurableAcrossSIGKILL; it runs until
// killed (or 20,000 calls).
func TestHelperCalls(t *testing.T) {
	path := os.Getenv("STORE_HELPER_CALLS")
	if path == "" {
		t.Skip("only run as a helper process by TestDurableAcrossSIGKILL")
	}
	db := openPath(t, path)
	ctx := context.Background()
	var out sync.Mutex
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < 20_000; i += 16 {
				err := db.UpdateUsage(ctx, []string{"calls"}, func(cur map[string][]byte) (map[string][]byte, error) {
					n, _ := strconv.ParseInt(string(cur["calls"]), 10, 64)
					return map[string][]byte{"calls": []byte(strconv.FormatInt(n+1, 10))}, nil
				})
				if err != nil {
					t.Error(err)
					return
				}
				// Every call hands out content: its label commits with
				// its record (issue 27), and a small cap keeps evicting.
				r := sample(i)
				l := &store.ContentLabel{ContextID: "c1", Source: fmt.Sprintf("att_%d", i), Kind: "comm.fetch",
					Integrity: store.IntegrityUntrusted, Text: strings.Repeat("x", 100+i%50), CreatedAt: ctxEpoch}
				if err := db.AppendLabelled(ctx, r, &store.Labels{List: []*store.ContentLabel{l}, MaxBytes: 4 << 10}); err != nil {
					t.Error(err)
					return
				}
				out.Lock()
				fmt.Println(r.Seq)
				out.Unlock()
			}
		})
	}
	wg.Wait()
}
