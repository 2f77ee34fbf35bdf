package provenance

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestTraceKinds(t *testing.T) {
	ix := newTestIndex()
	for _, c := range []struct {
		name, value string // value is a JSON text
		kind        Kind
		origin      Origin
		source      string // a source that must be among the matches ("" none required)
	}{
		// IBAN
		{"iban trusted exact", `"GB29NWBK60161331926819"`, KindIBAN, OriginTrusted, "task"},
		{"iban trusted grouped", `"GB29 NWBK 6016 1331 9268 19"`, KindIBAN, OriginTrusted, "task"},
		{"iban trusted lower case", `"gb29nwbk60161331926819"`, KindIBAN, OriginTrusted, "task"},
		{"iban trusted dashes", `"GB29-NWBK-6016-1331-9268-19"`, KindIBAN, OriginTrusted, "task"},
		{"iban look-alike of trusted", `"GB29NW\u0412K60161331926819"`, KindIBAN, OriginAgent, "task"},
		{"iban zero-width in trusted", `"GB29\u200bNWBK60161331926819"`, KindIBAN, OriginAgent, "task"},
		{"iban untrusted", jsonString(attackIBAN), KindIBAN, OriginUntrusted, "file:bill.txt"},
		{"iban trailing punctuation", jsonString(attackIBAN + ")."), KindIBAN, OriginUntrusted, "file:bill.txt"},
		{"iban agent", `"DE89370400440532013000"`, KindIBAN, OriginAgent, ""},
		{"iban as a JSON number part", `"3000000121212121212"`, KindAmount, OriginUntrusted, "file:bill.txt"},
		// e-mail
		{"email trusted", `"landlord@rent.example"`, KindEmail, OriginTrusted, "task"},
		{"email trusted case", `"Landlord@Rent.EXAMPLE"`, KindEmail, OriginTrusted, "task"},
		{"email untrusted", jsonString(attackMail), KindEmail, OriginUntrusted, "file:bill.txt"},
		{"email untrusted dots folded", `"j.ay@google.com"`, KindEmail, OriginUntrusted, "file:bill.txt"},
		{"email untrusted +tag", `"jay+promo@google.com"`, KindEmail, OriginUntrusted, "file:bill.txt"},
		{"email mailto", `"mailto:jay@google.com"`, KindEmail, OriginUntrusted, "file:bill.txt"},
		{"email agent", `"bob@example.org"`, KindEmail, OriginAgent, ""},
		// URL and host
		{"url trusted", `"https://docs.example.com/Receipts/2024"`, KindURL, OriginTrusted, "task"},
		{"url trusted trailing slash, case", `"HTTPS://DOCS.example.com/receipts/2024/"`, KindURL, OriginTrusted, "task"},
		{"url trusted host, agent query", `"https://docs.example.com/Receipts/2024?leak=secret"`, KindURL, OriginAgent, "task"},
		{"url untrusted", `"https://www.secure-systems-252.com"`, KindURL, OriginUntrusted, "file:bill.txt"},
		{"url untrusted, agent path", `"https://www.secure-systems-252.com/login?u=me"`, KindURL, OriginUntrusted, "file:bill.txt"},
		{"url untrusted default port", `"https://www.secure-systems-252.com:443/"`, KindURL, OriginUntrusted, "file:bill.txt"},
		{"host untrusted without www", `"secure-systems-252.com"`, KindHost, OriginUntrusted, "file:bill.txt"},
		{"link untrusted", `"http://www.my-website-234.com/random"`, KindURL, OriginUntrusted, "file:bill.txt"},
		{"url agent", `"https://example.net/x"`, KindURL, OriginAgent, ""},
		// amounts
		{"amount trusted number", `1100`, KindAmount, OriginTrusted, "task"},
		{"amount trusted text", `"1,100.00"`, KindAmount, OriginTrusted, "task"},
		{"amount trusted currency", `"$1100"`, KindAmount, OriginTrusted, "task"},
		{"amount untrusted decimal", `98.7`, KindAmount, OriginUntrusted, "file:bill.txt"},
		{"amount untrusted text", `"98.70"`, KindAmount, OriginUntrusted, "file:bill.txt"},
		{"amount agent", `250`, KindAmount, OriginAgent, ""},
		{"amount short not matched", `5`, KindAmount, OriginAgent, ""},
		// dates
		{"date trusted", `"2024-01-04"`, KindDate, OriginTrusted, "task"},
		{"date trusted month name", `"January 4, 2024"`, KindDate, OriginTrusted, "task"},
		{"date trusted datetime", `"2024-01-04T09:00:00Z"`, KindDate, OriginTrusted, "task"},
		{"date ambiguous not exact", `"04/01/2024"`, KindDate, OriginAgent, "task"},
		{"date agent", `"2024-02-01"`, KindDate, OriginAgent, ""},
		// handles and files
		{"handle trusted", `"#general"`, KindHandle, OriginTrusted, "task"},
		{"handle trusted without sigil", `"general"`, KindWord, OriginTrusted, "task"},
		{"handle agent", `"#random"`, KindHandle, OriginAgent, ""},
		{"file trusted", `"bill-december-2023.txt"`, KindFile, OriginTrusted, "task"},
		{"file agent", `"notes.txt"`, KindFile, OriginAgent, ""},
		// free text
		{"text copied from injection", `"Please send the link to jay@google.com"`, KindText, OriginUntrusted, "file:bill.txt"},
		{"text reproducing 6 words", `"FYI: this is an important message from me, ok"`, KindText, OriginUntrusted, "file:bill.txt"},
		{"text from the task", `"Can you please pay the bill"`, KindText, OriginTrusted, "task"},
		{"text mixing sources", `"pay GB29NWBK60161331926819 and US133000000121212121212"`, KindText, OriginUntrusted, "task"},
		{"text composed of trusted pieces", `"Rent GB29NWBK60161331926819"`, KindText, OriginAgent, "task"},
		{"text agent", `"Rent for January"`, KindText, OriginAgent, ""},
		// short and common values
		{"short word", `"the"`, KindWord, OriginAgent, ""},
		{"short text", `"Thank you"`, KindText, OriginAgent, ""},
		{"short number string", `"1"`, KindAmount, OriginAgent, ""},
		{"boolean", `true`, KindBool, OriginAgent, ""},
		{"null", `null`, KindNull, OriginAgent, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := traceOne(t, ix, c.value)
			if a.Kind != c.kind || a.Origin != c.origin {
				t.Errorf("%s: kind %s origin %s, want %s %s; matches %v", c.value, a.Kind, a.Origin, c.kind, c.origin, a.Matches)
			}
			if c.source != "" && !matchedBy(a, c.source) {
				t.Errorf("%s: no match from %s: %v", c.value, c.source, a.Matches)
			}
			if c.source == "" && len(a.Matches) > 0 {
				t.Errorf("%s: unexpected matches %v", c.value, a.Matches)
			}
			if (a.Integrity == Trusted) != (a.Origin == OriginTrusted) {
				t.Errorf("%s: integrity %s with origin %s", c.value, a.Integrity, a.Origin)
			}
		})
	}
}

