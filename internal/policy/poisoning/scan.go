package poisoning

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Threshold is the score at which a definition is flagged. A signal
// whose weight reaches it flags on its own (a shell payload, a bracketed
// [SYSTEM] tag, another upstream's tool named); weaker ones (an "always",
// a mention of "other tools", a superlative) flag only together.
const Threshold = 1.0

// Tool is one tool definition as an upstream lists it.
type Tool struct {
	Upstream     string          `json:"upstream,omitempty"`
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	// Approved: an operator approved a definition of this tool before. A
	// catalog check between an approved tool and a newcomer flags the
	// newcomer (it copies the incumbent, not the other way round).
	Approved bool `json:"-"`
}

// Finding is one piece of evidence: a signal, where it was found, how
// much it weighs, what the rule saw and an excerpt of the text (lower
// case, cut; shown to the reviewer, never acted on).
type Finding struct {
	Signal  Signal  `json:"signal"`
	Field   string  `json:"field"`
	Weight  float64 `json:"weight"`
	Detail  string  `json:"detail"`
	Excerpt string  `json:"excerpt,omitempty"`
	// at, end: the match in its field (at < 0: a finding about the whole
	// field). Two rules matching overlapping text are one piece of
	// evidence for the score.
	at, end int
}

// Report is the review of one definition.
type Report struct {
	// Score sums, per signal, the heaviest finding plus half of each
	// further one over other text (at most 1.2 per signal): several kinds
	// of evidence count for more than one kind said many times.
	Score    float64   `json:"score"`
	Flagged  bool      `json:"flagged"` // Score ≥ Threshold
	Findings []Finding `json:"findings,omitempty"`
}

// Signals returns the report's distinct signals, heaviest first.
func (r Report) Signals() []Signal {
	var out []Signal
	for _, f := range r.Findings {
		if !slices.Contains(out, f.Signal) {
			out = append(out, f.Signal)
		}
	}
	return out
}

// Has reports whether the report holds a finding of s.
func (r Report) Has(s Signal) bool {
	return slices.ContainsFunc(r.Findings, func(f Finding) bool { return f.Signal == s })
}

// Scan reviews one definition. c is the catalog it is reviewed in (every
// upstream's tools, t among them or not); nil reviews t alone, without
// the checks across upstreams. Scan reads untrusted text: it never
// panics, its cost is linear in the input (bounded by maxText per
// string), and it is deterministic.
func Scan(t Tool, c *Catalog) Report {
	s := newScan(t, c)
	s.name()
	if s.cut {
		s.add(Finding{Signal: LongDescription, Field: "inputSchema", Weight: 1, Detail: "a schema too large or too deep to review in full"})
	}
	s.textFields()
	s.parameters()
	s.identifiers()
	if c != nil {
		s.catalogNames()
	}
	if s.inSchema > 0 {
		s.add(Finding{Signal: ParamInstructions, Field: "inputSchema", Weight: 0.4, Detail: "evidence inside the input schema"})
	}
	return s.report()
}

// scan is one Scan's state.
type scan struct {
	t        Tool
	c        *Catalog
	purpose  map[string]bool // the words of the tool's name and first sentence
	siblings map[string]bool // lower-case names of this upstream's other tools
	params   map[string]bool // lower-case names of every property in the schemas
	props    []param
	texts    []*text
	read     int                // bytes of schema text collected
	cut      bool               // the walk stopped at a bound
	found    map[string]Finding // by signal, field and detail
	inSchema int                // text findings inside the schemas
}

// param is one property of the input schema.
type param struct {
	path, name string
	schema     map[string]any
}

func newScan(t Tool, c *Catalog) *scan {
	s := &scan{t: t, c: c, purpose: map[string]bool{}, siblings: map[string]bool{}, params: map[string]bool{}, found: map[string]Finding{}}
	for _, w := range nameTokens(t.Name) {
		s.purpose[singular(w)] = true
	}
	for _, w := range words(firstSentence(strings.TrimSpace(t.Description))) {
		if !stopWords[w] {
			s.purpose[singular(w)] = true
		}
	}
	if c != nil {
		for _, o := range c.byUpstream[t.Upstream] {
			if !strings.EqualFold(o.Name, t.Name) {
				s.siblings[strings.ToLower(o.Name)] = true
			}
		}
	}
	s.texts = append(s.texts, prepare("description", t.Description))
	s.decoded(s.texts[0])
	for _, f := range []struct {
		name string
		raw  json.RawMessage
	}{{"inputSchema", t.InputSchema}, {"outputSchema", t.OutputSchema}} {
		var v any
		if len(bytes.TrimSpace(f.raw)) == 0 || json.Unmarshal(f.raw, &v) != nil {
			continue
		}
		s.walk(v, f.name, f.name == "inputSchema", 0)
	}
	return s
}

