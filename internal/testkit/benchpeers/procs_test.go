package benchpeers

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// benchToken is the bench role's bearer token.
const benchToken = "bench-token-0123456789abcdef0123456789"

// fileBytes is the size of the file both sides serve (the 5.6 KB).
const fileBytes = 5632

// root is the repository root, from this package's directory.
var root, _ = filepath.Abs(filepath.Join("..", "..", ".."))

// airlockBins is the Airlock side, and the before side when
// AIRLOCK_BENCH_BEFORE names an older binary (built from main into /tmp,
// say), so that before and after are measured in one run.
// AIRLOCK_BENCH_SIDES=name=PATH,name=PATH adds more binaries as sides of
// their own (a proposed change built into /tmp, measured beside both).
func airlockBins(tb testing.TB) map[string]string {
	bin := filepath.Join(root, "bin", "airlock")
	if v := os.Getenv("AIRLOCK_BENCH_BIN"); v != "" {
		bin = v
	}
	if _, err := os.Stat(bin); err != nil {
		tb.Skipf("%s missing: run make build", bin)
	}
	bins := map[string]string{"airlock": bin}
	if v := os.Getenv("AIRLOCK_BENCH_BEFORE"); v != "" {
		bins["before"] = v
	}
	for side := range strings.SplitSeq(os.Getenv("AIRLOCK_BENCH_SIDES"), ",") {
		if side == "" {
			continue
		}
		name, path, ok := strings.Cut(side, "=")
		if !ok || name == "" || name == "plain" || bins[name] != "" {
			tb.Fatalf("AIRLOCK_BENCH_SIDES: %q is not a new name=PATH", side)
		}
		bins[name] = path
	}
	return bins
}

var plainOnce struct {
	sync.Once
	path string
	err  error
}

// plainBin builds internal/testkit/plainmcp's command once per test process.
func plainBin(tb testing.TB) string {
	plainOnce.Do(func() {
		dir, err := os.MkdirTemp("", "benchpeers-plainmcp-")
		if err != nil {
			plainOnce.err = err
			return
		}
		plainOnce.path = filepath.Join(dir, "plainmcp")
		cmd := exec.Command("go", "build", "-o", plainOnce.path, "./internal/testkit/plainmcp/cmd/plainmcp")
		cmd.Dir, cmd.Env = root, append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			plainOnce.err = fmt.Errorf("building plainmcp: %v\n%s", err, out)
		}
	})
	if plainOnce.err != nil {
		tb.Fatal(plainOnce.err)
	}
	return plainOnce.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if plainOnce.path != "" {
		os.RemoveAll(filepath.Dir(plainOnce.path))
	}
	os.Exit(code)
}

// fixture is a configuration with one trusted pool holding the served
// file, a role for HTTP callers (with room for every benchmark session)
// and the stdio role.
type fixture struct {
	cfg, file string
}

func newFixture(tb testing.TB) fixture {
	dir := tb.TempDir()
	pool := filepath.Join(dir, "pools", "bench")
	must(tb, os.MkdirAll(pool, 0o755))
	// CSV-like text, deterministic, exactly fileBytes long.
	var b bytes.Buffer
	b.WriteString("region,quarter,units,revenue_eur\n")
	for i := 0; b.Len() < fileBytes; i++ {
		fmt.Fprintf(&b, "region-%03d,2026-Q%d,%d,%d\n", i, i%4+1, 1000+i*7, 250000+i*131)
	}
	data := b.Bytes()[:fileBytes]
	data[fileBytes-1] = '\n'
	file := filepath.Join(pool, "data.csv")
	must(tb, os.WriteFile(file, data, 0o644))
	sum := sha256.Sum256(data)
	must(tb, os.WriteFile(filepath.Join(pool, "SHA256SUMS"), fmt.Appendf(nil, "%x  data.csv\n", sum), 0o644))
	cfg := filepath.Join(dir, "airlock.yaml")
	must(tb, os.WriteFile(cfg, []byte(`server:
  name: airlock-bench
pools:
  - id: bench
    description: The benchmark file.
    path: pools/bench
    trust: trusted
policies:
  base:
    allow: ["pool.*"]
roles:
  local:
    policy: base
    pools: [bench]
  agent:
    policy: base
    pools: [bench]
    tokens:
      - env: AIRLOCK_AGENT_TOKEN
transports:
  stdio:
    role: local
  http:
    max_sessions_per_principal: 4096
    max_connections: 4096
    # Every client is on 127.0.0.1: 128 of them connecting at once are
    # more than the default 64 not-yet-authenticated connections one
    # address may hold, and the edge would close the oldest.
    max_unauthenticated_per_address: 1024
`), 0o644))
	return fixture{cfg: cfg, file: file}
}

