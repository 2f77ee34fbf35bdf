package fence

import (
	"mime"
	"strings"
)

// TextualMIME reports whether a client is likely to hand content of media
// type mt to a model as text: text/*, JSON, XML, YAML, TOML, JavaScript,
// shell and SQL, and any +json / +xml suffix type (image/svg+xml too). Such
// content from an untrusted source must be fenced, never sent as an
// embedded resource that a client would decode and show unfenced (issue 10
// item 6: a .txt with one NUL byte came back as a text/plain blob). An
// unparsable media type counts as textual, so the check fails closed.
func TextualMIME(mt string) bool {
	base, _, err := mime.ParseMediaType(mt)
	if err != nil {
		return true
	}
	typ, sub, _ := strings.Cut(base, "/")
	switch {
	case typ == "text", typ == "message", typ == "":
		return true
	case strings.HasSuffix(sub, "+json"), strings.HasSuffix(sub, "+xml"), strings.HasSuffix(sub, "+yaml"):
		return true
	}
	switch sub {
	case "json", "xml", "yaml", "x-yaml", "toml", "javascript", "x-javascript", "ecmascript",
		"x-sh", "x-shellscript", "sql", "x-httpd-php", "x-perl", "x-python", "x-ruby", "csv",
		"x-www-form-urlencoded", "x-ndjson", "jsonl", "x-latex", "x-tex", "rtf", "x-subrip":
		return true
	}
	return false
}
