package poisoning

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// Catalog is every tool a review sees, across upstreams: what the checks
// between upstreams compare a definition with (a look-alike or the same
// name, a mention of another upstream's tool). It is read-only once
// built and safe for concurrent use.
type Catalog struct {
	byUpstream map[string][]Tool
	byName     map[string][]Tool // lower-case name → tools of that name
	upstreams  []string
	upstreamOf map[string]string // lower-case upstream ID → ID
}

// NewCatalog indexes tools (each with its Upstream set).
func NewCatalog(tools []Tool) *Catalog {
	c := &Catalog{byUpstream: map[string][]Tool{}, byName: map[string][]Tool{}, upstreamOf: map[string]string{}}
	for _, t := range tools {
		if _, ok := c.byUpstream[t.Upstream]; !ok {
			c.upstreams = append(c.upstreams, t.Upstream)
			c.upstreamOf[strings.ToLower(t.Upstream)] = t.Upstream
		}
		c.byUpstream[t.Upstream] = append(c.byUpstream[t.Upstream], t)
		c.byName[strings.ToLower(t.Name)] = append(c.byName[strings.ToLower(t.Name)], t)
	}
	slices.Sort(c.upstreams)
	return c
}

// parameters flags properties whose names invite the model to hand over
// its context, other tools' data or secrets. Only properties that can
// carry text count (a number or a boolean cannot smuggle a conversation
// out); a name that is the tool's purpose (a "conversation" to summarise
// in summarize_conversation) does not count.
func (s *scan) parameters() {
	desc := strings.ToLower(s.t.Description)
	for _, p := range s.props {
		if !carriesText(p.schema) {
			continue
		}
		toks := nameTokens(p.name)
		if len(toks) == 0 {
			continue
		}
		ofPurpose := false
		for _, tk := range toks {
			ofPurpose = ofPurpose || (s.purpose[singular(tk)] && !genericParamWords[tk])
		}
		if ofPurpose {
			continue
		}
		field := p.path + " (name)"
		switch class, w := paramClass(toks); {
		case w == 0:
		case class == "the model's context" && s.aboutConversations():
			// A chat, completion or memory tool takes messages and a
			// system prompt: that is what it is for.
		case class == "hidden-channel" && strings.Contains(desc, strings.ToLower(p.name)):
			// The description says what it is for.
		default:
			s.add(Finding{Signal: SuspiciousParameter, Field: field, Weight: w, Detail: "a parameter named for " + class, Excerpt: p.name})
		}
	}
}

// aboutConversations: the tool's name or first sentence is about
// conversations, models or memory (a chat proxy, a sampling tool, a
// memory store), so parameters for messages are its purpose.
func (s *scan) aboutConversations() bool {
	for _, w := range []string{"conversation", "chat", "message", "llm", "model", "completion", "prompt", "assistant", "gpt", "claude",
		"sonar", "sampling", "sample", "memory", "transcript", "dialog", "dialogue", "thread", "thought", "reasoning"} {
		if s.purpose[w] {
			return true
		}
	}
	return false
}

// carriesText: a property that may hold free text (no type, a string, an
// array or an object; not a fixed enum of short values).
func carriesText(schema map[string]any) bool {
	if schema == nil {
		return true
	}
	if e, ok := schema["enum"].([]any); ok && len(e) > 0 {
		return false
	}
	switch t := schema["type"].(type) {
	case string:
		return t == "string" || t == "array" || t == "object"
	case []any:
		return slices.ContainsFunc(t, func(v any) bool { s, _ := v.(string); return s == "string" || s == "array" || s == "object" })
	}
	return true
}

