package comm

import (
	"strings"
	"testing"
)

func TestHTMLToText(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "hello   world", "hello world"},
		{"title first", "<html><head><title> My\n Page </title></head><body><p>x</p></body></html>", "My Page\n\nx"},
		{"title only", "<title>T</title>", "T"},
		{"unclosed title ends at next tag", "<title>T<p>body", "T\n\nbody"},
		{"svg title ignored", "<svg><title>icon</title></svg><p>x</p>", "x"},
		{"headings", "<h1>One</h1><h3>Three</h3>text", "# One\n\n### Three\n\ntext"},
		{"paragraphs", "<p>a</p><p>b</p>", "a\n\nb"},
		{"implied p end", "<p>a<p>b<div>c</div>", "a\n\nb\n\nc"},
		{"div lines", "<div>a</div><div>b</div>", "a\nb"},
		{"br", "a<br>b<br/><br>c", "a\nb\n\nc"},
		{"inline", "a <b>bold</b> and <i>it</i>.", "a bold and it."},
		{"list", "<ul><li>one<li>two</ul>", "- one\n- two"},
		{"ordered", "<ol><li>a</li><li>b</li></ol>", "1. a\n2. b"},
		{"nested list", "<ul><li>a<ul><li>b</li></ul></li><li>c</li></ul>", "- a\n  - b\n- c"},
		{"empty items leave nothing", "<ul><li><li><li>x</ul>", "- x"},
		{"table", "<table><tr><th>h1<th>h2<tr><td>1<td>2</table>", "h1 | h2\n1 | 2"},
		{"pre keeps whitespace", "<p>a</p><pre>  x\n    y</pre>", "a\n\n  x\n    y"},
		{"entities", "&amp; &lt;b&gt; &copy; &#65; &#x42; &notin; &nbsp;|", "& <b> © A B ∉ \u00a0|"},
		{"entity NUL", "a&#0;b", "a\uFFFDb"},
		{"bare ampersand and lt", "a & b < c", "a & b < c"},
		{"script dropped", "a<script>alert('x')</script>b", "ab"},
		{"script case and attrs", "a<SCRIPT type=module>x</ScRiPt >b", "ab"},
		{"script self-closing is not", "a<script/>x</script>b", "ab"},
		{"script fake end", "a<script>x</scripty>y</script>b", "ab"},
		{"script with tags inside", "a<script>document.write('<p>hi</p>')</script>b", "ab"},
		{"script escape", "a<script><!--<script></script>LEAK</script>b", "ab"},
		{"script escaped closes", "a<script><!-- x --></script>b", "ab"},
		{"script abrupt escape", "a<script><!--></script>b", "ab"},
		{"script unclosed", "a<script>x", "a"},
		{"style", "<style>p{color:red}</style>x", "x"},
		{"noscript", "<noscript>enable js</noscript>x", "x"},
		{"template", "<template><p>t</p></template>x", "x"},
		{"iframe", "<iframe>fallback</iframe>x", "x"},
		{"svg text", "<svg><text>s</text></svg>x", "x"},
		{"comment", "a<!-- hidden <p>x</p> -->b", "ab"},
		{"comment abrupt", "a<!-->b<!--->c", "abc"},
		{"comment bang close", "a<!-- x --!>b", "ab"},
		{"comment unclosed", "a<!-- b", "a"},
		{"doctype and pi", "<!DOCTYPE html><?xml x?>a", "a"},
		{"cdata", "<![CDATA[x]]>a", "a"},
		{"hidden", "a<div hidden>secret</div>b", "a\nb"},
		{"hidden nested", "<div hidden><p>s<div>t</div></p></div>ok", "ok"},
		{"aria-hidden", "a<span aria-hidden=\"true\">secret</span>b", "ab"},
		{"aria-hidden false", "a<span aria-hidden=false>shown</span>b", "ashownb"},
		{"display none", "a<span style=\"color:red; DISPLAY : none\">secret</span>b", "ab"},
		{"visibility hidden", "a<p style='visibility:hidden'>secret</p>b", "a\n\nb"},
		{"attributes never output", `<a href="https://x" title="t">link</a>`, "link"},
		{"quoted > in attribute", `<a title="a>b">x</a>`, "x"},
		{"unterminated tag", "a<b title='x", "a"},
		{"lone lt", "1 < 2 and a<3", "1 < 2 and a<3"},
		{"end tag junk", "a</ 3>b</>c", "abc"},
		{"unmatched end", "a</div></p>b", "a\n\nb"},
		{"invalid utf8", "a\xffb", "a\uFFFDb"},
		{"textarea kept", "<textarea>  typed\n text</textarea>", "  typed\n text"},
		{"nul dropped", "a\x00b", "ab"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := HTMLToText(tt.in); got != tt.want {
				t.Errorf("HTMLToText(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestHTMLToTextBounded: hostile nesting cannot blow up time or output.
func TestHTMLToTextBounded(t *testing.T) {
	for name, in := range map[string]string{
		"deep lists":  strings.Repeat("<ol><li>x", 50000),
		"deep divs":   strings.Repeat("<div>", 100000) + "x" + strings.Repeat("</span>", 100000),
		"many ends":   strings.Repeat("<div>", 5000) + strings.Repeat("</div></b>", 100000),
		"deep hidden": strings.Repeat("<div hidden>", 100000) + "x",
		"brs":         strings.Repeat("<br>", 100000) + "x",
	} {
		out := HTMLToText(in)
		if len(out) > 4*len(in)+64 {
			t.Errorf("%s: %d bytes out of %d in", name, len(out), len(in))
		}
	}
}