// proc is a server process under measurement.
type proc struct {
	cmd  *exec.Cmd
	addr string // host:port for HTTP servers
}

var listening = regexp.MustCompile(`http://(127\.0\.0\.1:\d+)/`)

// startHTTP starts argv, waits for it to print its address on stderr and
// keeps draining stderr (Airlock logs a line per call). It is stopped at
// cleanup.
func startHTTP(tb testing.TB, env []string, argv ...string) *proc {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	must(tb, err)
	must(tb, cmd.Start())
	tb.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	addr := make(chan string, 1)
	var tail bytes.Buffer
	var mu sync.Mutex
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
			mu.Lock()
			if tail.Len() < 8<<10 {
				tail.WriteString(sc.Text() + "\n")
			}
			mu.Unlock()
		}
		io.Copy(io.Discard, stderr)
	}()
	select {
	case a := <-addr:
		return &proc{cmd: cmd, addr: a}
	case <-time.After(30 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		tb.Fatalf("%s printed no address:\n%s", argv[0], tail.String())
		return nil
	}
}

// startAirlockHTTP runs bin serve --http on a free loopback port with its
// own state directory.
func startAirlockHTTP(tb testing.TB, bin string, fx fixture) *proc {
	return startHTTP(tb, []string{"AIRLOCK_AGENT_TOKEN=" + benchToken},
		bin, "serve", "--config", fx.cfg, "--state", tb.TempDir(), "--http", "127.0.0.1:0")
}

func startPlainHTTP(tb testing.TB, fx fixture) *proc {
	return startHTTP(tb, nil, plainBin(tb), "--file", fx.file, "--http", "127.0.0.1:0")
}

// rss reads a process's resident set (VmRSS) and its peak (VmHWM), bytes.
func rss(tb testing.TB, pid int) (now, peak int64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	must(tb, err)
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			now = kb << 10
		case "VmHWM:":
			peak = kb << 10
		}
	}
	return now, peak
}

// cpuTime is the user+system CPU time process pid has used, from
// /proc/PID/stat (clock ticks of 10 ms). Under a loaded machine the CPU a
// server spends per call is steadier than its calls/s.
func cpuTime(tb testing.TB, pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	must(tb, err)
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// spread is min/median/max of a sample.
type spread struct{ min, med, max float64 }

func spreadOf(xs []float64) spread {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return spread{}
	}
	return spread{s[0], s[len(s)/2], s[len(s)-1]}
}

func (s spread) String() string {
	f := func(x float64) string {
		switch {
		case x >= 100:
			return strconv.FormatFloat(x, 'f', 0, 64)
		case x >= 10:
			return strconv.FormatFloat(x, 'f', 1, 64)
		default:
			return strconv.FormatFloat(x, 'f', 2, 64)
		}
	}
	return f(s.min) + "/" + f(s.med) + "/" + f(s.max)
}

// sides orders the sides of round r: rotating, so that no side always
// runs first (or last, on a machine warming up or getting busier).
func sides(names []string, r int) []string {
	out := make([]string, len(names))
	for i := range names {
		out[i] = names[(i+r)%len(names)]
	}
	return out
}

// report prints one PEERS line: each side's figures and each non-baseline
// side's ratio to the baseline, min/median/max over the rounds.
//
// op names the comparison in the printed line: "/" for a ratio, "-" for
// a difference.
func report(b testing.TB, what, unit, base, op string, figures map[string][]float64, ratio func(side, base float64) float64) map[string]spread {
	var names []string
	for n := range figures {
		names = append(names, n)
	}
	slices.Sort(names)
	var line strings.Builder
	fmt.Fprintf(&line, "PEERS %-28s", what)
	for _, n := range names {
		fmt.Fprintf(&line, "  %s %s %s", n, spreadOf(figures[n]), unit)
	}
	ratios := map[string]spread{}
	for _, n := range names {
		if n == base {
			continue
		}
		var rs []float64
		for i, v := range figures[n] {
			rs = append(rs, ratio(v, figures[base][i]))
		}
		ratios[n] = spreadOf(rs)
		fmt.Fprintf(&line, "  %s%s%s %s", n, op, base, ratios[n])
	}
	fmt.Println(line.String())
	return ratios
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// withTimeout is a context for one phase of a harness.
func withTimeout(tb testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	tb.Cleanup(cancel)
	return ctx
}
