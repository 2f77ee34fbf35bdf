package report

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestReportEscapesTheTrail: a principal is an OAuth subject the identity
// provider chose; printed raw, a newline forged a report line and an
// escape sequence reached the operator's terminal. Interrupted calls were
// counted in "N calls" and missing from the outcome table.
func TestReportEscapesTheTrail(t *testing.T) {
	principal := "https://idp.example|eve\n| Pools Used | /etc/shadow |\x1b[2J\u202e"
	rs, calls := trail(principal, "docs", nil, []byte{0, 6, 48, 48, 34})
	rep, err := Build(context.Background(), rs, "sess")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	rep.WriteMarkdown(&b)
	out := b.String()
	if strings.ContainsAny(out, "\x1b\u202e") || strings.Contains(out, "\n| Pools Used | /etc/shadow |") {
		t.Fatalf("the principal reached the report raw:\n%s", out)
	}
	if !strings.Contains(out, `eve\u000a\| Pools Used \| /etc/shadow \|\u001b[2J\u202e`) || !strings.Contains(out, "| interrupted | 2 |") {
		t.Fatalf("the principal is not escaped as expected:\n%s", out)
	}
	sum := 0
	for _, m := range outcomeRE.FindAllStringSubmatch(out, -1) {
		n := 0
		for _, c := range m[1] {
			n = n*10 + int(c-'0')
		}
		sum += n
	}
	if sum != calls {
		t.Fatalf("the outcome table counts %d of %d calls:\n%s", sum, calls, out)
	}
}
