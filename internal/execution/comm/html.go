package comm

import (
	"html"
	"slices"
	"strings"
)

// HTMLToText converts an HTML document to readable plain text:
//
//   - the <title> comes first, then a blank line;
//   - script, style, noscript, iframe, noembed and noframes content is
//     skipped unparsed (script with HTML's escape rules for "<!--"), and
//     template, svg, math, canvas and object subtrees are left out;
//   - elements a page hides from people but not from a model — the hidden
//     attribute, aria-hidden="true", an inline style with display:none or
//     visibility:hidden — are left out with their subtree (hidden-text
//     prompt injection; TestHTMLToText "hidden");
//   - headings become "# …" lines, paragraphs and blocks are separated by
//     line breaks, list items become "- …" or "1. …", table cells are
//     separated by " | ";
//   - character references are decoded (the full HTML5 table, via the
//     standard library's html.UnescapeString) and whitespace is collapsed,
//     except inside pre, listing and textarea;
//   - attributes are never output.
//
// It never fails: malformed markup is read the way HTML's own parsing rules
// approximately would, and a construct left open at the end of the input
// (a comment, a script, a tag) swallows the rest. The output is valid UTF-8
// and at most a small multiple of the input's size. It is a readable-text
// extractor, not an HTML5 parser: title and textarea are parsed as markup
// rather than as plain text, CSS (classes, external stylesheets, tiny or
// transparent text) is not evaluated, and implied end tags are handled only
// for p, li, dt/dd, tr, td/th and option.
func HTMLToText(src string) string {
	c := converter{src: strings.ToValidUTF8(src, "\uFFFD"), skip: -1, counts: map[string]int{}, known: make([]int32, len(elems)+1)}
	c.run()
	body := c.out.String()
	title := cutUTF8(collapse(c.title.String()), maxTitleBytes)
	switch {
	case title == "":
		return body
	case body == "":
		return title
	}
	return title + "\n\n" + body
}

// converter is one run of HTMLToText: a tokenizer over src that drives the
// element stack and the text writer directly, with no intermediate tree.
type converter struct {
	src    string
	pos    int
	out    textWriter
	title  strings.Builder
	stack  []openElem
	known  []int32        // open elements by elemInfo.id, so an unmatched end tag costs O(1)…
	counts map[string]int // …and by name for unknown elements
	skip   int            // stack depth where a dropped/hidden subtree began; -1 if none
	pre    int            // open preformatted elements
	lists  []listState

	titleDepth int // stack depth of the open <title> + 1; 0 if none
	titleDone  bool
}

func (c *converter) run() {
	for c.pos < len(c.src) {
		i := strings.IndexByte(c.src[c.pos:], '<')
		if i < 0 {
			c.text(c.src[c.pos:])
			return
		}
		if i > 0 {
			c.text(c.src[c.pos : c.pos+i])
			c.pos += i
		}
		c.markup()
	}
}

func isAlpha(b byte) bool { return 'a' <= b|0x20 && b|0x20 <= 'z' }

// markup handles the construct starting at c.src[c.pos] == '<'.
func (c *converter) markup() {
	rest := c.src[c.pos:]
	switch {
	case strings.HasPrefix(rest, "<!--"):
		c.comment()
	case len(rest) < 2:
		c.text("<")
		c.pos++
	case rest[1] == '!' || rest[1] == '?':
		c.bogusComment()
	case rest[1] == '/':
		switch {
		case len(rest) >= 3 && isAlpha(rest[2]):
			if t, ok := c.readTag(c.pos + 2); ok {
				c.endTag(t.name)
			}
		case len(rest) >= 3 && rest[2] == '>':
			c.pos += 3
		case len(rest) == 2:
			c.text("</")
			c.pos += 2
		default:
			c.bogusComment()
		}
	case isAlpha(rest[1]):
		if t, ok := c.readTag(c.pos + 1); ok {
			c.startTag(t)
		}
	default:
		c.text("<")
		c.pos++
	}
}

// comment skips "<!-- … -->" ("--!>" also closes; "<!-->" and "<!--->" are
// complete comments). Unterminated, it runs to the end.
func (c *converter) comment() {
	body := c.src[c.pos+4:]
	if strings.HasPrefix(body, ">") {
		c.pos += 5
		return
	}
	if strings.HasPrefix(body, "->") {
		c.pos += 6
		return
	}
	end, n := strings.Index(body, "-->"), 3
	if j := strings.Index(body, "--!>"); j >= 0 && (end < 0 || j < end) {
		end, n = j, 4
	}
	if end < 0 {
		c.pos = len(c.src)
		return
	}
	c.pos += 4 + end + n
}

// bogusComment skips "<!DOCTYPE …>", "<![CDATA[…>", "<?…>" and "</…>"
// that is not an end tag, up to the next '>'.
func (c *converter) bogusComment() {
	if i := strings.IndexByte(c.src[c.pos:], '>'); i >= 0 {
		c.pos += i + 1
	} else {
		c.pos = len(c.src)
	}
}

