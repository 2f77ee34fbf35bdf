package provenance

import (
	"fmt"
	"strings"
	"testing"
)

// benchSources is about 200 KB of realistic context: the task, and web
// pages, mails and files with addresses, amounts and an injection.
func benchSources() []Source {
	srcs := []Source{task}
	for i := range 100 {
		var b strings.Builder
		for j := 0; b.Len() < 2000; j++ {
			fmt.Fprintf(&b, "Invoice INV-%04d-%03d of %d.%02d EUR for customer%d@example.org, see https://shop%d.example.com/orders/%d. "+
				"Payment is due on 2024-%02d-%02d to DE%02d 3704 0044 0532 0130 %02d. ", i, j, 100+j, j, j, i, j, 1+j%12, 1+j%28, i%97, j)
		}
		if i == 50 {
			b.WriteString(bill.Text)
		}
		srcs = append(srcs, Source{ID: fmt.Sprint("att:", i), Integrity: Untrusted, Readers: []string{"alice"}, Text: b.String()})
	}
	return srcs
}

var benchArgs = map[string]any{
	"recipient": "US13 3000 0001 2121 2121 212",
	"amount":    98.7,
	"subject":   "Please send the link www.my-website-234.com/random to jay@google.com",
	"date":      "2024-01-04",
	"cc":        []any{"landlord@rent.example", "customer7@example.org"},
}

func BenchmarkNewIndex(b *testing.B) {
	srcs := benchSources()
	b.SetBytes(int64(len(srcs) * 2000))
	for b.Loop() {
		NewIndex(srcs, nil)
	}
}

func BenchmarkTrace(b *testing.B) {
	ix := NewIndex(benchSources(), nil)
	for b.Loop() {
		ix.Trace(benchArgs)
	}
}

// BenchmarkNewIndexMemo is a traced need's index in a context that grew
// by one label since its last need: every source but the newest is
// memoised.
func BenchmarkNewIndexMemo(b *testing.B) {
	srcs := benchSources()
	var m Memo
	m.NewIndex(srcs, nil)
	b.SetBytes(int64(len(srcs) * 2000))
	i := 0
	for b.Loop() {
		i++
		srcs = append(srcs, Source{ID: fmt.Sprint("new:", i), Integrity: Untrusted, Text: fmt.Sprintf("answer %d: IBAN DE%02d 3704 0044 0532 0130 00", i, i%97)})
		m.NewIndex(srcs, nil)
	}
}
