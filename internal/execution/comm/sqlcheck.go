package comm

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxSQLBytes bounds a query's text.
const maxSQLBytes = 64 << 10

// sqlToken is one lexical token of a query, as far as checkSQL needs.
type sqlToken struct {
	kind byte   // 'w' bare word (upper-cased), 'i' quoted identifier, ';', or 'o' other
	text string // the word or the identifier's unquoted content
}

// Words that write, change the connection or reach outside the database.
// query_only(1), mode=ro and SQLITE_LIMIT_ATTACHED=0 already make them
// fail at run time; refusing them here as well gives the agent a precise
// WRITE_ATTEMPT and means a single missed layer is not a hole.
var (
	writeVerbs = map[string]bool{"INSERT": true, "UPDATE": true, "DELETE": true, "REPLACE": true, "CREATE": true,
		"DROP": true, "ALTER": true, "ATTACH": true, "DETACH": true, "PRAGMA": true, "VACUUM": true, "REINDEX": true,
		"ANALYZE": true, "BEGIN": true, "COMMIT": true, "END": true, "ROLLBACK": true, "SAVEPOINT": true, "RELEASE": true}
	forbiddenWords = map[string]bool{"INSERT": true, "UPDATE": true, "DELETE": true, "CREATE": true, "DROP": true,
		"ALTER": true, "ATTACH": true, "DETACH": true, "PRAGMA": true, "VACUUM": true, "REINDEX": true,
		"LOAD_EXTENSION": true, "FTS3_TOKENIZER": true}
	// forbiddenFuncs are refused even when quoted ("load_extension"(…)
	// is a call in SQLite).
	forbiddenFuncs = map[string]bool{"LOAD_EXTENSION": true, "FTS3_TOKENIZER": true}
)

// checkSQL accepts exactly one read-only statement: it must begin with
// SELECT, WITH or VALUES, hold no statement after a ';' (comments and
// further ';' may follow), and name none of the forbidden words outside
// string literals. Defense in depth; the connection itself is read-only.
// TestQueryRefuses.
func checkSQL(s string) error {
	switch {
	case strings.TrimSpace(s) == "":
		return newErr("query", ErrInvalidQuery, "the query is empty", nil)
	case len(s) > maxSQLBytes:
		return newErr("query", ErrInvalidQuery, fmt.Sprintf("the query is longer than %d bytes", maxSQLBytes), nil)
	case !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0:
		// SQLite stops reading SQL at a NUL; what follows it would be
		// unseen by this check and by a person reading the audit.
		return newErr("query", ErrInvalidQuery, "the query holds invalid UTF-8 or NUL", nil)
	}
	toks, err := lexSQL(s)
	if err != nil {
		return newErr("query", ErrInvalidQuery, err.Error(), nil)
	}
	if len(toks) == 0 || toks[0].kind == ';' {
		return newErr("query", ErrInvalidQuery, "the query holds no statement", nil)
	}
	for i, t := range toks {
		if t.kind == ';' {
			for _, rest := range toks[i+1:] {
				if rest.kind != ';' {
					return newErr("query", ErrMultipleStatements, "statements after the first ';' are refused", nil)
				}
			}
			break
		}
	}
	first := toks[0]
	switch {
	case first.kind == 'w' && (first.text == "SELECT" || first.text == "WITH" || first.text == "VALUES"):
	case first.kind == 'w' && writeVerbs[first.text]:
		return newErr("query", ErrNotReadOnly, fmt.Sprintf("%s statements are refused; only SELECT, WITH and VALUES run", first.text), nil)
	default:
		return newErr("query", ErrInvalidQuery, "the statement must begin with SELECT, WITH or VALUES", nil)
	}
	for i, t := range toks {
		up := strings.ToUpper(t.text)
		switch {
		case t.kind == 'w' && forbiddenWords[t.text],
			t.kind == 'i' && forbiddenFuncs[up],
			// REPLACE is also the replace() function; only REPLACE INTO writes.
			t.kind == 'w' && t.text == "REPLACE" && i+1 < len(toks) && toks[i+1].kind == 'w' && toks[i+1].text == "INTO":
			return newErr("query", ErrNotReadOnly, fmt.Sprintf("%s is refused in a read-only query", up), nil)
		}
	}
	return nil
}

// lexSQL splits s into the tokens checkSQL looks at, skipping whitespace,
// "--" and "/* */" comments, and string literals. An unterminated literal
// or quoted identifier is an error (SQLite would refuse it too, and
// guessing where it ends is how checkers get fooled).
func lexSQL(s string) ([]sqlToken, error) {
	var toks []sqlToken
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case isSpace(c) || c == '\v':
			i++
		case strings.HasPrefix(s[i:], "--"):
			if j := strings.IndexByte(s[i:], '\n'); j >= 0 {
				i += j + 1
			} else {
				i = len(s)
			}
		case strings.HasPrefix(s[i:], "/*"):
			if j := strings.Index(s[i+2:], "*/"); j >= 0 {
				i += j + 4
			} else {
				i = len(s) // SQLite reads an unterminated comment to the end
			}
		case c == '\'' || c == '"' || c == '`':
			text, n, ok := quoted(s[i:], c)
			if !ok {
				return nil, fmt.Errorf("unterminated %c quote", c)
			}
			if c != '\'' {
				toks = append(toks, sqlToken{kind: 'i', text: text})
			}
			i += n
		case c == '[':
			j := strings.IndexByte(s[i:], ']')
			if j < 0 {
				return nil, fmt.Errorf("unterminated [identifier]")
			}
			toks = append(toks, sqlToken{kind: 'i', text: s[i+1 : i+j]})
			i += j + 1
		case c == ';':
			toks = append(toks, sqlToken{kind: ';'})
			i++
		case c == '_' || isAlpha(c) || c >= 0x80:
			j := i + 1
			for j < len(s) && (s[j] == '_' || s[j] == '$' || isAlpha(s[j]) || '0' <= s[j] && s[j] <= '9' || s[j] >= 0x80) {
				j++
			}
			toks = append(toks, sqlToken{kind: 'w', text: strings.ToUpper(s[i:j])})
			i = j
		default:
			toks = append(toks, sqlToken{kind: 'o'})
			i++
		}
	}
	return toks, nil
}

// quoted reads a literal opened by q at s[0], where a doubled q stands for
// one, and returns its content and length.
func quoted(s string, q byte) (string, int, bool) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] != q {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == q {
			b.WriteByte(q)
			i++
			continue
		}
		return b.String(), i + 1, true
	}
	return "", 0, false
}
