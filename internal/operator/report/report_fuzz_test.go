package report

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/internal/audit/audit"
)

// records is a Scanner over a fixed trail.
type records []*audit.Record

func (rs records) Scan(_ context.Context, after int64, fn func(*audit.Record) error) error {
	for _, r := range rs {
		if r.Seq > after {
			if err := fn(r); err != nil {
				return err
			}
		}
	}
	return nil
}

var outcomes = []audit.Outcome{audit.OutcomeOK, audit.OutcomeDenied, audit.OutcomeViolation, audit.OutcomeError,
	audit.OutcomeCancelled, audit.OutcomeStarted, audit.OutcomeInterrupted}

// trail builds a session's records from plan: one record per byte, with
// value in every string a record's detail carries, extra as the raw
// detail of some, and principal as the session's principal (an OAuth
// token's issuer|sub).
func trail(principal, value string, extra []byte, plan []byte) (records, int) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	base := func(seq int, tool, capability string, out audit.Outcome) *audit.Record {
		return &audit.Record{Seq: int64(seq), Time: t0.Add(time.Duration(seq) * time.Second), SessionID: "sess-1",
			ContextID: "ctx-1", Principal: principal, Role: "researcher", Transport: "stdio",
			Tool: tool, Capability: capability, Outcome: out}
	}
	js := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	rs := records{base(1, "", string(audit.KindSessionOpen), audit.OutcomeOK)}
	rs[0].Extra = js(map[string]any{"pools_bound": []string{"docs", value}})
	calls := 0
	for i, k := range plan {
		seq := i + 2
		var r *audit.Record
		switch k % 7 {
		case 0:
			r = base(seq, "read_pool_file", "pool.read", audit.OutcomeOK)
			r.Extra = js(map[string]any{"pool": value, "path": value + strconv.Itoa(int(k))})
		case 1:
			r = base(seq, "list_pools", "pool.list", audit.OutcomeOK)
			r.Extra = js(map[string]any{"pool": value})
		case 2:
			r = base(seq, "run_pipeline", "pipeline.run:"+value, audit.OutcomeOK)
			r.Extra = js(map[string]any{"evidence": map[string]any{
				"run_id": value, "pipeline": value, "exit_code": int(k) - 100, "killed": k&8 != 0, "kill_reason": value,
				"duration_ms": int(k), "snapshot_hash": value, "outputs": []map[string]string{{"name": value}, {"name": "b"}},
				"violations": []any{value}, "source_usage": map[string]any{"pools_used": []string{value}, "files_accessed": int(k) % 5, "integrity_verified": k&16 != 0},
			}})
		case 3:
			r = base(seq, "read_pool_file", "pool.read", audit.OutcomeViolation)
			r.Violation = []string{"PATH_OUTSIDE_POOLS", "INTEGRITY_FAILURE", "POLICY_DENIED", value}[int(k/7)%4]
		case 4:
			r = base(seq, []string{"read_pool_file", "list_pools", "run_pipeline"}[int(k/7)%3], "x", audit.OutcomeOK)
			r.Extra = extra
		case 5:
			r = base(seq, "", string(audit.KindSessionClose), audit.OutcomeOK)
		case 6:
			r = base(seq, "search", "comm.search", outcomes[int(k/7)%len(outcomes)])
		}
		if k%7 != 5 && r.Outcome != audit.OutcomeStarted {
			calls++
		}
		rs = append(rs, r)
	}
	return rs, calls
}

var (
	callsRE   = regexp.MustCompile(`\. (\d+) calls\.\n`)
	outcomeRE = regexp.MustCompile(`(?m)^\| [a-z]+ \| (\d+) \|$`)
)

// FuzzWriteMarkdown: for any trail of a session — any principal, any
// strings in the stored detail, any raw (even invalid) detail JSON — the
// report is built without a panic and keeps its format: exactly its own
// headings, in order; every table row with its table's number of cells;
// valid UTF-8 without control, C1 or bidirectional-formatting characters
// (the CLI prints it to the operator's terminal); the call count the
// trail's own; and the calls-by-outcome table accounting for every call.
func FuzzWriteMarkdown(f *testing.F) {
	f.Add("alice", "docs", []byte(`{"pool":"docs","path":"a.txt"}`), []byte{0, 1, 2, 3, 6, 5})
	f.Add("https://idp.example|user-1", "p", []byte(`{"evidence":{"run_id":"r1","outputs":[{"name":"o"}]}}`), []byte{4 + 7*2, 2, 9, 16, 23})
	f.Add("bob", "q", []byte(`{"evidence":null,"pool":7}`), []byte{4, 11, 18, 0, 0, 7})
	f.Add("carol", "docs", []byte(`not json`), []byte{4, 6, 13, 20, 27, 33})
	f.Add("dave", "", []byte(`{"pools_bound":["x"],"evidence":{"source_usage":{"files_accessed":-5}}}`), []byte{18, 25, 32, 3, 10, 17, 24})
	f.Fuzz(func(t *testing.T, principal, value string, extra, plan []byte) {
		if len(plan) > 64 || len(extra) > 4096 {
			return
		}
		rs, calls := trail(principal, value, extra, plan)
		rep, err := Build(context.Background(), rs, "sess")
		if err != nil {
			t.Fatalf("Build: %v", err)
		}
		var b bytes.Buffer
		rep.WriteMarkdown(&b)
		out := b.String()

		if !utf8.ValidString(out) {
			t.Fatalf("report is not valid UTF-8:\n%q", out)
		}
		for _, r := range out {
			if r != '\n' && (unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\u2028' || r == '\u2029') {
				t.Fatalf("report holds %U (principal %q, value %q):\n%q", r, principal, value, out)
			}
		}

		var heads []string
		lines := strings.Split(out, "\n")
		for _, l := range lines {
			if strings.HasPrefix(l, "#") {
				heads = append(heads, l)
			}
		}
		want := []string{"# Session sess-1", "## Sources Used", "## Calls by outcome"}
		if strings.Contains(out, "\n## Pipeline runs\n") {
			want = []string{want[0], want[1], "## Pipeline runs", want[2]}
		}
		if strings.Join(heads, "\n") != strings.Join(want, "\n") {
			t.Fatalf("headings %q, want %q (principal %q, value %q):\n%s", heads, want, principal, value, out)
		}

		// Tables: a header row sets the cell count of every row after it,
		// up to the blank line that ends the table.
		cells := -1
		for i, l := range lines {
			switch {
			case l == "":
				cells = -1
			case strings.HasPrefix(l, "| ") && cells < 0 && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "|--"):
				cells = strings.Count(l, "|")
			case cells >= 0:
				if !strings.HasPrefix(l, "|") || strings.Count(l, "|")-strings.Count(l, `\|`) != cells {
					t.Fatalf("table row %q does not have the table's %d separators (value %q):\n%s", l, cells, value, out)
				}
			}
		}

		m := callsRE.FindStringSubmatch(out)
		if m == nil || m[1] != strconv.Itoa(calls) {
			t.Fatalf("report says %v calls, the trail has %d:\n%s", m, calls, out)
		}
		sum := 0
		for _, m := range outcomeRE.FindAllStringSubmatch(out[strings.Index(out, "## Calls by outcome"):], -1) {
			n, _ := strconv.Atoi(m[1])
			sum += n
		}
		if sum != calls {
			t.Fatalf("calls by outcome add up to %d of %d calls:\n%s", sum, calls, out)
		}
	})
}
