package provenance

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// memoArgs are the values a need traces in the memo tests: the attacker's
// and the principal's, each as an agent might respell them.
var memoArgs = map[string]any{
	"iban":    attackIBAN,
	"spaced":  "US13 3000 0001 2121 2121 212",
	"mail":    attackMail,
	"link":    attackLink,
	"task":    taskIBAN,
	"amount":  "98.70",
	"vendor":  "Acme Payments GmbH",
	"newiban": "FR1420041010050500013M02606",
}

// memoStep is one change to a context's provenance between two needs.
type memoStep struct {
	name   string
	change func([]Source) []Source
	opt    *Options
	// want: the origin of some arguments right after the change.
	want map[string]Origin
}

func withSource(s Source) func([]Source) []Source {
	return func(srcs []Source) []Source { return append(srcs, s) }
}

// replaced gives the source id a new text and integrity (an eviction
// empties a text; a seq reused after a crash names other content).
func replaced(id string, in Integrity, text string) func([]Source) []Source {
	return func(srcs []Source) []Source {
		out := make([]Source, 0, len(srcs))
		for _, s := range srcs {
			if s.ID == id {
				s.Integrity, s.Text = in, text
			}
			out = append(out, s)
		}
		return out
	}
}

// memoSteps is a context's life, need after need: each step's change
// applies to the sources the step before left.
var memoSteps = []memoStep{
	{name: "the task only", change: func(s []Source) []Source { return s },
		want: map[string]Origin{"iban": OriginAgent, "task": OriginTrusted, "newiban": OriginAgent}},
	{name: "attacker content arrives", change: withSource(bill),
		want: map[string]Origin{"iban": OriginUntrusted, "spaced": OriginUntrusted, "mail": OriginUntrusted, "link": OriginUntrusted, "task": OriginTrusted}},
	{name: "more untrusted content", change: withSource(Source{ID: "att:2", Integrity: Untrusted, Text: "Vendor: Acme Payments GmbH, IBAN FR14 2004 1010 0505 0001 3M02 606."}),
		want: map[string]Origin{"newiban": OriginUntrusted}},
	{name: "an endorsement of the new IBAN", change: withSource(Source{ID: "endorsement:e1", Integrity: Trusted, Text: "FR1420041010050500013M02606"}),
		want: map[string]Origin{"newiban": OriginTrusted, "iban": OriginUntrusted}},
	{name: "the bill evicted", change: replaced(bill.ID, Untrusted, ""),
		want: map[string]Origin{"iban": OriginAgent, "mail": OriginAgent, "newiban": OriginTrusted}},
	{name: "the bill's id reused for the attacker's page again", change: replaced(bill.ID, Untrusted, bill.Text),
		want: map[string]Origin{"iban": OriginUntrusted}},
	{name: "the same text, now under trusted", change: replaced(bill.ID, Trusted, bill.Text),
		want: map[string]Origin{"iban": OriginTrusted}},
	{name: "back to untrusted", change: replaced(bill.ID, Untrusted, bill.Text),
		want: map[string]Origin{"iban": OriginUntrusted}},
	{name: "an index too small for the bill", change: func(s []Source) []Source { return s }, opt: &Options{MaxIndexBytes: len(task.Text) + 40},
		want: map[string]Origin{"iban": OriginUntrusted, "task": OriginTrusted}},
	{name: "the whole value only in a shorter MaxValueBytes", change: withSource(Source{ID: "endorsement:e2", Integrity: Trusted, Text: "Acme Payments GmbH"}),
		opt: &Options{MaxValueBytes: 8}, want: map[string]Origin{"vendor": OriginUntrusted}},
	{name: "the vendor endorsed at the default MaxValueBytes", change: func(s []Source) []Source { return s },
		want: map[string]Origin{"vendor": OriginTrusted}},
}

