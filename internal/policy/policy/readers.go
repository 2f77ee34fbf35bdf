package policy

import "github.com/expr-lang/expr"

// readable_by(provenance.NAME, who) is the readers check of issue 22 ("a
// body whose readers do not include the recipient may not be sent"),
// written once so every policy spells it the same way:
//
//   - {id: body-not-for-recipient, capability: mcp.mail.send_email, effect: deny,
//     when: '!readable_by(provenance.body, args.parameters.arguments.recipient)'}
//
// It is true when the argument's readers are public (nil: the content it
// came from is public, or the argument is absent or was not traced, so it
// cannot deny spuriously), and otherwise when who — a string, or a list
// of strings every one of which must qualify — names readers only. Names
// compare exactly except for ASCII case (Alice@Corp.example is
// alice@corp.example); no other folding, so a look-alike letter (a
// Cyrillic а, the Kelvin sign) is another name and is refused. A who that
// is missing, empty or not strings names nobody: false for restricted
// content (fail closed).
const readableByFunc = "readable_by"

func readersFunctions() []expr.Option {
	return []expr.Option{expr.Function(readableByFunc, func(params ...any) (any, error) {
		return readableBy(params[0].(ArgProvenance), params[1]), nil
	}, new(func(ArgProvenance, any) bool))}
}

// readableBy implements readable_by.
func readableBy(p ArgProvenance, who any) bool {
	if p.Readers == nil {
		return true
	}
	var names []string
	switch w := who.(type) {
	case string:
		names = []string{w}
	case []any:
		for _, v := range w {
			s, ok := v.(string)
			if !ok {
				return false
			}
			names = append(names, s)
		}
	case []string:
		names = w
	}
	if len(names) == 0 {
		return false
	}
	for _, n := range names {
		if !isReader(p.Readers, n) {
			return false
		}
	}
	return true
}

// isReader reports whether name is one of readers, ASCII case folded.
func isReader(readers []string, name string) bool {
	for _, r := range readers {
		if asciiEqualFold(r, name) {
			return true
		}
	}
	return false
}

// asciiEqualFold is strings.EqualFold restricted to ASCII letters:
// strings.EqualFold would also equate the Kelvin sign with k and the long
// s with s, turning a look-alike address into a reader.
func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