// paramClass classifies a parameter name by its words: the model's
// context (weight 1), secrets (0.6), or a side channel for anything
// (0.3: "sidenote", "metadata", shown, flagged only with other evidence).
func paramClass(toks []string) (string, float64) {
	has := func(ws ...string) bool {
		return slices.ContainsFunc(toks, func(t string) bool { return slices.Contains(ws, t) || slices.Contains(ws, singular(t)) })
	}
	if has("id", "ids", "uuid", "name", "title", "type", "count", "limit", "url", "format", "mode", "index", "number", "offset", "cursor", "page", "size", "length", "lines") {
		return "", 0 // names, counts and handles of a conversation carry none of it
	}
	switch {
	case has("conversation", "conversations", "chat", "dialog", "dialogue", "transcript", "memory", "memories", "thoughts", "reasoning", "history", "histories"),
		has("previous", "prior", "earlier", "past", "preceding", "last", "recent") && has("message", "turn", "turns", "prompt", "request", "query", "question", "exchange", "context", "input", "output", "result", "call"),
		has("system") && has("prompt", "message", "instruction", "instructions", "rule"),
		has("assistant", "model", "llm", "agent", "ai") && has("instruction", "instructions", "prompt", "context", "memory", "rule", "setup", "config", "configuration"),
		has("tool", "tools", "function", "functions") && has("output", "outputs", "result", "results", "response", "responses", "data", "description", "descriptions", "list", "call", "calls"),
		has("other", "all") && has("tool", "tools", "server", "servers", "message", "messages"),
		has("user") && has("context", "info", "information", "data", "profile", "history", "message", "messages", "detail", "details"),
		len(toks) == 1 && has("context", "messages", "instructions", "turns", "session"),
		has("context") && has("full", "chat", "session", "window", "user", "whole", "entire", "complete", "summary", "dump", "snapshot", "text", "data", "info", "notes"):
		return "the model's context", 1
	case has("password", "passwd", "passphrase", "secret", "credential", "token", "apikey", "cookie", "cookies", "ssh", "mnemonic", "seed", "cvv", "ssn", "bearer"),
		has("api", "private", "access", "auth", "session") && has("key", "keys", "token", "tokens"),
		has("env", "environ", "environment") && !has("name", "id", "type"),
		has("card") && has("number"):
		return "secrets", 0.6
	case has("prompt", "prompts"):
		return "a prompt", 0.6
	case has("sidenote", "side", "note", "notes", "extra", "extras", "metadata", "meta", "debug", "feedback", "remark", "remarks", "annotation",
		"aux", "misc", "payload", "blob", "hint", "memo", "internal", "hidden", "fingerprint", "telemetry"):
		return "a side channel", 0.3
	}
	return "", 0
}

// genericParamWords never make a parameter "of the tool's purpose".
var genericParamWords = map[string]bool{"user": true, "all": true, "other": true, "data": true, "info": true, "full": true, "tool": true, "system": true}

// identRE finds identifiers that name a tool: snake_case and camelCase.
var (
	snakeRE     = regexp.MustCompile(`\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b`)
	camelRE     = regexp.MustCompile(`\b[a-z]+(?:[A-Z][a-z0-9]+)+\b`)
	toolContext = regexp.MustCompile(`\b(?:tools?|functions?|calls?|calling|called|invoke[sd]?|invoking|use[sd]?|using|run|runs|running|servers?|instead|before|after|whenever|replaces?|supersedes?|version|alternative|overrides?|deprecated|prefer)\b`)
)

// identifiers reports the tools a text names: another upstream's tool
// (from the catalog: strong evidence of shadowing), or an identifier in a
// clause about calling or using it that is no tool, parameter or
// sibling of this upstream (weaker: it may name a field).
func (s *scan) identifiers() {
	self := strings.ToLower(s.t.Name)
	for _, t := range s.texts {
		if strings.HasSuffix(t.field, "(name)") {
			continue
		}
		seen := map[string]bool{}
		for _, re := range []*regexp.Regexp{snakeRE, camelRE} {
			for _, m := range re.FindAllStringIndex(t.clean, 32) {
				id := strings.ToLower(t.clean[m[0]:m[1]])
				if seen[id] || id == self || s.siblings[id] || s.params[id] || inURL(t.clean, m[0], m[1]) {
					continue
				}
				seen[id] = true
				if s.c != nil {
					if others := s.foreign(id); len(others) > 0 {
						s.add(Finding{Signal: OtherTools, Field: t.field, Weight: 1, Detail: "names tool " + others[0].Name + " of upstream " + others[0].Upstream,
							Excerpt: excerpt(t.clean, m[0], m[1])})
						continue
					}
				}
				cs, ce := clause(t.clean, m[0], m[1])
				if toolContext.MatchString(strings.ToLower(t.clean[cs:ce])) {
					s.add(Finding{Signal: OtherTools, Field: t.field, Weight: 0.6, Detail: "names " + t.clean[m[0]:m[1]] + ", no tool of this upstream",
						Excerpt: excerpt(t.clean, m[0], m[1])})
				}
			}
		}
		if s.c != nil {
			s.plainNames(t, seen)
		}
	}
}