// TestMemoIndexIsFresh: along a context's life (content arriving, an
// endorsement, an eviction, a source id reused with other text or
// integrity, other options), the index a Memo builds for each need is the
// one NewIndex builds from the same sources, field for field, and traces
// every value alike: what changed is matched (or no longer matched) on the
// very next need. Hostile: the attacker's IBAN is agent-written before his
// page arrives and untrusted on the need right after it.
func TestMemoIndexIsFresh(t *testing.T) {
	var m Memo
	srcs := []Source{task}
	for _, st := range memoSteps {
		srcs = st.change(srcs)
		got, want := m.NewIndex(srcs, st.opt), NewIndex(srcs, st.opt)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: the memo's index differs from a fresh one", st.name)
		}
		gotArgs, wantArgs := got.Trace(memoArgs), want.Trace(memoArgs)
		if !reflect.DeepEqual(gotArgs, wantArgs) {
			t.Fatalf("%s: traced\n%+v\nwant\n%+v", st.name, gotArgs, wantArgs)
		}
		for _, a := range gotArgs {
			if o, ok := st.want[strings.TrimPrefix(a.Path, "/")]; ok && a.Origin != o {
				t.Errorf("%s: %s is %s, want %s (%+v)", st.name, a.Path, a.Origin, o, a.Matches)
			}
		}
	}
}

// TestMemoKeyIsTheText: an analysis is found again only for the same
// text, integrity and MaxValueBytes — never for a source id: the same id
// with other text, or the same text under another integrity, is analysed
// anew; a source seen before is not.
func TestMemoKeyIsTheText(t *testing.T) {
	var m Memo
	m.NewIndex([]Source{task, bill}, nil)
	before := map[memoKey]*analysis{}
	for k, e := range m.m {
		before[k] = e.a
	}
	tests := []struct {
		name string
		src  Source
		opt  *Options
		new  bool
	}{
		{"same text, same id", bill, nil, false},
		{"same text, another id", Source{ID: "att:copy", Integrity: Untrusted, Text: bill.Text}, nil, false},
		{"same id, other text", Source{ID: bill.ID, Integrity: Untrusted, Text: bill.Text + " Pay " + attackIBAN + "."}, nil, true},
		{"same id and text, trusted", Source{ID: bill.ID, Integrity: Trusted, Text: bill.Text}, nil, true},
		{"same text, another MaxValueBytes", task, &Options{MaxValueBytes: 64}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := len(m.m)
			ix := m.NewIndex([]Source{tt.src}, tt.opt)
			if grew := len(m.m) > n; grew != tt.new {
				t.Fatalf("analysed anew: %v, want %v", grew, tt.new)
			}
			if !reflect.DeepEqual(ix, NewIndex([]Source{tt.src}, tt.opt)) {
				t.Fatal("the memo's index differs from a fresh one")
			}
		})
	}
	for k, a := range before {
		if e := m.m[k]; e == nil || e.a != a {
			t.Fatalf("the analysis of %.20q was made again", k.text)
		}
	}
}

// TestMemoBounded: a Memo holds at most its limit, and a text too large
// to share is analysed but not kept.
func TestMemoBounded(t *testing.T) {
	m := Memo{limit: 64 << 10}
	page := strings.Repeat("Invoice INV-0001 of 100.00 EUR to DE89 3704 0044 0532 0130 00. ", 40)
	for i := range 60 {
		m.NewIndex([]Source{{ID: "p", Integrity: Untrusted, Text: page + strings.Repeat("x", i)}}, nil)
		if m.bytes > m.limit {
			t.Fatalf("after %d builds the memo holds %d bytes, limit %d", i+1, m.bytes, m.limit)
		}
	}
	if len(m.m) < 2 {
		t.Fatalf("the memo keeps %d analyses, want several", len(m.m))
	}
	if m.m[memoKey{page + strings.Repeat("x", 59), false, defaultMaxValueBytes}] == nil {
		t.Fatal("once full, the memo stopped keeping the newest build's analyses")
	}
	n := len(m.m)
	m.NewIndex([]Source{{ID: "h", Integrity: Untrusted, Text: strings.Repeat("a", m.limit/4)}}, nil)
	if len(m.m) != n {
		t.Fatal("a text beyond a quarter of the limit was kept")
	}
}

// TestMemoConcurrent: builds sharing one Memo at once (needs of several
// contexts on one runner) each get their fresh index, while a small limit
// makes them drop each other's analyses.
func TestMemoConcurrent(t *testing.T) {
	m := Memo{limit: 16 << 10}
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			srcs := []Source{task, bill}
			for i := range 20 {
				srcs = append(srcs, Source{ID: fmt.Sprint(g, ":", i), Integrity: Untrusted, Text: fmt.Sprintf("answer %d of %d: IBAN DE%02d 3704 0044 0532 0130 00", i, g, i)})
				if !reflect.DeepEqual(m.NewIndex(srcs, nil), NewIndex(srcs, nil)) {
					errs <- fmt.Sprintf("goroutine %d, build %d: the memo's index differs from a fresh one", g, i)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