type tag struct {
	name   string
	hidden bool
}

// readTag reads a tag name starting at i and its attributes up to the
// closing '>', leaving c.pos after it. Only the attributes that hide an
// element are kept. A tag cut off by the end of input is dropped with
// everything after it (ok false), as HTML's eof-in-tag rule does.
func (c *converter) readTag(i int) (t tag, ok bool) {
	s := c.src
	j := i
	for j < len(s) && !isSpace(s[j]) && s[j] != '/' && s[j] != '>' {
		j++
	}
	t.name = strings.ToLower(s[i:j])
	for {
		for j < len(s) && (isSpace(s[j]) || s[j] == '/') {
			j++
		}
		if j >= len(s) {
			c.pos = len(s)
			return t, false
		}
		if s[j] == '>' {
			c.pos = j + 1
			return t, true
		}
		k := j + 1 // a name may start with '='
		for k < len(s) && !isSpace(s[k]) && s[k] != '/' && s[k] != '>' && s[k] != '=' {
			k++
		}
		name := s[j:k]
		j = k
		for j < len(s) && isSpace(s[j]) {
			j++
		}
		var value string
		if j < len(s) && s[j] == '=' {
			j++
			for j < len(s) && isSpace(s[j]) {
				j++
			}
			if j < len(s) && (s[j] == '"' || s[j] == '\'') {
				end := strings.IndexByte(s[j+1:], s[j])
				if end < 0 {
					c.pos = len(s)
					return t, false
				}
				value, j = s[j+1:j+1+end], j+2+end
			} else {
				k = j
				for k < len(s) && !isSpace(s[k]) && s[k] != '>' {
					k++
				}
				value, j = s[j:k], k
			}
		}
		t.hidden = t.hidden || hides(name, value)
	}
}

// hides reports whether an attribute hides its element from a reader.
func hides(name, value string) bool {
	switch strings.ToLower(name) {
	case "hidden":
		return true
	case "aria-hidden":
		return strings.EqualFold(strings.TrimSpace(value), "true")
	case "style":
		v := strings.ToLower(strings.Join(strings.Fields(html.UnescapeString(value)), ""))
		return strings.Contains(v, "display:none") || strings.Contains(v, "visibility:hidden") ||
			strings.Contains(v, "visibility:collapse")
	}
	return false
}

func (c *converter) writing() bool { return c.skip < 0 && c.titleDepth == 0 }

func (c *converter) text(s string) {
	if c.skip >= 0 {
		return
	}
	if strings.IndexByte(s, '&') >= 0 {
		s = html.UnescapeString(s)
	}
	if c.titleDepth > 0 {
		if c.title.Len() < 4*maxTitleBytes {
			c.title.WriteString(s)
		}
		return
	}
	c.out.write(s, c.pre > 0)
}

func (c *converter) brk(n int) {
	if c.writing() {
		c.out.brk(n)
	}
}

func (c *converter) startTag(t tag) {
	name := t.name
	if c.titleDepth > 0 {
		// Real titles hold no markup; any tag ends one, so an unclosed
		// <title> cannot swallow the page.
		c.popTo(c.titleDepth - 1)
	}
	info := elems[name]
	if info.flags&eRaw != 0 {
		c.skipRawText(name)
		return
	}
	if info.flags&eVoid != 0 {
		switch {
		case !c.writing():
		case name == "br":
			c.out.br()
		case name == "hr":
			c.out.brk(2)
		}
		return
	}
	c.implyEnd(name, info)
	hide := info.flags&eDropped != 0 || t.hidden
	special := hide || info.flags&(ePre|eList) != 0 || name == "title"
	if len(c.stack) >= maxStackDepth && !special {
		return
	}
	c.stack = append(c.stack, openElem{name, info})
	c.count(name, info, 1)
	if c.skip < 0 && hide {
		c.skip = len(c.stack) - 1
	}
	if info.flags&ePre != 0 {
		c.pre++
	}
	if info.flags&eList != 0 {
		c.lists = append(c.lists, listState{ordered: name == "ol"})
	}
	if name == "title" && !c.titleDone && c.skip < 0 {
		c.titleDepth = len(c.stack)
		return
	}
	if !c.writing() {
		return
	}
	if n := info.block(); n > 0 {
		if info.flags&eList != 0 && len(c.lists) > 1 {
			n = 1 // a nested list continues its item
		}
		c.out.brk(n)
	}
	switch name {
	case "li":
		c.out.prefix = c.listPrefix()
	case "h1", "h2", "h3", "h4", "h5", "h6":
		c.out.prefix = "######"[:name[1]-'0'] + " "
	case "td", "th":
		c.out.sep = " | "
	}
}