// plainNames finds other upstreams' tools whose names are plain words
// ("fetch", "search") where the text treats them as a tool ("the fetch
// tool", `fetch`), and other upstreams named as such ("github's", "the
// slack tools"). One pass over the words: a large catalog costs a map
// look-up per word, not a pattern per name.
func (s *scan) plainNames(t *text, seen map[string]bool) {
	raw := strings.ToLower(t.clean)
	for _, m := range wordRE.FindAllStringIndex(raw, -1) {
		w := raw[m[0]:m[1]]
		before, after := raw[:m[0]], raw[m[1]:]
		quoted := (strings.HasSuffix(before, "`") && strings.HasPrefix(after, "`")) || (strings.HasSuffix(before, "'") && strings.HasPrefix(after, "'")) ||
			(strings.HasSuffix(before, "\"") && strings.HasPrefix(after, "\""))
		asTool := strings.HasPrefix(after, " tool") || strings.HasPrefix(after, " function")
		if !seen[w] && !s.siblings[w] && w != strings.ToLower(s.t.Name) && len(w) >= 3 && (quoted || asTool) {
			if others := s.foreign(w); len(others) > 0 {
				s.add(Finding{Signal: OtherTools, Field: t.field, Weight: 1, Detail: "names tool " + others[0].Name + " of upstream " + others[0].Upstream, Excerpt: excerpt(raw, m[0], m[1])})
			}
		}
		if up, ok := s.c.upstreamOf[w]; ok && up != s.t.Upstream && len(w) >= 3 &&
			(strings.HasPrefix(after, "'s") || upstreamNoun.MatchString(after)) {
			s.add(Finding{Signal: OtherTools, Field: t.field, Weight: 0.6, Detail: "names upstream " + up, Excerpt: excerpt(raw, m[0], m[1])})
		}
	}
}

var (
	wordRE       = regexp.MustCompile(`[a-z0-9][a-z0-9_-]*`)
	upstreamNoun = regexp.MustCompile(`^ (?:tools?|server|upstream|integration|mcp)\b`)
)

// inURL: the identifier is part of a URL, a path or an address.
func inURL(s string, a, z int) bool {
	if a > 0 && strings.ContainsRune("/@.:=?&#$%{", rune(s[a-1])) {
		return true
	}
	return z < len(s) && strings.ContainsRune("/@(=", rune(s[z]))
}

// foreign returns the tools of other upstreams named id.
func (s *scan) foreign(id string) []Tool {
	var out []Tool
	for _, o := range s.c.byName[id] {
		if o.Upstream != s.t.Upstream {
			out = append(out, o)
		}
	}
	return out
}

// catalogNames compares the tool's name with every other upstream's:
// the same name (shadowing), a near copy (a typo, a digit for a letter,
// another separator or case, a decoration such as _v2). Between an
// approved tool and a new one, the new one is the suspect; between two
// new ones, the one whose name breaks its own upstream's naming style,
// or that decorates the other's.
func (s *scan) catalogNames() {
	me := strings.ToLower(s.t.Name)
	var shadows []string
	shadowWeight := 0.0
	defer func() {
		// One finding however many upstreams share the name: a name
		// shared is one fact, not evidence that adds up.
		if len(shadows) > 0 {
			s.add(Finding{Signal: ShadowedName, Field: "name", Weight: shadowWeight, Detail: "the same name as " + strings.Join(shadows, ", "), Excerpt: s.t.Name})
		}
	}()
	for _, up := range s.c.upstreams {
		if up == s.t.Upstream {
			continue
		}
		for _, o := range s.c.byUpstream[up] {
			other := strings.ToLower(o.Name)
			excerptNames := s.t.Name + " ~ " + o.Upstream + "/" + o.Name
			switch {
			case other == me && sameDefinition(s.t, o):
				// The same server configured twice (stdio and HTTP, two
				// accounts): the same tool, not a shadow of it.
			case other == me:
				// Shown, not flagged on its own: servers share generic
				// names (search, fetch, echo), and the catalog names each
				// tool with its upstream. A near copy is another matter.
				shadows = append(shadows, o.Upstream+"/"+o.Name)
				shadowWeight = 0.3
			case decorates(nameTokens(s.t.Name), nameTokens(o.Name)):
				s.add(Finding{Signal: LookalikeName, Field: "name", Weight: 1, Detail: "the name of " + o.Upstream + "/" + o.Name + " with a decoration", Excerpt: excerptNames})
			case decorates(nameTokens(o.Name), nameTokens(s.t.Name)):
				// The other one decorates this name: this is the original
				// it copies, shown, not the suspect.
				s.add(Finding{Signal: LookalikeName, Field: "name", Weight: 0.3, Detail: "copied with a decoration by " + o.Upstream + "/" + o.Name, Excerpt: excerptNames})
			case skeleton(me) == skeleton(other) || nearMiss(me, other):
				s.add(Finding{Signal: LookalikeName, Field: "name", Weight: s.suspect(o, 1), Detail: "nearly the name of " + o.Upstream + "/" + o.Name, Excerpt: excerptNames})
			}
		}
	}
}

