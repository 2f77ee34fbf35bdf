package witness

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var testKey = bytes.Repeat([]byte{7}, KeySize)

func cp(seq int64, head string, kill bool) Checkpoint {
	return Checkpoint{Seq: seq, Head: head, Kill: kill, Time: time.Date(2026, 7, 1, 12, 0, 0, 5, time.UTC), Instance: "serve.host.1.ab"}
}

func h(c byte) string { return strings.Repeat(string(c), 64) }

func TestLineRoundTripAndGolden(t *testing.T) {
	line, err := cp(12, h('a'), true).Marshal(testKey)
	if err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile(filepath.Join("testdata", "checkpoint.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(line, golden) {
		t.Fatalf("line format changed:\n got %s\nwant %s", line, golden)
	}
	got, err := ParseLine(bytes.TrimSuffix(line, []byte("\n")), testKey)
	if err != nil || got != cp(12, h('a'), true) {
		t.Fatalf("round trip: %+v %v", got, err)
	}
}

// TestParseLineRefuses: a forged, edited, re-keyed or non-canonical line is
// refused with the right sentinel.
func TestParseLineRefuses(t *testing.T) {
	good, _ := cp(12, h('a'), false).Marshal(testKey)
	good = bytes.TrimSuffix(good, []byte("\n"))
	edit := func(old, new string) []byte { return bytes.Replace(good, []byte(old), []byte(new), 1) }
	other, _ := cp(12, h('a'), false).Marshal(bytes.Repeat([]byte{8}, KeySize))
	tests := []struct {
		name string
		line []byte
		want error
	}{
		{"seq raised", edit("seq=12", "seq=13"), ErrBadMAC},
		{"kill flipped", edit("kill=0", "kill=1"), ErrBadMAC},
		{"other key", bytes.TrimSuffix(other, []byte("\n")), ErrBadMAC},
		{"leading zero", edit("seq=12", "seq=012"), ErrMalformed},
		{"plus sign", edit("seq=12", "seq=+12"), ErrMalformed},
		{"negative", edit("seq=12", "seq=-1"), ErrMalformed},
		{"upper hex", edit("head="+h('a'), "head="+h('A')), ErrMalformed},
		{"kill 2", edit("kill=0", "kill=2"), ErrMalformed},
		{"extra field", edit(" mac=", " x=1 mac="), ErrMalformed},
		{"no mac", good[:bytes.LastIndex(good, []byte(" mac="))], ErrMalformed},
		{"wrong magic", edit("v1", "v2"), ErrMalformed},
		{"bad instance", edit("serve.host.1.ab", "serve host"), ErrMalformed},
		{"other time zone", edit("Z instance", "+00:00 instance"), ErrMalformed},
		{"too long", append(bytes.Repeat([]byte("x"), MaxLine), good...), ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseLine(tc.line, testKey); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestParseStopsAtBadLine(t *testing.T) {
	a, _ := cp(1, h('a'), false).Marshal(testKey)
	b, _ := cp(2, h('b'), false).Marshal(testKey)
	data := append(append(append([]byte{}, a...), "junk\n"...), b...)
	cps, err := Parse(data, testKey)
	var le *LineError
	if len(cps) != 1 || !errors.As(err, &le) || le.Line != 2 || !errors.Is(err, ErrMalformed) {
		t.Fatalf("cps=%d err=%v", len(cps), err)
	}
	if _, err := Parse(bytes.TrimSuffix(append(a, b...), []byte("\n")), testKey); !errors.As(err, &le) || le.Line != 2 {
		t.Fatalf("torn last line: %v", err)
	}
}

// sliceChain is a chain of hashes held in memory, for Check's table; the
// real store is exercised by the runner and cli tests.
type sliceChain []string

func (c sliceChain) Head(context.Context) (int64, string, error) {
	if len(c) == 0 {
		return 0, genesis, nil
	}
	return int64(len(c)), c[len(c)-1], nil
}

func (c sliceChain) HashAt(_ context.Context, seq int64) (string, bool, error) {
	if seq < 1 || seq > int64(len(c)) {
		return "", false, nil
	}
	return c[seq-1], true, nil
}

func TestCheck(t *testing.T) {
	chain := sliceChain{h('1'), h('2'), h('3'), h('4')}
	tests := []struct {
		name  string
		cps   []Checkpoint
		chain sliceChain
		kill  bool
		want  error
	}{
		{"consistent", []Checkpoint{cp(0, genesis, false), cp(2, h('2'), false), cp(4, h('4'), false)}, chain, false, nil},
		{"repeated checkpoint", []Checkpoint{cp(2, h('2'), false), cp(2, h('2'), false)}, chain, false, nil},
		{"records after last checkpoint", []Checkpoint{cp(2, h('2'), false)}, chain, false, nil},
		{"tail cut", []Checkpoint{cp(4, h('4'), false)}, chain[:3], false, ErrRolledBack},
		{"emptied", []Checkpoint{cp(4, h('4'), false)}, nil, false, ErrRolledBack},
		{"rewritten", []Checkpoint{cp(3, h('x'), false)}, chain, false, ErrRewritten},
		{"went back while in use", []Checkpoint{cp(4, h('4'), false), cp(2, h('2'), false)}, chain, false, ErrRolledBack},
		{"two heads for one seq", []Checkpoint{cp(2, h('2'), false), cp(2, h('9'), false)}, chain, false, ErrRewritten},
		{"non-genesis empty head", []Checkpoint{cp(0, h('9'), false)}, chain, false, ErrRewritten},
		{"unanchored", nil, chain, false, ErrUnanchored},
		{"empty and unanchored", nil, nil, false, nil},
		{"kill released behind its back", []Checkpoint{cp(4, h('4'), true)}, chain, false, ErrKillReleased},
		{"kill still engaged", []Checkpoint{cp(4, h('4'), true)}, chain, true, nil},
		{"kill engaged after last checkpoint", []Checkpoint{cp(4, h('4'), false)}, chain, true, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(context.Background(), tc.cps, tc.chain, tc.kill)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			var f *Finding
			if tc.want != nil && !errors.As(err, &f) {
				t.Fatalf("not a *Finding: %T", err)
			}
		})
	}
}

// TestLogAppendsDurablyAndInOrder: concurrent checkpoints from two Logs on
// one file (two processes' worth) parse back in non-decreasing seq order,
// each line intact; the file and key are 0600; the mirror gets the same lines.
func TestLogAppendsDurablyAndInOrder(t *testing.T) {
	dir := t.TempDir()
	key, err := LoadOrCreateKey(filepath.Join(dir, "k", "witness.key"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := LoadOrCreateKey(filepath.Join(dir, "k", "witness.key"))
	if err != nil || !bytes.Equal(key, again) {
		t.Fatalf("key not stable: %v", err)
	}
	path, mirror := filepath.Join(dir, "witness.log"), filepath.Join(dir, "mirror.log")
	chain := &growingChain{}
	var logs []*Log
	for i := range 2 {
		var opts *Options
		if i == 0 {
			opts = &Options{Mirrors: []string{mirror}}
		}
		l, err := OpenLog(path, key, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		logs = append(logs, l)
	}
	var wg sync.WaitGroup
	for _, l := range logs {
		wg.Go(func() {
			for range 50 {
				chain.grow()
				if _, err := l.Checkpoint(context.Background(), chain, false); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	cps, err := ReadFile(path, key)
	if err != nil || len(cps) != 100 {
		t.Fatalf("%d checkpoints, %v", len(cps), err)
	}
	if err := Check(context.Background(), cps, chain, false); err != nil {
		t.Fatalf("checkpoints of a growing chain: %v", err)
	}
	if m, err := ReadFile(mirror, key); err != nil || len(m) != 50 {
		t.Fatalf("mirror: %d %v", len(m), err)
	}
	for _, p := range []string{path, filepath.Join(dir, "k", "witness.key")} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", p, st.Mode(), err)
		}
	}
}

func TestLoadKeyRefusesBadKey(t *testing.T) {
	p := filepath.Join(t.TempDir(), "k")
	os.WriteFile(p, []byte("abcd\n"), 0o600)
	if _, err := LoadOrCreateKey(p); !errors.Is(err, ErrBadKey) {
		t.Fatalf("err = %v", err)
	}
}

// growingChain's head grows by one record per grow, hash = seq in hex.
type growingChain struct {
	mu  sync.Mutex
	seq int64
}

func hashOf(seq int64) string {
	s := strings.Repeat("0", 48) + strings.Repeat("0", 16)
	b := []byte(s)
	for i := 63; seq > 0; i-- {
		b[i] = "0123456789abcdef"[seq%16]
		seq /= 16
	}
	return string(b)
}

func (g *growingChain) grow() { g.mu.Lock(); g.seq++; g.mu.Unlock() }
func (g *growingChain) Head(context.Context) (int64, string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.seq, hashOf(g.seq), nil
}
func (g *growingChain) HashAt(_ context.Context, seq int64) (string, bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return hashOf(seq), seq >= 1 && seq <= g.seq, nil
}

// TestCheckpointerCadence: a checkpoint every N records, one at Close.
func TestCheckpointerCadence(t *testing.T) {
	dir := t.TempDir()
	l, err := OpenLog(filepath.Join(dir, "w.log"), testKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	chain := &growingChain{}
	c := StartCheckpointer(l, chain, func() bool { return false }, &CheckpointerOptions{EveryRecords: 10, Interval: time.Hour})
	for range 25 {
		chain.grow()
		seq, _, _ := chain.Head(context.Background())
		c.Notify(seq)
		if seq%10 != 0 {
			continue
		}
		// The checkpoint is written by the checkpointer's goroutine: wait
		// for it before the chain grows on, so what is checked is the
		// cadence, not how soon the goroutine was scheduled (the deadline
		// is a hang guard).
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
			cps, _ := ReadFile(filepath.Join(dir, "w.log"), testKey)
			if len(cps) > 0 && cps[len(cps)-1].Seq == seq {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no checkpoint at %d records: %+v", seq, cps)
			}
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	cps, err := ReadFile(filepath.Join(dir, "w.log"), testKey)
	if err != nil {
		t.Fatal(err)
	}
	if len(cps) != 3 || cps[0].Seq != 10 || cps[1].Seq != 20 || cps[2].Seq != 25 {
		t.Fatalf("checkpoints %+v, want at 10, 20 and (Close) 25", cps)
	}
}
