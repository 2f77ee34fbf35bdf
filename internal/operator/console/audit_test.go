package console

import (
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/audit/audit"
)

func TestParseFilter(t *testing.T) {
	at := time.Date(2026, 11, 23, 15, 4, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, query, field string
		want               Filter
	}{
		{name: "empty", query: ""},
		{name: "all fields", query: "context=ctx-1&principal=agent&tool=declare_need&decision=deny&violation=KILL_SWITCH_ENGAGED&from=2026-11-23T15:04&to=2026-11-23T15:04:00Z&before=7",
			want: Filter{Context: "ctx-1", Principal: "agent", Tool: "declare_need", Decision: "deny", Violation: "KILL_SWITCH_ENGAGED", From: at, To: at, Before: 7}},
		{name: "date only", query: "from=2026-11-23", want: Filter{From: time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)}},
		{name: "bad time", query: "from=yesterday", field: "from"},
		{name: "bad seq", query: "before=-1", field: "before"},
		{name: "seq not a number", query: "before=1e3", field: "before"},
		{name: "decision markup", query: "decision=%3Cscript%3E", field: "decision"},
		{name: "violation lower case", query: "violation=kill", field: "violation"},
		{name: "control character", query: "principal=a%00b", field: "principal"},
		{name: "invalid utf-8", query: "tool=%ff", field: "tool"},
		{name: "too long", query: "context=" + longA, field: "context"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := url.ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseFilter(q)
			if tc.field != "" {
				var fe *FilterError
				if !errors.As(err, &fe) || fe.Field != tc.field || !errors.Is(err, ErrBadFilter) {
					t.Fatalf("err %v, want a FilterError on %s", err, tc.field)
				}
				if got != (Filter{}) {
					t.Fatalf("partial filter %+v", got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

var longA = func() string {
	b := make([]byte, maxFilterLen+1)
	for i := range b {
		b[i] = 'a'
	}
	return string(b)
}()

func TestFilterMatch(t *testing.T) {
	rec := &audit.Record{Seq: 10, Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), ContextID: "ctx-abc",
		Principal: "agent/env:TOKEN", Tool: "declare_need", Capability: "comm.fetch", Decision: "deny", Violation: "POLICY_DENIED"}
	for _, tc := range []struct {
		name string
		f    Filter
		want bool
	}{
		{"empty", Filter{}, true},
		{"context prefix", Filter{Context: "ctx-a"}, true},
		{"other context", Filter{Context: "ctx-b"}, false},
		{"principal substring", Filter{Principal: "env:TOK"}, true},
		{"tool", Filter{Tool: "declare_need"}, true},
		{"capability as tool", Filter{Tool: "comm.fetch"}, true},
		{"other tool", Filter{Tool: "run_pipeline"}, false},
		{"decision", Filter{Decision: "allow"}, false},
		{"violation", Filter{Violation: "POLICY_DENIED"}, true},
		{"before", Filter{Before: 10}, false},
		{"before later", Filter{Before: 11}, true},
		{"from after", Filter{From: rec.Time.Add(time.Second)}, false},
		{"to before", Filter{To: rec.Time.Add(-time.Second)}, false},
		{"window", Filter{From: rec.Time.Add(-time.Second), To: rec.Time.Add(time.Second)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.f.Match(rec); got != tc.want {
				t.Fatalf("Match = %v", got)
			}
		})
	}
}

// FuzzParseFilter: any query string gives a filter whose fields are
// bounded printable text, or a FilterError — never a panic, never both.
func FuzzParseFilter(f *testing.F) {
	for _, s := range []string{"", "context=ctx&before=3", "from=2026-11-23T15:04&to=2026-11-23", "decision=%3Cscript%3E", "principal=a%00b", "before=99999999999999999999", "tool=%ff%fe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		got, err := ParseFilter(q)
		if err != nil {
			var fe *FilterError
			if !errors.As(err, &fe) || !errors.Is(err, ErrBadFilter) || got != (Filter{}) {
				t.Fatalf("error %v with filter %+v", err, got)
			}
			return
		}
		for _, s := range []string{got.Context, got.Principal, got.Tool, got.Decision, got.Violation} {
			if checkText(s) != nil {
				t.Fatalf("unchecked value %q", s)
			}
		}
		if got.Before < 0 {
			t.Fatalf("before %d", got.Before)
		}
		_ = got.query(1) // the next page's link never panics
	})
}