// sameDefinition: a and b describe the same tool (description and
// schemas equal once re-encoded).
func sameDefinition(a, b Tool) bool {
	return a.Description == b.Description && compactJSON(a.InputSchema) == compactJSON(b.InputSchema) && compactJSON(a.OutputSchema) == compactJSON(b.OutputSchema)
}

func compactJSON(raw []byte) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v) // maps encode with sorted keys
	return string(b)
}

// suspect weighs a look-alike pair for this tool: w if this tool is the
// likely copy, less if it is the likely original.
func (s *scan) suspect(o Tool, w float64) float64 {
	switch {
	case o.Approved && !s.t.Approved:
		return w
	case s.t.Approved && !o.Approved:
		return 0.3
	}
	_, mine := misspelt(s.t.Name)
	_, theirs := misspelt(o.Name)
	switch {
	case mine != "" && theirs == "":
		return w
	case theirs != "" && mine == "":
		return 0.3
	}
	myStyle, theirStyle := s.offStyle(s.t), s.offStyle(o)
	switch {
	case myStyle && !theirStyle:
		return w
	case theirStyle && !myStyle:
		return 0.3
	}
	return 0.6
}

// offStyle: t's name is written in another style (snake, kebab, camel)
// than every other tool of its upstream.
func (s *scan) offStyle(t Tool) bool {
	st := style(t.Name)
	n, same := 0, 0
	for _, o := range s.c.byUpstream[t.Upstream] {
		if o.Name == t.Name {
			continue
		}
		n++
		if style(o.Name) == st {
			same++
		}
	}
	return n > 0 && same == 0
}

func style(name string) string {
	switch {
	case strings.Contains(name, "_"):
		return "snake"
	case strings.Contains(name, "-"):
		return "kebab"
	case strings.ToLower(name) != name:
		return "camel"
	}
	return "word"
}

// skeleton is a name as it looks: lower case, no separators, digits read
// as the letters they resemble, "rn" as "m", "vv" as "w", runs of one
// letter as one.
func skeleton(name string) string {
	s := strings.ToLower(name)
	s = strings.NewReplacer("_", "", "-", "", ".", "", " ", "", "rn", "m", "vv", "w", "0", "o", "1", "l", "3", "e", "4", "a", "5", "s", "7", "t", "8", "b", "q", "g").Replace(s)
	var b strings.Builder
	var prev rune
	for _, r := range s {
		if r != prev {
			b.WriteRune(r)
		}
		prev = r
	}
	return b.String()
}

// nearMiss: one edit apart (two for long names), compared without
// separators.
func nearMiss(a, b string) bool {
	strip := strings.NewReplacer("_", "", "-", "").Replace
	a, b = strip(a), strip(b)
	if a == b {
		return true
	}
	d := editDistance(a, b, 3)
	n := min(len(a), len(b))
	return (d == 1 && n >= 6) || (d == 2 && n >= 12)
}

// decorates: a's words are b's plus decorations only (send_email_v2,
// secure_send_email, read_file_pro).
func decorates(a, b []string) bool {
	if len(a) <= len(b) || len(b) == 0 {
		return false
	}
	rest := slices.Clone(a)
	for _, w := range b {
		i := slices.Index(rest, w)
		if i < 0 {
			return false
		}
		rest = slices.Delete(rest, i, i+1)
	}
	for _, w := range rest {
		if !decorations[w] && !versionRE.MatchString(w) {
			return false
		}
	}
	return true
}

var (
	decorations = map[string]bool{"pro": true, "plus": true, "new": true, "secure": true, "safe": true, "safer": true, "fast": true, "faster": true,
		"better": true, "enhanced": true, "improved": true, "official": true, "real": true, "fixed": true, "updated": true, "latest": true,
		"advanced": true, "premium": true, "ultra": true, "super": true, "next": true, "gen": true, "fix": true, "true": true, "verified": true,
		"trusted": true, "best": true, "ultimate": true, "turbo": true, "max": true, "x": true, "prime": true}
	versionRE = regexp.MustCompile(`^(?:v?\d+|\d+x)$`)
)

