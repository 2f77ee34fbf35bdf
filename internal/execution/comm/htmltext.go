package comm

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Element tables for HTMLToText.
var (
	// rawText elements hold text that is not markup and is never shown:
	// their content is skipped up to the matching end tag without being
	// tokenized, so "<script>…</script>" can never leak code (or a prompt
	// hidden in code) into the text. noscript is parsed as raw text, as a
	// browser with scripting on does.
	rawText = map[string]bool{"script": true, "style": true, "noscript": true, "iframe": true, "noembed": true, "noframes": true}

	// dropped elements are parsed as markup but their whole subtree is
	// left out: inert templates, graphics and embedded objects.
	dropped = map[string]bool{"template": true, "svg": true, "math": true, "canvas": true, "object": true}

	// void elements have no end tag and are never pushed.
	void = map[string]bool{"area": true, "base": true, "br": true, "col": true, "embed": true, "hr": true, "img": true,
		"input": true, "keygen": true, "link": true, "meta": true, "param": true, "source": true, "track": true, "wbr": true}

	// block elements start and end on their own line; the value is the
	// number of newlines around them (2 = a blank line, a paragraph).
	block = map[string]int{
		"p": 2, "blockquote": 2, "pre": 2, "listing": 2, "table": 2, "ul": 2, "ol": 2, "menu": 2, "dl": 2, "hr": 2,
		"h1": 2, "h2": 2, "h3": 2, "h4": 2, "h5": 2, "h6": 2, "figure": 2,
		"address": 1, "article": 1, "aside": 1, "body": 1, "caption": 1, "center": 1, "dd": 1, "details": 1,
		"dialog": 1, "dir": 1, "div": 1, "dt": 1, "fieldset": 1, "figcaption": 1, "footer": 1, "form": 1,
		"header": 1, "hgroup": 1, "legend": 1, "li": 1, "main": 1, "nav": 1, "option": 1, "section": 1,
		"summary": 1, "tr": 1, "textarea": 1, "title": 1,
	}

	// closesP: a start tag of these implicitly ends an open <p>, as in
	// HTML's parsing rules; without it sloppy pages grow the stack.
	closesP = map[string]bool{"p": true, "div": true, "ul": true, "ol": true, "menu": true, "dl": true, "table": true,
		"pre": true, "listing": true, "blockquote": true, "section": true, "article": true, "aside": true, "header": true,
		"footer": true, "nav": true, "main": true, "form": true, "figure": true, "hr": true, "address": true, "details": true,
		"h1": true, "h2": true, "h3": true, "h4": true, "h5": true, "h6": true, "fieldset": true, "center": true}

	preformatted = map[string]bool{"pre": true, "listing": true, "textarea": true, "plaintext": true}
	lists        = map[string]bool{"ul": true, "ol": true, "menu": true, "dir": true}

	// elems folds the tables above into one lookup per tag.
	elems = foldElems()
)

// elemInfo is what the converter knows about an element name: its flags,
// its block break count and, for known names, a small id that indexes the
// open-element counts (unknown names are counted in a map).
type elemInfo struct {
	flags uint8
	brk   uint8
	id    uint8
}

const (
	eRaw uint8 = 1 << iota
	eDropped
	eVoid
	eClosesP
	ePre
	eList
)

func (e elemInfo) block() int { return int(e.brk) }

func foldElems() map[string]elemInfo {
	m := map[string]elemInfo{}
	for flag, set := range map[uint8]map[string]bool{
		eRaw: rawText, eDropped: dropped, eVoid: void, eClosesP: closesP, ePre: preformatted, eList: lists,
	} {
		for name, on := range set {
			if on {
				e := m[name]
				e.flags |= flag
				m[name] = e
			}
		}
	}
	for name, n := range block {
		e := m[name]
		e.brk = uint8(n)
		m[name] = e
	}
	for i, name := range slices.Sorted(maps.Keys(m)) {
		e := m[name]
		e.id = uint8(i + 1) // ids 1…len(m); 0 means unknown
		m[name] = e
	}
	return m
}

// openElem is one entry of the converter's element stack.
type openElem struct {
	name string
	info elemInfo
}

// Bounds that keep the output within a small multiple of the input: a
// hostile page of "<ul><li>x" cannot make indentation grow without limit.
const (
	maxListIndent = 3    // nesting levels that add indentation
	maxStackDepth = 4096 // ordinary elements tracked; deeper ones are not pushed
	maxTitleBytes = 1024
)

// textWriter accumulates readable text: whitespace collapsed outside
// preformatted elements, blocks separated by at most one blank line, and a
// pending line prefix (list bullet, heading marker) that is written only if
// text follows, so empty list items cost nothing.
type textWriter struct {
	b         strings.Builder
	nl        int    // newlines owed before the next text (0–2)
	space     bool   // a space owed before the next text
	sep       string // a cell separator owed before the next text
	prefix    string // line prefix owed before the next text
	started   bool
	lineStart bool
}

// brk asks for n line breaks before the next text.
func (w *textWriter) brk(n int) {
	w.nl = max(w.nl, n)
}

// br is a hard line break: consecutive ones add up (to a blank line).
func (w *textWriter) br() {
	if w.started {
		w.nl = min(w.nl+1, 2)
	}
}

func (w *textWriter) flush() {
	if w.started {
		switch {
		case w.nl > 0:
			w.b.WriteString("\n\n"[:w.nl])
			w.lineStart = true
		case w.sep != "" && !w.lineStart:
			w.b.WriteString(w.sep)
		case w.space && !w.lineStart:
			w.b.WriteByte(' ')
		}
	}
	w.nl, w.space, w.sep = 0, false, ""
	if w.prefix != "" {
		w.b.WriteString(w.prefix)
		w.prefix = ""
	}
	w.started, w.lineStart = true, false
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }

// write adds text, collapsing whitespace unless pre. NUL is dropped.
func (w *textWriter) write(s string, pre bool) {
	if pre {
		s = strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(s, "\x00", ""), "\r\n", "\n"), "\r", "\n")
		if s == "" {
			return
		}
		w.flush()
		w.b.WriteString(s)
		w.lineStart = s[len(s)-1] == '\n'
		return
	}
	for len(s) > 0 {
		if isSpace(s[0]) || s[0] == 0 {
			if s[0] != 0 {
				w.space = true
			}
			s = s[1:]
			continue
		}
		n := 1
		for n < len(s) && !isSpace(s[n]) && s[n] != 0 {
			n++
		}
		w.flush()
		w.b.WriteString(s[:n])
		s = s[n:]
	}
}

func (w *textWriter) String() string {
	return strings.TrimRight(w.b.String(), " \t\n")
}

// listState is one open list, for bullets and numbering.
type listState struct {
	ordered bool
	n       int
}

func (c *converter) listPrefix() string {
	if len(c.lists) == 0 {
		return "- "
	}
	l := &c.lists[len(c.lists)-1]
	indent := strings.Repeat("  ", min(len(c.lists)-1, maxListIndent))
	if l.ordered {
		l.n++
		return indent + strconv.Itoa(l.n) + ". "
	}
	return indent + "- "
}

// collapse squeezes whitespace runs to one space and trims, for the title.
func collapse(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// cutUTF8 shortens s to at most n bytes without splitting a rune.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