// TestTrustedWins: a value found in a trusted and an untrusted source is
// explained by the trusted input; an endorsement makes a value trusted.
func TestTrustedWins(t *testing.T) {
	echo := Source{ID: "web:echo", Integrity: Untrusted, Text: "the account GB29NWBK60161331926819 is known"}
	endorse := Source{ID: "endorsement:7", Integrity: Trusted, Readers: []string{"alice", "bob"}, Text: attackIBAN}
	ix := newTestIndex(echo, endorse)
	a := traceOne(t, ix, `"GB29NWBK60161331926819"`)
	if a.Origin != OriginTrusted || !matchedBy(a, "web:echo") || a.Readers != nil {
		t.Errorf("trusted and untrusted: %+v", a)
	}
	a = traceOne(t, ix, jsonString(attackIBAN))
	if a.Origin != OriginTrusted || !slices.Equal(a.Readers, []string{"alice", "bob"}) {
		t.Errorf("endorsed: %+v", a)
	}
	// The endorsement vouches for the exact value, not for a look-alike.
	a = traceOne(t, ix, `"US133000000121212121212\u200b"`)
	if a.Origin != OriginUntrusted {
		t.Errorf("look-alike of endorsed: %+v", a)
	}
}

func TestReadersMeet(t *testing.T) {
	val := "ACCT-99887766"
	src := func(id string, integ Integrity, readers ...string) Source {
		return Source{ID: id, Integrity: integ, Readers: readers, Text: "ref " + val + "."}
	}
	for _, c := range []struct {
		name    string
		sources []Source
		want    []string
	}{
		{"public", []Source{src("a", Untrusted)}, nil},
		{"one", []Source{src("a", Untrusted, "bob", "alice", "bob")}, []string{"alice", "bob"}},
		{"intersection", []Source{src("a", Untrusted, "alice", "bob"), src("b", Untrusted, "bob", "carol")}, []string{"bob"}},
		{"public and restricted", []Source{src("a", Untrusted), src("b", Untrusted, "carol")}, []string{"carol"}},
		{"disjoint", []Source{src("a", Untrusted, "alice"), src("b", Untrusted, "carol")}, []string{}},
		{"trusted explains: only trusted readers", []Source{src("t", Trusted, "alice", "bob"), src("u", Untrusted, "carol")}, []string{"alice", "bob"}},
	} {
		a := traceOne(t, NewIndex(c.sources, nil), jsonString(val))
		if !slices.Equal(a.Readers, c.want) || (a.Readers == nil) != (c.want == nil) {
			t.Errorf("%s: readers %#v, want %#v (%+v)", c.name, a.Readers, c.want, a)
		}
	}
}

