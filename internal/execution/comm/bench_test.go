package comm

import (
	"fmt"
	"strings"
	"testing"
)

// benchPage is about 1 MiB of realistic markup: navigation, articles with
// inline formatting and entities, lists, tables, scripts and styles.
func benchPage() string {
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html><html><head><title>Bench &amp; page</title><style>body{margin:0}</style>` +
		`<script>window.dataLayer=[];function g(){dataLayer.push(arguments)}</script></head><body>`)
	for i := 0; b.Len() < 1<<20; i++ {
		fmt.Fprintf(&b, `<nav><ul><li><a href="/a%d">Home</a></li><li><a href="/b">About</a></li></ul></nav>`+
			`<article class="post" id="p%d"><h2>Heading %d</h2><p>Lorem ipsum <b>dolor</b> sit amet, &ldquo;consectetur&rdquo; `+
			`adipiscing elit &mdash; sed do eiusmod tempor <i>incididunt</i> ut labore et dolore magna aliqua.</p>`+
			`<table><tr><th>k</th><th>v</th></tr><tr><td>%d</td><td>x &lt; y</td></tr></table>`+
			`<script>var x%d = "<p>not text</p>";</script><div hidden>hidden %d</div></article>`+"\n", i, i, i, i, i, i)
	}
	b.WriteString(`</body></html>`)
	return b.String()
}

// BenchmarkHTMLToText reports throughput (MB/s) on ~1 MiB of HTML.
func BenchmarkHTMLToText(b *testing.B) {
	page := benchPage()
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		HTMLToText(page)
	}
}
