package yamlfile

import (
	"regexp"
	"strings"
)

// The canonical style's two choices beyond the YAML library's block
// output (issue 24 item 7: `policy fmt` called the README's style and the
// shipped demo "not formatted"; there is now one style, and the shipped
// files are in it — TestShippedYAMLIsFormatted):
//
//   - a sequence of plain or quoted one-line scalars, with no comment
//     inside, is written in flow style when its line fits in MaxFlowLine
//     bytes: `allow: [pool.*, comm.search]`;
//   - a blank line precedes every top-level key but the first (and the
//     comment lines right above it), so the sections stand apart;
//   - the end-of-line comments of consecutive lines start in one column,
//     one space after the longest of those lines; a one-line comment
//     above a list that becomes flow ends its key's line instead (the
//     YAML library moves `allow: [a] # why` there).

// MaxFlowLine is the longest line a flow sequence is written on.
const MaxFlowLine = 100

var (
	// keyLine is a line that is only a key (its value is on the next
	// lines), possibly as the first key of a sequence item ("- argv:").
	keyLine = regexp.MustCompile(`^(\s*(?:- )*)([^\s#-][^#]*?|-[^\s#][^#]*?):$`)
	// itemLine is a block sequence item: indentation and the item's text.
	itemLine = regexp.MustCompile(`^(\s*)- (.+)$`)
	// flowSafe is a scalar that reads the same inside [ , ]: a double- or
	// single-quoted string, or a plain scalar without flow indicators,
	// comment or mapping markers, that does not start with an indicator.
	flowSafe = regexp.MustCompile(`^(?:"(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^-?:,\[\]{}#&*!|>'"%@` + "`" + `\s][^,\[\]{}#]*)$`)
	// blockScalar ends a line whose value is a literal or folded block.
	blockScalar = regexp.MustCompile(`(?:^|[\s:-])[|>][-+0-9]*$`)
)

// canonicalStyle applies the two choices to the library's block output.
func canonicalStyle(out []byte) []byte {
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	lines = rootSequenceAtColumnZero(lines)
	lines = flowScalarLists(lines)
	lines = sectionBreaks(lines)
	lines = alignComments(lines)
	return []byte(strings.Join(lines, "\n") + "\n")
}

// rootSequenceAtColumnZero undoes the library's indentation of a document
// that is a sequence ("  - a" at the root), as it is of every nested one.
func rootSequenceAtColumnZero(lines []string) []string {
	for _, l := range lines {
		if t := strings.TrimSpace(l); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if !strings.HasPrefix(l, "  -") {
			return lines
		}
		break
	}
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "  ")
	}
	return lines
}

func indentOf(s string) int { return len(s) - len(strings.TrimLeft(s, " ")) }

// inBlockScalar marks the lines that belong to a literal or folded block
// scalar's content: they are text, never keys or items.
func inBlockScalar(lines []string) []bool {
	in := make([]bool, len(lines))
	for i := 0; i < len(lines); i++ {
		if !blockScalar.MatchString(lines[i]) {
			continue
		}
		owner := indentOf(lines[i])
		for j := i + 1; j < len(lines) && (strings.TrimSpace(lines[j]) == "" || indentOf(lines[j]) > owner); j++ {
			in[j] = true
			i = j
		}
	}
	return in
}

// flowScalarLists rewrites each block sequence of flow-safe scalars under
// a key as a flow sequence on the key's line, when it fits and the
// sequence is complete (the next line goes back to the key's level).
func flowScalarLists(lines []string) []string {
	text := inBlockScalar(lines)
	var out []string
	for i := 0; i < len(lines); i++ {
		m := keyLine.FindStringSubmatch(lines[i])
		if m == nil || text[i] {
			out = append(out, lines[i])
			continue
		}
		col := len(m[1])
		var items []string
		j := i + 1
		// One comment line heading the list: it ends the key's line.
		comment := ""
		if j+1 < len(lines) && !text[j] && indentOf(lines[j]) == col+2 && strings.HasPrefix(strings.TrimSpace(lines[j]), "#") {
			comment, j = " "+strings.TrimSpace(lines[j]), j+1
		}
		for ; j < len(lines) && !text[j]; j++ {
			im := itemLine.FindStringSubmatch(lines[j])
			if im == nil || len(im[1]) != col+2 || !flowSafe.MatchString(im[2]) || strings.Contains(im[2], ": ") || strings.HasSuffix(im[2], ":") {
				break
			}
			items = append(items, im[2])
		}
		flow := lines[i] + " [" + strings.Join(items, ", ") + "]" + comment
		complete := j == len(lines) || indentOf(lines[j]) <= col
		if len(items) == 0 || !complete || len(flow) > MaxFlowLine {
			out = append(out, lines[i])
			continue
		}
		out = append(out, flow)
		i = j - 1
	}
	return out
}

// sectionBreaks puts one blank line before every top-level key but the
// first, above the comment lines that head it, and drops other blank
// lines outside block scalars.
func sectionBreaks(lines []string) []string {
	text := inBlockScalar(lines)
	var out []string
	seenKey := false
	for i, l := range lines {
		if strings.TrimSpace(l) == "" && !text[i] {
			continue
		}
		top := !text[i] && l != "" && l[0] != ' ' && l[0] != '#' && l[0] != '-'
		if top {
			if seenKey {
				// Above this key's own head comments.
				k := len(out)
				for k > 0 && strings.HasPrefix(out[k-1], "#") {
					k--
				}
				out = append(out[:k], append([]string{""}, out[k:]...)...)
			}
			seenKey = true
		}
		out = append(out, l)
	}
	return out
}

// commentAt returns where l's end-of-line comment starts (its " #"
// outside quotes), or -1.
func commentAt(l string) int {
	if strings.HasPrefix(strings.TrimSpace(l), "#") {
		return -1
	}
	var quote byte
	for i := 0; i < len(l); i++ {
		c := l[i]
		switch {
		case quote == '"' && c == '\\':
			i++
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#' && i > 0 && l[i-1] == ' ':
			return i - 1
		}
	}
	return -1
}

// alignComments starts the end-of-line comments of each run of consecutive
// lines that have one in the same column, one space after the longest.
func alignComments(lines []string) []string {
	text := inBlockScalar(lines)
	at := make([]int, len(lines))
	for i, l := range lines {
		at[i] = -1
		if !text[i] {
			at[i] = commentAt(l)
		}
	}
	for i := 0; i < len(lines); {
		if at[i] < 0 {
			i++
			continue
		}
		j, width := i, 0
		for ; j < len(lines) && at[j] >= 0; j++ {
			width = max(width, len(strings.TrimRight(lines[j][:at[j]], " ")))
		}
		for k := i; k < j; k++ {
			code := strings.TrimRight(lines[k][:at[k]], " ")
			lines[k] = code + strings.Repeat(" ", width-len(code)+1) + strings.TrimLeft(lines[k][at[k]:], " ")
		}
		i = j
	}
	return lines
}