// The schema walk's bounds: a hostile schema's depth, breadth and bulk.
// Past them the rest is not read and the definition is flagged (what
// the review cannot read, it does not pass).
const (
	maxDepth      = 64
	maxStrings    = 4096
	maxSchemaText = 256 << 10
)

// walk collects every string of a schema (descriptions, titles,
// defaults, enum values, examples) and every property, naming where each
// is.
func (s *scan) walk(v any, at string, input bool, depth int) {
	if depth > maxDepth || len(s.texts) > maxStrings || s.read > maxSchemaText {
		s.cut = true
		return
	}
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			child := at + "." + k
			if props, ok := x[k].(map[string]any); ok && k == "properties" {
				for _, name := range slices.Sorted(maps.Keys(props)) {
					s.params[strings.ToLower(name)] = true
					ps, _ := props[name].(map[string]any)
					if input {
						s.props = append(s.props, param{path: child + "." + name, name: name, schema: ps})
					}
					// A property's name is text the model reads too.
					s.texts = append(s.texts, prepare(child+"."+name+" (name)", strings.NewReplacer("_", " ", "-", " ").Replace(name)))
				}
			}
			s.walk(x[k], child, input, depth+1)
		}
	case []any:
		for _, e := range x {
			s.walk(e, at+"[]", input, depth+1)
		}
	case string:
		s.read += len(x)
		s.texts = append(s.texts, prepare(at, x))
	}
}

// blobRE finds base64-looking runs: an instruction encoded so that a
// reviewer (and a word list) reads noise while a model decodes it.
var blobRE = regexp.MustCompile(`[A-Za-z0-9+/]{40,}={0,2}`)

// decoded adds, for each base64 blob in t that decodes to text, that
// text as a field of its own (so the rules read it) and a finding.
func (s *scan) decoded(t *text) {
	for _, m := range blobRE.FindAllStringIndex(t.clean, 4) {
		blob := t.clean[m[0]:m[1]]
		if m[0] > 0 && strings.ContainsRune("/=?&", rune(t.clean[m[0]-1])) {
			continue // part of a URL or a query
		}
		if !strings.ContainsAny(blob, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") || !strings.ContainsAny(blob, "abcdefghijklmnopqrstuvwxyz") {
			continue // a hex digest, an identifier
		}
		raw, err := base64.StdEncoding.DecodeString(blob)
		if err != nil {
			raw, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(blob, "="))
		}
		if err != nil || !mostlyText(raw) {
			continue
		}
		s.add(Finding{Signal: HiddenMarkup, Field: t.field, Weight: 0.8, Detail: "base64 that decodes to text", Excerpt: clip(string(raw), 120)})
		s.texts = append(s.texts, prepare(t.field+" (decoded base64)", string(raw)))
	}
}

// mostlyText: at least 90% printable ASCII or whitespace.
func mostlyText(b []byte) bool {
	if len(b) < 20 || !utf8.Valid(b) {
		return false
	}
	n := 0
	for _, c := range b {
		if (c >= 0x20 && c < 0x7f) || c == '\n' || c == '\t' {
			n++
		}
	}
	return n*10 >= len(b)*9
}

// add keeps a finding, the heavier of two with the same signal, field
// and detail.
func (s *scan) add(f Finding) {
	f.Weight = math.Round(f.Weight*100) / 100
	// Names and details may quote what the upstream wrote: valid UTF-8
	// only (the review prints them; invalid bytes become U+FFFD).
	f.Excerpt, f.Detail = clip(strings.ToValidUTF8(f.Excerpt, "\uFFFD"), 200), clip(strings.ToValidUTF8(f.Detail, "\uFFFD"), 300)
	key := string(f.Signal) + "\x00" + f.Field + "\x00" + f.Detail
	if old, ok := s.found[key]; ok && old.Weight >= f.Weight {
		return
	}
	s.found[key] = f
}

func (s *scan) report() Report {
	fs := slices.Collect(maps.Values(s.found))
	slices.SortFunc(fs, func(a, b Finding) int {
		switch {
		case a.Weight != b.Weight:
			if a.Weight > b.Weight {
				return -1
			}
			return 1
		case a.Signal != b.Signal:
			return strings.Compare(string(a.Signal), string(b.Signal))
		case a.Field != b.Field:
			return strings.Compare(a.Field, b.Field)
		}
		return strings.Compare(a.Detail+a.Excerpt, b.Detail+b.Excerpt)
	})
	per := map[Signal][]float64{}
	spans := map[string][][2]int{}
	for _, f := range fs {
		// A further finding over text already counted adds nothing.
		where := string(f.Signal) + "\x00" + f.Field
		if f.end > 0 && slices.ContainsFunc(spans[where], func(sp [2]int) bool { return f.at < sp[1] && sp[0] < f.end }) {
			continue
		}
		if f.end > 0 {
			spans[where] = append(spans[where], [2]int{f.at, f.end})
		}
		per[f.Signal] = append(per[f.Signal], f.Weight)
	}
	score := 0.0
	for _, ws := range per { // each sorted heaviest first, as fs is
		sum := ws[0]
		for _, w := range ws[1:] {
			sum += w / 2
		}
		score += math.Min(sum, math.Max(ws[0], 1.2))
	}
	score = math.Round(score*100) / 100
	return Report{Score: score, Flagged: score >= Threshold, Findings: fs}
}