// implyEnd closes what a start tag implicitly ends: a new <li> ends the
// open one in the same list, and so on. Approximate but enough to keep the
// stack shallow on real pages.
func (c *converter) implyEnd(name string, info elemInfo) {
	top := ""
	if len(c.stack) > 0 {
		top = c.stack[len(c.stack)-1].name
	}
	switch {
	case name == "li":
		c.closeWithin("li", "ul", "ol", "menu", "dir")
	case name == "dt" || name == "dd":
		c.closeWithin("dt", "dl")
		c.closeWithin("dd", "dl")
	case name == "tr":
		c.closeWithin("tr", "table")
	case name == "td" || name == "th":
		c.closeWithin("td", "tr", "table")
		c.closeWithin("th", "tr", "table")
	case name == "option":
		c.closeWithin("option", "select", "datalist")
	case top == "p" && info.flags&eClosesP != 0:
		c.popTo(len(c.stack) - 1)
	}
}

// closeWithin pops up to and including the nearest open want, unless one
// of the boundary elements is nearer.
func (c *converter) closeWithin(want string, boundary ...string) {
	if c.open(want) == 0 {
		return
	}
	for i := len(c.stack) - 1; i >= 0; i-- {
		switch n := c.stack[i].name; {
		case n == want:
			c.popTo(i)
			return
		case slices.Contains(boundary, n):
			return
		}
	}
}

func (c *converter) endTag(name string) {
	switch {
	case name == "br":
		if c.writing() {
			c.out.br()
		}
		return
	case c.open(name) == 0:
		if name == "p" {
			c.brk(2) // "</p>" with no open p still ends a paragraph
		}
		return
	}
	for i := len(c.stack) - 1; i >= 0; i-- {
		if c.stack[i].name == name {
			c.popTo(i)
			return
		}
	}
}

func (c *converter) count(name string, info elemInfo, d int) {
	switch {
	case info.id != 0:
		c.known[info.id] += int32(d)
	case c.counts[name]+d == 0:
		delete(c.counts, name) // so many distinct custom names cannot pile up
	default:
		c.counts[name] += d
	}
}

// open is how many elements named name are open.
func (c *converter) open(name string) int {
	if info, ok := elems[name]; ok {
		return int(c.known[info.id])
	}
	return c.counts[name]
}

// popTo pops the stack down to length n, closing each element.
func (c *converter) popTo(n int) {
	for len(c.stack) > n {
		e := c.stack[len(c.stack)-1]
		c.stack = c.stack[:len(c.stack)-1]
		c.count(e.name, e.info, -1)
		if e.info.flags&ePre != 0 {
			c.pre--
		}
		if e.info.flags&eList != 0 && len(c.lists) > 0 {
			c.lists = c.lists[:len(c.lists)-1]
		}
		if c.skip >= len(c.stack) {
			c.skip = -1
		}
		if c.titleDepth > len(c.stack) {
			c.titleDepth, c.titleDone = 0, true
			continue
		}
		if b := e.info.block(); b > 0 && c.writing() {
			if e.info.flags&eList != 0 && len(c.lists) > 0 {
				b = 1
			}
			c.out.brk(b)
			if e.name == "li" || len(e.name) == 2 && e.name[0] == 'h' {
				c.out.prefix = "" // an empty item or heading leaves no marker
			}
		}
	}
}

// skipRawText skips a raw text element's content and its end tag. Only
// "</name" followed by whitespace, '/' or '>' ends it (case-insensitive);
// for script, HTML's escaped states apply: inside "<!--", a nested
// "<script>" makes the next "</script>" part of the content, which is how a
// browser reads it (TestHTMLToText "script escape").
func (c *converter) skipRawText(name string) {
	s := c.src
	j := c.pos
	const (
		data = iota
		escaped
		doubleEscaped
	)
	state := data
	for {
		k := strings.IndexAny(s[j:], "<-")
		if k < 0 {
			c.pos = len(s)
			return
		}
		j += k
		if s[j] == '-' {
			n := 0
			for j+n < len(s) && s[j+n] == '-' {
				n++
			}
			if state != data && n >= 2 && j+n < len(s) && s[j+n] == '>' {
				state = data
			}
			j += n
			continue
		}
		switch {
		case name == "script" && state == data && strings.HasPrefix(s[j:], "<!--"):
			state = escaped
			j += 2 // leave the dashes for the run above: "<!-->" closes at once
		case name == "script" && state == escaped && tagAt(s, j+1, "script"):
			state = doubleEscaped
			j++
		case s[j+1:] != "" && s[j+1] == '/' && tagAt(s, j+2, name):
			if state == doubleEscaped {
				state = escaped
				j += 2
				continue
			}
			if _, ok := c.readTag(j + 2); !ok {
				c.pos = len(s)
			}
			return
		default:
			j++
		}
	}
}

// tagAt reports whether s[i:] starts with name (ASCII case-insensitive)
// followed by whitespace, '/' or '>' — a tag name that ends there.
func tagAt(s string, i int, name string) bool {
	if len(s)-i <= len(name) || !strings.EqualFold(s[i:i+len(name)], name) {
		return false
	}
	d := s[i+len(name)]
	return isSpace(d) || d == '/' || d == '>'
}