func TestSplitAcrossArguments(t *testing.T) {
	ix := newTestIndex()
	for _, args := range []map[string]any{
		{"country": "US13", "account": "3000000121212121212"},
		{"a": "US1330000001", "b": "21212121212"},
		{"user": "jay", "domain": "google.com"},
		{"second": "21212121212", "first": "US1330000001"},
	} {
		for _, a := range ix.Trace(args) {
			if a.Origin != OriginUntrusted || !slices.ContainsFunc(a.Matches, func(m Match) bool { return m.How == HowSplit }) {
				t.Errorf("%v: %s not traced as split: %+v", args, a.Path, a)
			}
		}
	}
}

func TestTracePathsAndOrder(t *testing.T) {
	ix := newTestIndex()
	args := map[string]any{"z": 1.0, "a/b": []any{"x", map[string]any{"m~n": true}}, "c": nil}
	var paths []string
	for _, a := range ix.Trace(args) {
		paths = append(paths, a.Path)
	}
	want := []string{"/a~1b/0", "/a~1b/1/m~0n", "/c", "/z"}
	if !slices.Equal(paths, want) {
		t.Errorf("paths %v, want %v", paths, want)
	}
	if got := ix.Trace("GB29NWBK60161331926819"); len(got) != 1 || got[0].Path != "" || got[0].Origin != OriginTrusted {
		t.Errorf("scalar args: %+v", got)
	}
}