// name checks the name itself: characters a reader cannot see, and a
// near-miss of a common tool word (send_emai1, create_isssue).
func (s *scan) name() {
	nt := prepare("name", s.t.Name)
	s.hidden(nt)
	if w, typo := misspelt(s.t.Name); typo != "" {
		s.add(Finding{Signal: LookalikeName, Field: "name", Weight: 1, Detail: "a misspelling of \"" + w + "\" (" + typo + ")", Excerpt: s.t.Name})
	}
}

// textFields runs the hidden-content checks and the rules over every
// text of the definition.
func (s *scan) textFields() {
	self := selfRE(s.t.Name)
	for _, t := range s.texts {
		before := len(s.found)
		s.hidden(t)
		plain := t.plain
		if self != nil {
			// The tool's own name reads as "this tool": "use write_file_safe
			// instead" is "use this tool instead".
			plain = self.ReplaceAllString(plain, "this tool")
		}
		schema := strings.HasPrefix(t.field, "inputSchema") || strings.HasPrefix(t.field, "outputSchema")
		rs := rules()
		for i := range rs {
			s.apply(&rs[i], t, plain, schema)
		}
		if t.field == "description" {
			s.length(t)
		} else if schema && isValue(t.field) && len(strings.Fields(t.clean)) >= 8 {
			s.add(Finding{Signal: ParamInstructions, Field: t.field, Weight: 0.6, Detail: "a default, enum, example or title that reads as prose", Excerpt: excerpt(t.plain, 0, min(len(t.plain), 120))})
		}
		if schema && len(s.found) > before {
			s.inSchema++
		}
	}
}

// isValue: a schema string that is a value or a label, not a description.
func isValue(field string) bool {
	for _, suf := range []string{".default", ".const", ".enum[]", ".examples[]", ".example", ".title"} {
		if strings.HasSuffix(field, suf) {
			return true
		}
	}
	return false
}

func (s *scan) apply(r *rule, t *text, plain string, schema bool) {
	if r.schemaOnly && !schema {
		return
	}
	subject := plain
	if r.cased {
		subject = t.clean
	}
	objIdx, paramIdx := r.re.SubexpIndex("obj"), r.re.SubexpIndex("param")
	for _, m := range r.re.FindAllStringSubmatchIndex(subject, 8) {
		weight := r.weight
		if r.purpose && objIdx > 0 && m[2*objIdx] >= 0 && s.forPurpose(subject[m[2*objIdx]:m[2*objIdx+1]]) {
			continue
		}
		if paramIdx > 0 && m[2*paramIdx] >= 0 && describes(t.field, subject[m[2*paramIdx]:m[2*paramIdx+1]]) {
			continue // a parameter's description naming its own field describes it
		}
		cs, ce := clause(subject, m[0], m[1])
		if r.notAfter != nil && r.notAfter.MatchString(subject[cs:m[0]]) {
			continue
		}
		if r.notSibling && s.namesSibling(subject[cs:ce]) {
			continue
		}
		if r.verbNear && verbRE().MatchString(subject[cs:ce]) {
			weight = 1
		}
		s.add(Finding{Signal: r.sig, Field: t.field, Weight: weight, Detail: r.detail, Excerpt: excerpt(subject, m[0], m[1]), at: m[0], end: m[1]})
	}
}

// namesSibling: the text names another tool of this upstream.
func (s *scan) namesSibling(clauseText string) bool {
	for _, w := range wordRE.FindAllString(strings.ToLower(clauseText), -1) {
		if s.siblings[strings.Trim(w, "-_")] {
			return true
		}
	}
	return false
}

// describes: field is the description of the property named name.
func describes(field, name string) bool {
	return strings.HasSuffix(strings.ToLower(field), ".properties."+strings.ToLower(name)+".description")
}

// forPurpose reports whether the data a rule matched is what the tool
// is for: its head noun (or any noun of it) is a word of the tool's name
// or first sentence.
func (s *scan) forPurpose(obj string) bool {
	for _, w := range words(obj) {
		if !stopWords[w] && !dataWords[w] && s.purpose[singular(w)] {
			return true
		}
	}
	return false
}

