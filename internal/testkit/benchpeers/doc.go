// Package benchpeers holds `make bench`'s side-by-side comparisons of
// Airlock against its peers (issue 11), each measured in one run on the
// same machine so that the figure that counts is a ratio, not a time:
//
//   - BenchmarkPeersHTTP: a governed read_pool_file of a 5.6 KB file over
//     streamable HTTP on loopback (bin/airlock serve --http, every call's
//     audit record durable before its response) against the ungoverned
//     baseline (internal/testkit/plainmcp: mcp-go returning the same bytes), at 1,
//     8, 32 and 128 concurrent mcp-go clients.
//   - BenchmarkPeersSessionMemory: the resident memory of 1,000
//     initialized HTTP sessions, Airlock against the baseline.
//   - BenchmarkPeersSessionLoad: issue 27's measurement — 1,000 mcp-go
//     streamable HTTP sessions calling read_pool_file at once, the
//     server's calls/s, peak resident memory (VmHWM) and its growth per
//     session, Airlock against the baseline.
//   - BenchmarkPeersStdio: read_pool_file over stdio against the official
//     filesystem server's read_text_file (e2e/node_modules), the same file
//     and the same mcp-go stdio client.
//   - BenchmarkPeersPipeline: run_pipeline sales_summary (demo
//     configuration, the real sandbox) end to end against the same awk
//     command run directly.
//
// Every comparison runs its rounds interleaved (baseline, Airlock, and the
// binary named by AIRLOCK_BENCH_BEFORE if set, in rotating order) and
// prints one PEERS line with min/median/max of each side and of the ratio.
// The harnesses are test code only (they start processes);
// TestPeersHarnessRun runs each of them at a tiny scale in `make test`.
package benchpeers