// editDistance is the optimal-string-alignment distance (a swap of two
// neighbours is one edit: "emial"), capped at limit. Not kit/nearest's
// Levenshtein: this package is a leaf (standard library and x/text only)
// and a typosquat's transposition must count as one.
func editDistance(a, b string, limit int) int {
	if d := len(a) - len(b); d > limit || -d > limit {
		return limit + 1
	}
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

// misspelt finds a word of the name that is a typosquat of a common tool
// word — a digit for a letter (emai1), "rn" for "m" (rnessage), q for g
// (charqe), a tripled letter (isssue), a dropped letter of a long word
// (searh) — and returns the word and what was done to it. A real word
// is never a misspelling: only forms no honest name would use count.
func misspelt(name string) (word, typo string) {
	for _, tk := range nameTokens(name) {
		if len(tk) < 4 || toolWords[tk] || toolWords[singular(tk)] || abbreviations[tk] {
			continue
		}
		if strings.ContainsAny(tk, "0123456789") {
			if f := strings.NewReplacer("0", "o", "1", "l", "3", "e", "4", "a", "5", "s", "7", "t").Replace(tk); toolWords[f] || toolWords[singular(f)] {
				return f, "a digit for a letter"
			}
			if f := strings.NewReplacer("1", "i").Replace(tk); toolWords[f] {
				return f, "a digit for a letter"
			}
		}
		if f := strings.ReplaceAll(tk, "rn", "m"); f != tk && (toolWords[f] || toolWords[singular(f)]) {
			return f, `"rn" for "m"`
		}
		if f := strings.ReplaceAll(tk, "q", "g"); f != tk && (toolWords[f] || toolWords[singular(f)]) {
			return f, `"q" for "g"`
		}
		if f := strings.ReplaceAll(strings.ReplaceAll(tk, "vv", "w"), "ii", "u"); f != tk && toolWords[f] {
			return f, "letters for a letter"
		}
		for i := 0; i+2 < len(tk); i++ {
			if tk[i] == tk[i+1] && tk[i+1] == tk[i+2] {
				if f := tk[:i] + tk[i+1:]; toolWords[f] || toolWords[singular(f)] {
					return f, "a tripled letter"
				}
			}
		}
		if len(tk) >= 5 {
			for _, w := range toolWordList { // sorted: the same answer every time
				if len(w) == len(tk)+1 && len(w) >= 6 && dropsOne(w, tk) {
					return w, "a dropped letter"
				}
			}
		}
	}
	return "", ""
}

// dropsOne: short is long with one letter removed (not a trailing "s":
// a plural's singular is an honest spelling).
func dropsOne(long, short string) bool {
	for i := 0; i < len(long); i++ {
		if long[:i]+long[i+1:] == short {
			return i != len(long)-1
		}
	}
	return false
}

// abbreviations are honest short forms a misspelling check must not
// read as a dropped letter (stats is no typo of status).
var abbreviations = map[string]bool{"stats": true, "prefs": true, "repos": true, "params": true, "args": true, "docs": true, "specs": true,
	"temps": true, "creds": true, "msgs": true, "utils": true, "confs": true, "configs": true, "vars": true, "envs": true, "infos": true,
	"perms": true, "deps": true, "libs": true, "imgs": true, "pics": true, "vids": true, "notifs": true, "subs": true, "tmpl": true, "impl": true}

// toolWordList is toolWords, sorted.
var toolWordList = slices.Sorted(maps.Keys(toolWords))

// toolWords are the words tool names are made of, for misspelt.
var toolWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`
		send email mail message messages create issue issues update delete remove read write file files text search query list get set post
		fetch event events calendar channel channels slack github gitlab repo repository repositories branch commit commits pull request
		merge review comment comments user users team teams project projects task tasks ticket tickets page pages document documents
		folder directory drive upload download share payment payments charge charges invoice invoices customer customers account
		accounts transfer balance order orders product products price prices weather forecast alert alerts location place places
		route directions map maps translate translation language summary summarize convert image images photo photos video screenshot
		browser navigate click type snapshot tab console network cookie cookies storage database table tables schema execute execute
		command shell terminal process run script code function deploy build test tests lint format kubectl docker container pod pods
		namespace cluster secret secrets token tokens password login logout session auth note notes memory entity entities graph node
		nodes relation contact contacts lead deal deals stripe notion jira linear spotify playlist track tracks album artist play
		pause resume volume time timezone date schedule meeting meetings invite attendee draft drafts reply forward thread threads
		reaction emoji workspace member members profile settings config status health metrics logs report reports analytics chart
		record records insert select backup restore sync export import archive label labels tag tags assign assignee milestone
		release releases workflow workflows action actions check checks status create_issue`) {
		m[w] = true
	}
	return m
}()