// length flags a description longer than a tool needs, and text pushed
// out of view.
func (s *scan) length(t *text) {
	n := len([]rune(t.raw))
	switch {
	case n > 10000:
		s.add(Finding{Signal: LongDescription, Field: t.field, Weight: 1, Detail: "over 10,000 characters"})
	case n > 4000:
		s.add(Finding{Signal: LongDescription, Field: t.field, Weight: 0.7, Detail: "over 4,000 characters"})
	case n > 2000:
		s.add(Finding{Signal: LongDescription, Field: t.field, Weight: 0.4, Detail: "over 2,000 characters"})
	}
}

var (
	blankLines = regexp.MustCompile(`(?:[ \t]*\r?\n){6,}`)
	spaceRun   = regexp.MustCompile(`[ \t\x{00a0}\x{2000}-\x{200a}\x{3000}]{40,}`)
)

// hidden reports the characters a reader does not see, look-alike
// letters, and padding.
func (s *scan) hidden(t *text) {
	if t.invisible > 0 {
		s.add(Finding{Signal: HiddenCharacters, Field: t.field, Weight: 1, Detail: plural(t.invisible, "invisible character") + " (first U+" + hex4(t.invisibleR) + ")",
			Excerpt: excerpt(t.plain, 0, min(len(t.plain), 80))})
	}
	if len(t.mixed) > 0 {
		s.add(Finding{Signal: Homoglyphs, Field: t.field, Weight: 1, Detail: plural(len(t.mixed), "word") + " spelt with look-alike letters of another script", Excerpt: strings.Join(t.mixed[:min(len(t.mixed), 5)], " ")})
	}
	if t.styled > 0 {
		s.add(Finding{Signal: Homoglyphs, Field: t.field, Weight: 1, Detail: plural(t.styled, "fullwidth or mathematical letter"), Excerpt: excerpt(t.plain, 0, min(len(t.plain), 80))})
	}
	if m := blankLines.FindStringIndex(t.raw); m != nil {
		s.add(Finding{Signal: Padding, Field: t.field, Weight: 1, Detail: "a run of blank lines", Excerpt: excerpt(t.plain, 0, min(len(t.plain), 80))})
	} else if spaceRun.MatchString(t.raw) {
		s.add(Finding{Signal: Padding, Field: t.field, Weight: 0.8, Detail: "a run of spaces"})
	}
}

// clause returns the bounds of the clause around [start, end): up to the
// previous and next sentence end or newline (a dot inside a word, a path
// or a domain does not end it).
func clause(s string, start, end int) (int, int) {
	a := start
	for a > 0 {
		c := s[a-1]
		if c == '\n' || c == '!' || c == '?' || c == ';' || (c == '.' && a < len(s) && (s[a] == ' ' || s[a] == '\n')) {
			break
		}
		a--
	}
	z := end
	for z < len(s) {
		c := s[z]
		if c == '\n' || c == '!' || c == '?' || c == ';' || (c == '.' && (z+1 == len(s) || s[z+1] == ' ' || s[z+1] == '\n')) {
			break
		}
		z++
	}
	return a, z
}

// selfRE matches the tool's own name as a word in plain text.
func selfRE(name string) *regexp.Regexp {
	n := strings.ToLower(strings.TrimSpace(name))
	if len(n) < 3 || len(n) > 128 {
		return nil
	}
	return regexp.MustCompile(`(?:^|\b)` + regexp.QuoteMeta(n) + `(?:\b|$)`)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return itoa(n) + " " + what + "s"
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

func hex4(r rune) string {
	const digits = "0123456789ABCDEF"
	var b []byte
	for v := uint32(r); v > 0 || len(b) < 4; v >>= 4 {
		b = append([]byte{digits[v&0xF]}, b...)
	}
	return string(b)
}

// stopWords are not nouns of a tool's purpose.
var stopWords = map[string]bool{
	"a": true, "an": true, "the": true, "of": true, "to": true, "in": true, "on": true, "for": true, "from": true, "with": true,
	"and": true, "or": true, "by": true, "as": true, "at": true, "into": true, "under": true, "inside": true, "within": true,
	"this": true, "that": true, "it": true, "its": true, "your": true, "their": true, "all": true, "any": true, "every": true,
	"each": true, "other": true, "another": true, "is": true, "are": true, "be": true, "you": true, "can": true, "s": true,
	"user": true, "users": true, "model": true, "assistant": true, "agent": true, "tool": true, "tools": true, "mcp": true,
	"server": true, "function": true,
}

// dataWords qualify data without naming it: "full", "recent", "entire"
// in a first sentence do not make "full conversation" the tool's purpose.
var dataWords = map[string]bool{
	"full": true, "complete": true, "entire": true, "whole": true, "recent": true, "previous": true, "prior": true,
	"earlier": true, "past": true, "current": true, "last": true, "own": true, "original": true, "most": true, "recently": true,
	"list": true, "name": true, "names": true, "content": true, "contents": true, "data": true, "result": true, "results": true,
}