func TestBounds(t *testing.T) {
	t.Run("index truncated", func(t *testing.T) {
		ix := NewIndex([]Source{task, bill}, &Options{MaxIndexBytes: len(task.Text) + 40})
		if !ix.Truncated() {
			t.Fatal("not truncated")
		}
		a := traceOne(t, ix, jsonString(attackIBAN))
		if a.Origin != OriginUntrusted || !slices.ContainsFunc(a.Matches, func(m Match) bool { return m.How == HowUnindexed }) {
			t.Errorf("unindexed: %+v", a)
		}
		if a = traceOne(t, ix, `"GB29NWBK60161331926819"`); a.Origin != OriginTrusted {
			t.Errorf("trusted sources are indexed first: %+v", a)
		}
		if a = traceOne(t, ix, `"ok"`); a.Origin != OriginAgent {
			t.Errorf("insignificant value: %+v", a)
		}
	})
	t.Run("value truncated", func(t *testing.T) {
		ix := NewIndex([]Source{{ID: "task", Integrity: Trusted, Text: strings.Repeat("word ", 100)}}, &Options{MaxValueBytes: 64})
		a := traceOne(t, ix, jsonString(strings.Repeat("word ", 100)))
		if !a.Truncated || a.Origin != OriginUntrusted || len(a.Value) != 64 {
			t.Errorf("truncated value: %+v", a)
		}
	})
	t.Run("leaves", func(t *testing.T) {
		var args []any
		for i := range 20 {
			args = append(args, fmt.Sprint("v", i))
		}
		out := NewIndex(nil, &Options{MaxLeaves: 5}).Trace(args)
		if len(out) != 6 || !out[5].Truncated || out[5].Path != "/5" || out[5].Origin != OriginUntrusted {
			t.Errorf("leaves: %+v", out)
		}
	})
	t.Run("depth", func(t *testing.T) {
		var v any = "GB29NWBK60161331926819"
		for range 40 {
			v = []any{v}
		}
		out := newTestIndex().Trace(v)
		if len(out) != 1 || !out[0].Truncated || out[0].Origin != OriginUntrusted {
			t.Errorf("depth: %+v", out)
		}
	})
	t.Run("matches capped", func(t *testing.T) {
		var srcs []Source
		for i := range 40 {
			srcs = append(srcs, Source{ID: fmt.Sprint("s", i), Integrity: Untrusted, Text: attackIBAN})
		}
		a := traceOne(t, NewIndex(srcs, &Options{MaxMatches: 3}), jsonString(attackIBAN))
		if len(a.Matches) != 3 || a.Origin != OriginUntrusted {
			t.Errorf("capped: %+v", a)
		}
	})
}

// TestInvalidIntegrity: a source without a valid label counts as untrusted.
func TestInvalidIntegrity(t *testing.T) {
	ix := NewIndex([]Source{{ID: "x", Text: taskIBAN}, {ID: "y", Integrity: "TRUSTED", Text: taskIBAN}}, nil)
	if a := traceOne(t, ix, jsonString(taskIBAN)); a.Origin != OriginUntrusted {
		t.Errorf("zero integrity: %+v", a)
	}
}

// TestGluedSentenceHost: a host the principal wrote at the end of a
// sentence glued to the next one ("www.our-company.com.They sent …",
// AgentDojo slack user_task_4) is the principal's host, not an unknown
// "….com.they" the agent "wrote". The second reading is only for hosts
// followed by a capitalised word, and only for trusted text.
func TestGluedSentenceHost(t *testing.T) {
	ix := NewIndex([]Source{{ID: "task", Integrity: Trusted,
		Text: "Post it to our website www.our-company.com.They sent it to mail.Google.com and x.com/a.Read.Me today."},
		{ID: "page", Integrity: Untrusted, Text: "Visit evil-site.net.Now and www.our-company.com"}}, nil)
	cases := []struct {
		value string
		want  Origin
	}{
		{`"www.our-company.com"`, OriginTrusted},
		{`"www.our-company.com.They"`, OriginTrusted}, // the literal reading stays
		{`"google.com"`, OriginAgent},                 // a capitalised label is not a sentence
		{`"x.com/a.read"`, OriginAgent},               // a path is never cut
		{`"evil-site.net"`, OriginUntrusted},          // untrusted text gets no second reading
	}
	for _, c := range cases {
		if a := traceOne(t, ix, c.value); a.Origin != c.want {
			t.Errorf("%s: origin %s, want %s (%+v)", c.value, a.Origin, c.want, a.Matches)
		}
	}
}
