package store_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

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
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperCalls$", "-test.count=1")
			cmd.Env = append(os.Environ(), "STORE_HELPER_CALLS="+path)
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
			for seq := range answered {
				if _, ok, err := db.HashAt(ctx, seq); err != nil || !ok {
					t.Errorf("answered call's record %d missing after SIGKILL (%v)", seq, err)
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
				r := sample(i)
				if err := db.Append(ctx, r); err != nil {
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
