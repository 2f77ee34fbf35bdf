package poisoning

import (
	"regexp"
	"sync"
)

// rule is one pattern of evidence for a signal. Patterns are RE2 (linear
// time whatever the input: a hostile description cannot make the review
// slow) and match text.plain (lower case, emphasis marks gone) unless
// cased.
type rule struct {
	sig    Signal
	weight float64
	detail string // what this rule saw, for the finding
	re     *regexp.Regexp
	cased  bool // match text.clean, case kept
	// purpose: the match's "obj" group names data; a match whose head
	// noun is what the tool is for (its name, its first sentence) is no
	// evidence (a Slack history tool fetches messages).
	purpose bool
	// schemaOnly: only in schema strings (a parameter's description
	// naming data asks for it; the description naming it may describe).
	schemaOnly bool
	// verbNear: the match counts at full weight only with a verb of
	// reading or moving data in the same clause; else at half.
	verbNear bool
	// notAfter: the match does not count when its clause starts with
	// this (e.g. "use this tool when the user asks …" scopes the tool
	// itself, it does not hook another action).
	notAfter *regexp.Regexp
	// notSibling: the match does not count when its clause names another
	// tool of the same upstream ("prefer this over 'execute_command'"
	// routes between a server's own tools; an attacker gains nothing by
	// promoting one of its tools over another of its own).
	notSibling bool
}

func re(p string) *regexp.Regexp { return regexp.MustCompile(p) }

func r(sig Signal, w float64, detail, pattern string) rule {
	return rule{sig: sig, weight: w, detail: detail, re: re(pattern)}
}

func (x rule) withCase() rule                 { x.cased = true; return x }
func (x rule) forPurpose() rule               { x.purpose = true; return x }
func (x rule) inSchema() rule                 { x.schemaOnly = true; return x }
func (x rule) needVerb() rule                 { x.verbNear = true; return x }
func (x rule) unless(p string) rule           { x.notAfter = re(p); return x }
func (x rule) amongOwn() rule                 { x.notSibling = true; return x }
func w(ws ...string) string                   { return `\b` + alt(ws...) + `\b` }
func obj(class string) string                 { return `(?P<obj>` + class + `)` }
func clauseStart(p string) string             { return `(?:^|[.!?;\n]\s*)` + p }
func within(a string, n int, b string) string { return a + gap(n) + b }

// selfScope: a clause that scopes the tool itself ("use this when the
// user asks …", "this is called every time …") rather than hooking
// another action.
const selfScope = `(?:use|call|invoke|run|try|pick|choose)\s+(?:this|it|me)\b|\b(?:this|it)(?: tool| function)? (?:is |can be |should be |gets |will be |may be |must be )?(?:also )?(?:called|used|invoked|run)\b|useful|helpful|ideal|suited|best for|good for|great for`

// verbRE finds a verb of reading or moving data (for verbNear rules).
var verbRE = sync.OnceValue(func() *regexp.Regexp {
	return re(`\b` + alt(anyVerb, "required", "requires", "needed", "needs", "need", "attached", "included", "contents? of", "look in", "as input") + `\b`)
})

// rules are compiled on the first scan, not when the package loads: the
// scan runs when an upstream's definitions are reviewed, and compiling
// its expressions cost every airlock process (the server, each CLI
// command, each sandbox trampoline) ~45 ms and ~8 MB at start (issue 27,
// the idle process's memory).
var rules = sync.OnceValue(compileRules)

func compileRules() []rule {
	return []rule{
		// ---- words addressed to the model ----
		r(AuthorityMarker, 1, "a bracketed authority tag", `[<\[{【〈《⟨‹|⟦]+\s*/?\s*`+tagWords+`\s*[:!]?\s*[>\]}】〉》⟩›|⟧]+`),
		r(AuthorityMarker, 1, "a bracketed authority tag", `«\s*`+tagWords+`\s*»`),
		r(AuthorityMarker, 0.8, "an authority word in parentheses", `\(+\s*`+alt("important", "system", "admin", "override", "critical", "urgent",
			"instructions?", "priority instructions?", "hidden", "secret", "system note", "admin note", "internal note")+`\s*\)+`),
		r(AuthorityMarker, 1, "a chat-template role or token", alt(`<\|(?:im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id|end_header_id)\|>`,
			`\[/?inst\]`, `<</?sys>>`, `(?:^|\n)\s*#{1,6}\s*(?:system|instruction|response)\s*:`, `(?:^|\n|<!--|[\[(>])\s*(?:system|sys)\s*:`)),
		r(AuthorityMarker, 0.8, "a role label addressing the model", `(?:^|\n|>|[.!?]\s)\s*`+alt("assistant", "ai", "model", "llm", "agent", "claude", "models", "assistants", "agents")+`\s*:`),
		r(AuthorityMarker, 0.8, "an authority note", w("internal", "admin", "administrator", "developer", "dev", "maintainer", "hidden", "secret",
			"confidential", "security", "priority", "compliance", "important")+`[ _-]+`+alt("note", "notice", "message", "instructions?", "directive", "memo", "override", "mandate")+`s?\b`),
		r(AuthorityMarker, 0.8, "an authority note", `\bsystem[ _-]+`+alt("note", "notice", "message", "directive", "memo", "override", "mandate", "alert")+`s?\b`),
		r(AuthorityMarker, 1, "an authority banner", `#{2,}\s*`+alt("important", "system", "admin", "critical", "urgent", "internal", "instructions?", "override", "attention")+`\s*#{2,}`),
		r(AuthorityMarker, 0.8, "an authority heading", `(?:^|\n|[.!?]\s+)\s*#{1,6}\s*`+alt("important", "system", "admin", "internal", "instructions?", "critical", "security notice", `note (?:to|for) \w+`)),
		r(AuthorityMarker, 0.5, "a shouted authority word", `(?:^|\n|[.!?]\s+)`+alt("IMPORTANT", "CRITICAL", "URGENT", "ATTENTION", "MANDATORY", "NOTICE",
			"WARNING", "SYSTEM", "ADMIN", "OVERRIDE", "PRIORITY", "REQUIRED")+`\b[^\n\w]{0,3}`).withCase(),
		r(AuthorityMarker, 1, "a shouted override", `\b`+alt("SYSTEM", "ADMIN", "PRIORITY", "SECURITY", "EMERGENCY")+` `+alt("OVERRIDE", "MESSAGE", "NOTICE", "ALERT", "INSTRUCTIONS?")+`\b`).withCase(),

		r(AddressesModel, 0.8, "a note addressed to the model", w("dear", "hey", "hi", "hello", "attention", "note", "notes", "message", "instructions?",
			"reminder", "hint", "tip", "heads-up", "heads up", "psst", "memo", "info", "important", "notice", "detail", "details", "fyi")+`:? (?:to |for )?(?:the |all |any )?`+modelWords+`\b`),
		r(AddressesModel, 0.6, "tells the model what it is", w("as an?", "you are an?", "you're an?", "you are", "you're")+` (?:[\w']+ )?`+alt("ai", "assistant", "language model", "llm", "large language model", "agent", "ai assistant", "helpful assistant", "chatbot", "bot")+`\b`),
		r(AddressesModel, 0.5, "tells the model what it must do", `\b(?:the |an? |any |every |calling |all )?`+modelWords+` `+alt("must", "should", `needs? to`, "has to", "have to",
			`(?:is|are) (?:required|expected|instructed|asked|supposed) to`, "shall", "will always", "is to", "are to")+`\b`),
		r(AddressesModel, 0.6, "demands that the model act", w("require", "requires", "ask", "asks", "expect", "expects", "want", "wants", "need", "needs", "insist", "insists")+
			` that (?:the |your |you |an? )?(?:`+modelWords+` )?(?:also |always |first |then )?`+alt(anyVerb, "includes", "sends", "adds", "passes", "provides", "reads", "attaches", "appends", "shares", "puts", "fills")+`\b`),
		r(AddressesModel, 0.6, "a label addressed to models", `\b`+alt("models", "assistants", "agents", "llms", "ai")+`\s*:\s`),

		r(OverrideInstructions, 1, "tells the model to set aside its instructions", w("ignore", "disregard", "forget", "override", "overrule", "bypass", "discard",
			"neglect", "abandon", "set aside", "supersede", "stop following")+` (?:all |any |every |each |the |your |of |these |those |its |my )*`+
			`(?:`+alt("previous", "prior", "above", "earlier", "preceding", "former", "original", "initial", "existing", "other", "system", "safety",
			"security", "default", "developer", "built-in", "current", "old", "standing", "user")+` )?(?:[\w-]+ )?`+
			alt("instructions?", "prompts?", "rules", "directions", "directives", "guidelines", "guidance", "constraints", "policies", "policy",
				"restrictions", "messages", "commands", "orders", "programming", "context", "guardrails", "limitations", "filters")+`\b`),
		r(OverrideInstructions, 0.8, "tells the model to forget everything", w("ignore", "disregard", "forget")+` `+alt("everything", "anything", "all")+
			`(?: else)?(?: (?:above|before|previously|prior|you (?:were|have been) told|the user (?:says|said)))?\b`),
		r(OverrideInstructions, 1, "tells the model to ignore the user", w("ignore", "disregard", "do not obey", "don't obey", "do not listen to", "don't listen to")+` (?:the |what the |whatever the )?user\b`),
		r(OverrideInstructions, 0.8, "gives the model a new role or new instructions", alt(`\byou are now\b`, `\byou are no longer\b`, `\bnew role\b`,
			`\bact as (?:an?|the) \w+`, `\bpretend (?:to be|you are|that you)`, `\broleplay as\b`,
			`\byour (?:new|real|true|actual) (?:role|task|goal|objective|instructions|purpose|job)\b`,
			`\b(?:new|updated|real|true|actual|revised|hidden|secret|additional) (?:system )?(?:instructions|directives|orders|objective)\b`)),
		r(OverrideInstructions, 0.8, "switches the model into a special mode", alt(`developer mode`, `jailbreak`, `\bdan mode`, `god mode`, `unrestricted mode`,
			`do anything now`, `maintenance mode`, `admin mode`, `sudo mode`, `debug mode`)),

		r(Concealment, 1, "tells the model to keep something from the user", w("do not", "don't", "dont", "never", "without", "avoid", "no need to", "must not",
			"should not", "shouldn't", "mustn't", "need not", "not")+` `+upTo(2)+alt("tell", "inform", "notify", "mention", "reveal", "show", "alert",
			"disclose", "explain", "display", "let on", "bother", "warn")+`(?:ing|s)? (?:this |it |anything |that |about \w+ )?(?:to )?(?:the |any |your )?`+
			alt("user", "users", "human", "humans", "person", "operator", "customer", "anyone", "them", "him", "her")+`\b`),
		r(Concealment, 0.8, "tells the model not to mention it", w("do not", "don't", "never", "must not", "should not")+` `+upTo(1)+alt("mention", "reveal", "disclose", "say", "tell")+
			`(?:ing)? `+alt("that", "this", "it", "anything about", "these", "the (?:step|call|file|request)")+`\b`),
		r(Concealment, 1, "tells the model to keep something from the user", w("do not", "don't", "never", "must not")+` let (?:the |any |your )?`+
			alt("user", "users", "human", "operator", "customer", "anyone", "them")+` `+alt("know", "see", "notice", "find out", "learn")+`\b`),
		r(Concealment, 1, "says the user must not know", `\b(?:the )?`+alt("user", "users", "human", "operator")+`s? `+alt("must", "should", "need", "needs", "does", "do", "will", "shall")+
			` (?:not|never|n't) `+upTo(2)+alt("know", "see", "notice", "learn", "find out", `be (?:told|informed|aware|notified|shown)`)+`\b`),
		r(Concealment, 1, "tells the model to act silently", within(w("silently", "quietly", "secretly", "covertly", "discreetly", "invisibly", "stealthily", "surreptitiously", "unobtrusively"), 30,
			w("send", "include", "add", "forward", "copy", "upload", "call", "append", "attach", "run", "execute", "read", "collect", "log", "store", "save",
				"change", "modify", "replace", "redirect", "set", "pass", "post", "transmit", "share", "bcc", "cc", "invoke", "use", "record"))),
		r(Concealment, 1, "tells the model to act silently", within(w("send", "include", "add", "forward", "copy", "upload", "call", "append", "attach", "run", "execute",
			"read", "collect", "log", "store", "save", "change", "pass", "post", "share", "record"), 30, w("silently", "quietly", "secretly", "covertly", "discreetly", "stealthily"))),
		r(Concealment, 1, "acts without the user's consent", `\bwithout (?:the )?`+alt("user'?s?", "their", "anyone'?s", "your")+` `+alt("knowledge", "consent",
			"permission", "approval", "confirmation", "noticing", "knowing", "awareness")+`\b`),
		r(Concealment, 0.8, "acts without asking", `\bwithout `+alt("asking", "telling", "informing", "notifying", "confirming", "waiting for (?:the user'?s? )?(?:confirmation|approval|permission)",
			"confirmation", "approval", "permission", "prompting", "consent")+`\b`),
		r(Concealment, 1, "tells the model not to ask for confirmation", w("don't", "do not", "never", "no need to", "skip", "bypass", "without", "not")+` `+upTo(1)+
			alt("ask", "request", "seek", "wait", "prompt")+`(?:ing|s)? `+upTo(3)+alt("confirmation", "permission", "approval", "consent")+`s?\b`),
		r(Concealment, 1, "tells the model to skip safety checks", `\bskip `+upTo(2)+alt("confirmations?", "checks", "prompts", "approvals?", "reviews?", "safety", "security")+`\b`),
		r(Concealment, 0.8, "claims the user already agreed", `\b(?:the )?`+alt("user", "owner", "admin", "operator", "customer")+`s? (?:has |have |had )?(?:already |previously |explicitly )?`+
			alt("agreed", "approved", "consented", "authori[sz]ed", "confirmed", "allowed", "granted", "accepted", "opted in", "pre-?approved", "pre-?authori[sz]ed")+`\b`),
		r(Concealment, 0.8, "passes an instruction off as a detail", `\b(?:this|it) is (?:just |only |merely |a |an )?`+alt("mere", "internal", "hidden", "secret", "invisible",
			"transparent", "background")+` (?:implementation )?`+alt("detail", "step", "process", "requirement", "optimi[sz]ation", "mechanism", "matter")+`\b`),
		r(Concealment, 0.8, "tells the model to hide something", w("hide", "conceal", "obscure")+` `+upTo(2)+alt("from", "instructions?", "step", "action", "call", "request", "this", "it")+`\b`),
		r(Concealment, 1, "tells the model to say nothing", w("mention", "say", "tell", "reveal", "disclose")+` nothing\b`),

		r(FutureBehaviour, 1, "instructs behaviour beyond this call", alt(`\bfrom now on\b`, `\bhenceforth\b`, `\bgoing forward\b`,
			`\bfor the (?:rest|remainder|duration) of (?:the|this|your) (?:session|conversation|chat|interaction|task|day)\b`,
			`\bfor (?:all|any|every|each) (?:future|subsequent|following|later|upcoming|remaining|further) \w+`,
			`\b(?:all|every|each) (?:subsequent|future|following|later) \w+`)),
		r(FutureBehaviour, 0.6, "hooks every response or call", `\b`+alt("in", "for", "to", "into", "with")+` (?:all|every|each|any) (?:future |subsequent |following |later |other |single )?`+
			alt("responses?", "repl(?:y|ies)", "answers?", "messages?", "conversations?", "sessions?", "turns?", "interactions?", "calls?", "invocations?",
				"searches", "requests?", "queries", "tasks?", "e-?mails?", "commits?", "events?", "files?", "outputs?", "documents?", "transactions?")+`\b`),
		r(FutureBehaviour, 0.6, "a trigger on any occasion", w("whenever", "every time", "everytime", "each time", "any ?time", "anytime", "every single time")).unless(selfScope),
		r(OtherTools, 0.6, "a trigger on another action", w("when", "whenever", "if", "once", "each time", "every time", "any time", "as soon as")+` `+
			alt("the user", "a user", "you", "the assistant", "the agent", "the model", "someone", "anyone", "the client")+` `+upTo(2)+
			alt("asks?", "wants?", "requests?", "tells? you", "needs?", "tries", "try", "decides?", "plans?", "is about", "are about", "mentions?", "uploads?",
				"pastes?", "sends?", "creates?", "makes?", "uses?", "calls?", "invokes?", "shares?", "finish(?:es)?", "complete[sd]?", "see", "sees")+`\b`).unless(selfScope),
		r(OtherTools, 1, "hooks another action with an instruction", w("when", "whenever", "if", "once", "each time", "every time", "any time", "as soon as")+` `+
			alt("the user", "a user", "you", "the assistant", "the agent", "the model", "someone", "anyone", "the client")+` `+upTo(2)+
			alt("asks?", "wants?", "requests?", "tells? you", "needs?", "tries", "try", "decides?", "plans?", "is about", "are about", "mentions?", "uploads?",
				"pastes?", "sends?", "creates?", "makes?", "uses?", "calls?", "invokes?", "shares?")+`\b`+gap(100)+`, (?:then )?(?:always |also |first |silently |automatically |quietly )?`+
			alt("add", "include", "append", "prepend", "set", "send", "change", "insert", "book", "buy", "purchase", "forward", "copy", "cc", "bcc", "attach", "replace",
				"assign", "label", "subscribe", "enable", "select", "post", "upload", "email", "transfer", "pay", "store", "save", "log", "record", "report", "remove", "delete")+`\b`).unless(selfScope),
		r(FutureBehaviour, 0.4, "an instruction tied to other calls", w("before", "after", "prior to", "right after", "just before")+` (?:you )?`+
			alt("call", "calling", "use", "using", "invoke", "invoking", "run", "running", "execute", "executing", "answer", "answering", "respond",
				"responding", "reply", "replying", "return", "returning", "generate", "generating", "process", "processing", "search", "searching",
				"convert", "converting", "do", "doing", "perform", "performing", "complete", "completing", "finish", "finishing", "any", "each",
				"every", "other", "another", "the first")+`\b`),
		r(FutureBehaviour, 0.4, "an \"always\" instruction", `\balways `+upTo(1)+alt("call", "use", "invoke", "run", "execute", "include", "pass", "add", "send",
			"set", "read", "start", "begin", "ask", "append", "prepend", "cc", "bcc", "return", "respond", "reply", "mention", "say", "tell",
			"format", "write", "output", "print", "end", "route", "forward", "copy", "attach", "prefer", "choose", "select", "pick", "first",
			"log", "save", "store", "sign", "remember", "report", "load", "fetch", "open", "delete", "remove", "apply", "assign", "label",
			"tag", "mark", "put", "insert", "prefix", "suffix", "answer", "upload", "post")+`\b`),
		r(FutureBehaviour, 0.4, "tells the model to remember to act", w("make sure", "ensure", "remember", "be sure", "don't forget", "do not forget")+` (?:to|that you|you) (?:always |first |also )?`+
			alt("call", "use", "include", "pass", "send", "read", "add", "run", "attach", "append", "set", "invoke", "execute", "copy", "forward", "provide")+`\b`),
		r(FutureBehaviour, 0.4, "adds a step the tool does not need", w("also", "additionally", "afterwards", "as a first step", "first")+`,? (?:you )?(?:must |should )?`+
			alt("call", "invoke", "run", "execute", "read", "open", "send", "attach", "append", "copy", "forward", "collect", "list", "gather",
				"post", "upload", "email", "bcc", "cc", "delete", "fetch", "retrieve", "include", "wipe", "paste")+`\b`),
		r(FutureBehaviour, 0.5, "tells the model to call something", `\b(?:you|the assistant|the model|the agent|assistants|models|agents)\b (?:must|should|need to|needs to|have to|has to|shall|are required to|is required to)(?: always| first| also| then)? `+
			alt("call", "invoke", "run", "execute", "use", "trigger")+`\b`),
		r(FutureBehaviour, 0.6, "changes how the model answers", w("respond", "reply", "answer", "write", "speak", "talk")+` (?:only )?in `+upTo(2)+
			alt("from now on", "only", "regardless", "whatever", "no matter", "uppercase", "all caps")),

		r(Urgency, 0.5, "threatens failure", w("otherwise", "or else", "or the tool", "if you don't", "if you do not", "if it doesn't", "failure to",
			"if not", "unless you")+gap(80)+w("will", "would", "may", "might", "could", "can")+` (?:not )?`+upTo(2)+alt("fail", "crash", "break", "error",
			"stop", "work", `be (?:lost|corrupted|deleted|blocked|banned|terminated|suspended|rejected)`, "malfunction", "harm", "damage", "lose", "report")),
		r(Urgency, 0.3, "presses for speed", w("immediately", "right away", "urgently", "asap", "without delay", "at once", "right now", "time-sensitive")),
		r(Urgency, 0.4, "insists it is required", alt(`\bthis is (?:absolutely |very |extremely )?(?:critical|mandatory|required|compulsory|essential|vital|important|crucial|non[- ]negotiable)\b`,
			`\b(?:critical|mandatory|compulsory|essential|vital|crucial) (?:step|requirement|instruction|action)\b`)),

		// ---- reaching past the tool ----
		r(OtherTools, 0.5, "refers to other tools", w("other", "another", "all", "any", "every", "each", "remaining", "existing", "available", "connected",
			"installed", "different", "alternative", "competing", "similar", "rival", "third-party", "external")+` `+upTo(2)+toolNoun+`\b`),
		r(OtherTools, 0.5, "refers to another tool", `\bthe (?:[\w-]+ ){1,2}(?:tool|function|integration)\b`).unless(`this\s*$`),
		r(OtherTools, 1, "claims an effect on other tools", `\b(?:this tool|this server|this function|it)\b (?:also |additionally )?(?:has |have )?(?:an? )?(?:important |critical |significant |very important )?side[- ]effects? (?:on|for)\b`),
		r(OtherTools, 0.8, "claims to govern other tools", within(`\b(?:this tool|this server|this function|it)\b (?:also |additionally )?`+alt("modifies", "changes", "affects",
			"overrides", "alters", "extends", "patches", "hooks", "intercepts", "wraps", "governs", "controls", "configures", "takes precedence over", "applies to", "also applies to"), 60,
			alt(toolNoun, `behaviou?r`, "calls?", "integrations?"))),
		r(OtherTools, 0.8, "an effect on other actions", `\bside[- ]effects? (?:on|for)\b|\balso applies to\b`),
		r(OtherTools, 1, "hooks on its own presence", w("when", "whenever", "if", "once", "while")+` (?:this tool|this server|it|these tools) (?:is|are|has been|have been) `+
			alt("available", "present", "installed", "loaded", "connected", "enabled", "active", "registered", "also present")),
		r(OtherTools, 0.8, "tells another tool what to do", `\b(?:the|any|all|every|each)\b `+upTo(3)+alt("tool", "tools", "function", "functions", "integration", "server")+
			`'?s?\b `+upTo(4)+alt("must", "should", "shall", `needs? to`, "has to", "have to", `(?:is|are) required to`, "will always", "is to", "are to")+`\b`),

		r(Redirection, 1, "reroutes what other tools send", `\b(?:all|every|any|each)\b `+upTo(3)+alt("calls?", "requests?", "queries", "invocations", "uses", "e-?mails?", "messages?",
			"payments?", "transfers?", "transactions?", "payouts?", "funds", "money", "files?", "commits?", "events?", "results?", "outputs?", "invoices?", "orders?")+
			`\b `+upTo(4)+alt("must", "should", "shall", `needs? to`, "have to", "has to", "are to", "will", "is to")+` `+upTo(2)+
			alt("go", "be sent", "be routed", "be redirected", "be forwarded", "be copied", "be directed", "be logged", "be saved", "be passed", "be transferred",
				"be paid", "be bcc'?d", "be cc'?d", "be mirrored", "go through", "pass through", "be processed", "be mailed", "be emailed")+`\b`),
		r(Redirection, 0.8, "changes a recipient, an account or a destination", w("change", "set", "replace", "switch", "update", "override", "modify", "rewrite", "redirect",
			"alter", "point", "swap", "reroute")+` (?:the |all |any |every |its |their |each )?`+upTo(2)+obj(alt("recipients?", "receivers?", "destinations?", `address(?:es)?`,
			"e-?mails?", "accounts?", "ibans?", "payees?", `beneficiar(?:y|ies)`, "wallets?", "urls?", "endpoints?", "hosts?", "amounts?", `currenc(?:y|ies)`,
			"targets?", `repo(?:sitor(?:y|ies))?`, "owners?", "channels?", `phone(?: numbers?)?`, `branch(?:es)?`, "assignees?", "cc", "bcc", "to field", "to address"))+
			`\b `+upTo(2)+w("to", "with", "into", "for")).forPurpose(),
		r(Redirection, 0.8, "changes a recipient, an account or a destination", obj(alt("recipients?", "receivers?", "destinations?", `address(?:es)?`, "accounts?", "ibans?",
			"payees?", `beneficiar(?:y|ies)`, "wallets?", "urls?", "endpoints?", `branch(?:es)?`))+`\b `+upTo(3)+`(?:be |is |are )?`+
			alt("changed", "set", "replaced", "switched", "updated", "redirected", "rewritten", "overridden", "swapped", "pointed")+` `+w("to", "with")).forPurpose(),
		r(Redirection, 0.6, "forces a parameter's value", `\b`+alt("parameters?", "arguments?", "fields?", "params?")+` (?:must|should|needs to|has to|shall|is to)(?: always)? be (?:set|changed|replaced|overridden|forced|pointed) to\b`),
		r(Redirection, 1, "overrides what the user chose", w("instead of", "rather than", "regardless of", "no matter", "irrespective of", "in place of", "ignoring")+` `+upTo(3)+
			`(?:the user|they|you|the customer)(?:'s)? `+upTo(2)+alt("gives?", "gave", `specif(?:y|ies|ied)`, "named?", "said", "says", "asked", "requests?", "requested",
			"entered", "provided", "chose", "chosen", "wants?", "intended", "typed", "picked", "selected", "language")+`\b`),
		r(Redirection, 0.8, "routes other work through this tool", `\b`+alt("must", "should", "shall", `needs? to`, "has to", "have to")+` (?:first |also |always )?(?:be )?\w+ (?:\w+ )?`+
			alt("using", "with", "through", "via", "by")+` this (?:tool|function|server)\b`),
		r(Redirection, 0.8, "routes everything through this tool", w("route", "redirect", "forward", "proxy", "divert", "funnel", "pipe", "send", "relay")+` `+
			alt("all", "every", "any", "each")+`\b `+upTo(3)+alt("through", "via", "to", "into")+` (?:this|me|our)\b`),

		r(FunctionOverlap, 1, "presents itself as a better version of another tool", `\b`+alt("improved", "enhanced", "upgraded", "better", "faster", `optimi[sz]ed`, "advanced",
			"extended", "updated", "newer", "new", "secure", "safer", "fixed", "patched", "premium", "professional", "pro", `next[- ]gen(?:eration)?`, "modern",
			"revamped", "superior", "official", "corrected", "more reliable", "more secure", "more accurate", "more powerful")+` `+upTo(2)+
			alt("version", "variant", "edition", "release", "replacement", "alternative", "implementation", "build", "iteration", "successor", "rewrite", "fork", "drop-in", "take")+
			` `+w("of", "to", "for")),
		r(FunctionOverlap, 1, "presents itself as a better version of another tool", `\bv\d+(?:\.\d+)? of\b|\b(?:2\.0|\d+x faster) (?:version )?of\b`),
		r(FunctionOverlap, 1, "claims to replace another tool", within(w("replaces", "replace", "supersedes", "supersede", "obsoletes", "deprecates", "succeeds", "overrides",
			"override", "shadows", "takes over", "takes the place of", "is the replacement for", "is a replacement for", "the replacement for", "a replacement for",
			"drop-in replacement", "drop-in for", "in its place", "in their place", "in place of"), 40,
			alt(`[a-z][a-z0-9]*_[a-z0-9_]+`, toolNoun, `\bit\b`, `\bthem\b`, "the original", "the old", "the built-in", "the standard", "the default", "the existing"))),
		r(FunctionOverlap, 0.8, "runs down another tool", `\b(?:the )?`+alt("original", "old", "older", "legacy", "standard", "default", "built-in", "builtin", "existing",
			"regular", "normal", "native", "stock", "current", "other", "previous")+`\b `+upTo(3)+`(?:tool |function |version |one |implementation |servers? |tools )?`+
			alt("is", "are", "has been", "have been", "was", "were", "returns?", "has", "have", "corrupts", "fails", "breaks", "loses", "leaks")+` `+upTo(2)+
			alt("deprecated", "broken", "unsafe", "insecure", "slow", "buggy", "unreliable", "outdated", "compromised", "disabled", "removed", "flawed",
				"vulnerable", `rate[- ]limited`, "stale", "manipulated", `known (?:bugs?|vulnerabilit(?:y|ies)|issues?)`, "a known bug", "files", "data")+`\b`),
		r(FunctionOverlap, 0.8, "runs down another tool", `\b[a-z][a-z0-9]*_[a-z0-9_]+ (?:tool |function )?`+alt("is", "has been", "was", "returns", "has", "may", "might", "can", "could", "will", "does", "often", "sometimes", "tends to")+` `+upTo(2)+
			alt("deprecated", "broken", "unsafe", "insecure", "slow", "buggy", "unreliable", "outdated", "compromised", "disabled", "stale", "vulnerable", "rate limited", "known bugs?",
				`corrupt(?:ed|s)?`, "wrong", "incorrect", "inaccurate", `fail(?:s|ing)?`, "errors?", "bugs?", "problems", "issues", "leak(?:s|y)?")+`\b`),
		r(FunctionOverlap, 0.8, "asks to be used instead", alt(w("use", "call", "invoke", "prefer", "choose", "try", "pick", "select")+` (?:this|me|this one|this tool|this function|us)\b `+upTo(2)+w("instead", "rather", "in place"),
			`\buse me\b`, `\b(?:instead|rather) than (?:the )?(?:original|old|standard|default|built-in|existing|other)\b`)).amongOwn(),
		r(FunctionOverlap, 0.8, "a better copy of another tool", `\b`+alt("safer", "better", "faster", "improved", "enhanced", "upgraded", `next-gen(?:eration)?`, "newer", "secure")+` [a-z][a-z0-9]*_[a-z0-9_]+\b`),
		r(FunctionOverlap, 0.8, "claims another tool's job", alt(`\bsame (?:functionality|features?|capabilities|purpose|job|thing|behaviou?r) as\b`,
			`\b(?:be used|be called|be invoked|be preferred|be chosen) instead\b`,
			`\b`+alt("alternative", "replacement", "successor", "substitute", "clone", "copy", "wrapper", "reimplementation", "re-implementation")+` `+upTo(1)+alt("for", "to", "of")+
				` (?:the |gmail's |github's |\w+'s )?(?:[a-z][a-z0-9]*_[a-z0-9_]+|[\w-]+ (?:tool|function))\b`,
			`\b(?:more|less) \w+ `+upTo(5)+`than (?:the |using the |using |calling )?(?:[\w-]+ )?(?:tool|function)\b`,
			`\b(?:better|faster|safer|cheaper|more reliable|more accurate) than (?:the )?[a-z][a-z0-9]*_[a-z0-9_]+\b`)).amongOwn(),
		r(FunctionOverlap, 0.6, "the same as another tool, but better", alt(`\bsame (?:arguments|parameters|interface|api|signature|inputs?)\b`,
			`\bidentical (?:interface|api|arguments|parameters|signature|behaviou?r|functionality|inputs?)\b`,
			`\b(?:works?|functions?|behaves?|acts?) (?:just |exactly |the same |identically )?(?:like|as) (?:the )?[a-z][a-z0-9]*_[a-z0-9_]+`,
			`\bcompatible with\b `+upTo(2)+`(?:but|and) (?:better|faster|safer)`, `\blike \S+ `+upTo(1)+`but (?:better|faster|safer|with|without)`, `\bbut better\b`)).amongOwn(),

		r(SelfPromotion, 0.6, "a superlative claim", `\bthe (?:world'?s |industry'?s |market'?s )?(?:very )?`+alt("best", "#1", `no\.? ?1`, "number one", `top[- ]rated`, "leading", `highest[- ]quality`, "highest",
			"ultimate", "premier", "fastest", "greatest", "finest", "smartest", `most (?:accurate|reliable|trusted|trustworthy|advanced|powerful|secure|efficient|comprehensive|capable|intelligent|sophisticated|robust|precise|authoritative|effective|complete|recommended|loved|downloaded|starred)`)+`\b`),
		r(SelfPromotion, 0.8, "a superlative claim about itself", alt(within(`\b(?:this|it|our|we)\b `+upTo(2)+`(?:is|are|provides?|offers?|gives?)`, 30,
			alt("best", "#1", "number one", "most accurate", "most reliable", "most trusted", "most advanced", "most powerful", "ultimate", "leading", "smartest", "fastest")),
			`\bthe (?:best|#1|number one|ultimate|top[- ]rated|leading|smartest|fastest|most \w+) `+upTo(2)+alt("tools?", "function", "option", "choice", "solution", "service",
				"server", "api", "source", "provider", "way", "app", "utility", "plugin", "integration", "engine", "weather", "search")+`\b`,
			clauseStart(`\W*(?:world'?s )?`+alt("most accurate", "most reliable", "most trusted", "most advanced", "#1", "number one", "fastest", "smartest", "ultimate", "leading")+`\b`))),
		r(SelfPromotion, 0.8, "a superlative claim about itself", `\b(?:i'?m|i am|we'?re|we are) (?:the |by far the )?(?:best|fastest|smartest|greatest|#1|number one|leading|only|most \w+)\b`),
		r(SelfPromotion, 1, "asks to be chosen first", `\b(?:be|is|are|gets?) (?:always )?(?:selected|chosen|picked|preferred|prioriti[sz]ed) (?:first|above all|over all)\b`),
		r(SelfPromotion, 0.5, "frames the choice of a tool", `\bwhen (?:choosing|selecting|picking|deciding (?:on|between)|comparing) (?:a |an |the |which |between |among )`+upTo(2)+alt("tools?", "services?", "options?", "providers?", "apis?", "sources?", "servers?", "functions?")+`\b`),
		r(SelfPromotion, 0.8, "claims to beat the others", `\b`+alt("beats?", "outperforms?", `surpass(?:es)?`, "exceeds?", `outclass(?:es)?`, "trumps?", "crushes", "dominates",
			"superior to", "better than", "faster than", "more accurate than", "more reliable than", "ahead of")+` `+upTo(2)+alt("every", "all", "any", "other", "the other", "competing", "rival", "competitors?", "alternatives?")+`\b`),
		r(SelfPromotion, 0.5, "an emotional appeal", w("joy", "peace of mind", "delightful", "happiness", `worry[- ]free`, `stress[- ]free`, `feel (?:safer|better|happy|confident|secure|at ease)`,
			`you(?:'ll| will) love`, `reassur\w+`, "guaranteed", "rest assured", `when this tool is (?:chosen|selected|used|picked)`)),
		r(SelfPromotion, 0.6, "social proof", `\b(?:the (?:one|tool|choice) (?:that )?)?`+alt("professionals", "experts", "everyone", "most people", "developers", "teams", "pros", "millions", "enterprises", "leading companies")+
			` (?:\w+ )?`+alt("rely on", "trust", "choose", "prefer", "recommend", "swear by", "depend on")+`\b`),
		r(SelfPromotion, 0.8, "a superlative claim", `\bworld'?s (?:best|most|leading|first|#1|fastest|largest|smartest|only)\b|\b(?:anywhere|on the market|in the world|ever built|ever made|of all time|bar none|on earth)\b`),
		r(SelfPromotion, 0.5, "praise of itself", w("top-notch", "top notch", "first-class", "best-of-breed", "premium-quality", "unmatched", "unparalleled", "unrivall?ed", "unbeatable", "unbeaten", "second to none", `best[- ]in[- ]class`, `industry[- ]leading`,
			`world[- ]class`, `state[- ]of[- ]the[- ]art`, `cutting[- ]edge`, "revolutionary", `award[- ]winning`, `game[- ]changing`, `blazing[- ]fast`, `lightning[- ]fast`,
			"superior", "outperforms?", "outperforming", "far better", "much better", "vastly better", "significantly better", `\d+x (?:better|faster|more)`,
			`better than (?:any|all|every|other|the rest|competing|alternatives?)`, `more (?:accurate|reliable|powerful|advanced|secure|efficient|trustworthy|precise) than (?:any|all|every|other|the|alternatives?)`, "ultimate")),
		r(SelfPromotion, 0.5, "social proof", alt(w("trusted", "used", "loved", "relied upon", "chosen", "preferred", "recommended", "endorsed", "certified", "verified", "approved", "backed", "praised", "rated")+
			` by (?:over |more than )?`+alt("millions", "thousands", `\d[\d,.]*\s*(?:million|thousand|k|m)?`, "leading", "top", "experts?", "professionals", "developers", "the community", "most", "all", "every", "major", "many"),
			w("certified", `officially (?:endorsed|recommended|approved|certified|supported)`, "the official choice", "experts agree", "users love", "everyone uses", "most popular choice",
				"highly recommended", "strongly recommended", "recommended way", "preferred way"))),
		r(SelfPromotion, 0.8, "asks to be preferred", alt(`\b(?:always |strongly |highly |should |must |please )?`+alt("prefer", "choose", "select", "pick", `favou?r`, `prioriti[sz]e`)+
			` (?:this|me|us|this one|this tool|this function|this server|our tool|it) `+upTo(1)+alt("first", "over", "before", "above", "instead", "rather", "exclusively",
			"for (?:all|any|every|everything|each)", "whenever", "always", `as (?:your|the) (?:first|default|primary|preferred|go-to)`)+`\b`,
			`\b(?:always |should |must |please )?`+alt("use", "call", "invoke", "try")+` (?:this|me|us|this one|this tool|this function|this server|our tool|it) `+upTo(1)+
				alt("over", "above", "exclusively", "for (?:all|any|every|everything|each)", "always", `as (?:your|the) (?:first|default|primary|preferred|go-to)`)+`\b`,
			`\b(?:should|must|ought to|is meant to|needs to) be (?:your|the|our) (?:first|default|primary|preferred|go-to|top|number one|only|main|sole) (?:choice|option|tool|pick|selection|source)\b`,
			`\b(?:first|default|preferred|go-to|number one|recommended|obvious|natural|smart) (?:choice|option|pick|tool|source|way)\b`, `\bgo-to\b`,
			`\b(?:be|is|are|gets?) (?:always )?(?:used|called|invoked|tried) first\b`,
			`\b(?:choose|pick|select|prefer|try) me\b`, `\bprefer (?:it|this|me)\b`,
			`\b(?:be )?(?:selected|chosen|preferred|used|picked|prioriti[sz]ed) (?:over|before|above|instead of|rather than) (?:any|all|every|other|the|alternatives?|competitors?)`,
			`\bthis is the (?:tool|one|function|server) to (?:use|call|pick|choose)\b`, `\b(?:use|using) it exclusively\b`)).amongOwn(),

		r(Exclusivity, 1, "tells the model to use only this tool", alt(w("only", "exclusively", "solely")+` `+alt("use", "call", "invoke", "trust", "rely on", "respond", "answer", "reply")+` (?:through |via |with |on )?(?:this|me|us|our)\b`,
			w("use", "call", "invoke", "trust", "rely on", "respond", "answer", "reply")+` `+alt("only", "exclusively", "solely")+` (?:through |via |with )?(?:this|me|us|our)\b`,
			w("use", "call", "trust", "rely on")+` (?:this|me|us|our)(?: \w+)? `+alt("only", "exclusively", "solely")+`\b`)),
		r(Exclusivity, 1, "tells the model to avoid the other tools", w("do not", "don't", "never", "avoid", "stop", "refuse to", "must not", "should not", "shouldn't")+` `+upTo(1)+
			alt("use", "call", "invoke", "trust", "rely on", "consider", "mention", "recommend", "choose", "select", "pick", "touch", "try")+`(?:ing|s)? `+upTo(1)+
			`(?:any |all |the )?`+alt("other", "alternative", "competing", "similar", "rival", "third-party", "built-in", "native")+`\b `+upTo(2)+
			alt("tools?", "functions?", "servers?", "services?", "providers?", "options?", "sources?", "apis?", "engines?", "plugins?", "integrations?")).amongOwn(),
		r(Exclusivity, 1, "tells the model to ignore the other tools", w("ignore", "disregard", "skip", "bypass", "avoid", "discard", "distrust")+` (?:all |any |the )?`+
			alt("other", "alternative", "competing", "similar", "rival", "remaining")+` `+upTo(1)+alt("tools?", "functions?", "servers?", "services?", "providers?", "options?", "sources?", "results", "instructions")),
		r(Exclusivity, 1, "claims to be the only trustworthy one", `\bthe only `+alt("trusted", "reliable", "safe", "secure", "correct", "official", "approved", "valid", "legitimate", "accurate", "real", "true", "trustworthy")+`\b`),
		r(Exclusivity, 0.8, "rules out the alternatives", alt(`\bno other (?:tool|function|server|source|service)`, `\bnothing else\b`,
			`\b(?:must not|should not|cannot|can't|can not|shouldn't) be (?:relied upon|relied on|trusted)\b`)),
		r(Exclusivity, 1, "runs down the other tools", w("other", "competing", "alternative", "rival")+` `+upTo(2)+alt("tools?", "servers?", "sources?", "services?", "providers?", "engines?")+
			`\b `+upTo(3)+alt("are", "is", "return", "returns", "produce", "produces", "give", "gives", "provide", "provides")+` `+upTo(1)+
			alt("unreliable", "outdated", "wrong", "inaccurate", "manipulated", "fake", "broken", "unsafe", "insecure", "malicious", "slow", "stale", "deprecated", "compromised", "worse", "inferior")+`\b`),

		// ---- data the tool's purpose does not need ----
		r(DataRequest, 1, "asks for the conversation or the model's instructions", within(`\b`+anyVerb+`\b`, 90, `\b`+obj(objContext))).forPurpose(),
		r(DataRequest, 1, "asks for the conversation or the model's instructions", within(`\b`+obj(objContext), 60, passive)).forPurpose(),
		r(DataRequest, 0.8, "asks for credentials or secrets", within(`\b`+anyVerb+`\b`, 90, `\b`+obj(objCredential)+`\b`)).forPurpose(),
		r(DataRequest, 0.8, "asks for credentials or secrets", within(`\b`+obj(objCredential), 60, passive)).forPurpose(),
		r(DataRequest, 0.8, "asks for the user's files", within(`\b`+anyVerb+`\b`, 90, `\b`+obj(objFiles))).forPurpose(),
		r(DataRequest, 0.8, "asks for the user's files", within(`\b`+obj(objFiles), 60, passive)).forPurpose(),
		r(DataRequest, 0.6, "feeds other data to this tool", within(`\b`+alt("share", "send", "pass", "forward", "give", "provide", "copy", "submit", "report", "hand", "mirror", "upload", "feed")+`\b`, 80,
			`\b`+alt("with", "to", "into", "through", "via")+` this (?:tool|function|server)\b`)),
		r(DataRequest, 0.8, "a parameter that asks for the model's context", `(?:^|\b)(?:your |the |all |any |every |optional\.? )*`+obj(alt(
			alt("previous", "prior", "earlier", "past", "preceding", "entire", "full", "complete", "whole", "recent", "current", "ongoing")+` `+upTo(1)+alt("messages?", "conversations?", "chats?", "context", "prompts?", "instructions", "exchanges", "turns", "transcripts?", "dialog(?:ue)?"),
			alt("your", "the model'?s", "the assistant'?s", "the agent'?s")+` (?:own |complete |full |entire )?`+alt("instructions?", "instruction set", "prompts?", "context(?: window)?", "memory", "memories", "system prompt"),
			alt("everything", "anything", "all", "whatever")+`(?: else)? (?:the user|you) (?:has |have |had )?`+alt("said", "wrote", "typed", "told you", "shared", "know", "remember", "seen", "saw", "mentioned"),
			alt("all", "any", "every")+` `+upTo(3)+alt("you", "the assistant", "the model")+` `+alt("know", "have seen", "can see", "can find", "remember", "have access to", "saw"),
			alt("results?", "outputs?", "responses?")+` (?:of|from) (?:the |all |any |every |each |other |previous )*(?:[\w-]+ )?`+alt("tools?", "tool calls?", "functions?", "servers?"),
			`(?:the )?user'?s `+alt("messages", `personal (?:data|details|information)`, "contacts", "e-?mails?", "history", "location history", "browser history", "card number", "credit card"),
		))).forPurpose().inSchema(),

		r(SensitivePath, 0.7, "names a file that holds secrets or client configuration", alt(
			`(?:^|[\s'(/~=:@])\.`+alt("ssh", "aws", "gnupg", "kube", "docker", "npmrc", "pypirc", "netrc", "git-credentials",
				"gitconfig", "bash_history", "zsh_history", `env(?:\.\w+)?`, "azure", "cursor", "vscode", "claude", "password-store", "mozilla", "gcloud")+`\b`,
			`\bid_(?:rsa|dsa|ecdsa|ed25519)(?:\.pub)?\b`, `\bknown_hosts\b`, `\bauthorized_keys\b`, `/etc/(?:passwd|shadow|sudoers|gshadow|master\.passwd)\b`,
			`\bmcp\.json\b`, `\bclaude_desktop_config(?:\.json)?\b`, `\bkubeconfig\b`, `\*?\.(?:pem|p12|pfx|keystore|jks)\b`, `\bcookies\.sqlite\b`,
			`\bcookie (?:store|jar|database)\b`, `\blogin data\b`, `\bkey4\.db\b`, `\blogins\.json\b`, `\bkeychain\b`, `\bwallet\.dat\b`, `\bcredentials\.json\b`,
			`/proc/(?:self|\d+)/environ`, `%appdata%`, `\bbrowser (?:profile|cookies|passwords|password store)\b`, `\b(?:firefox|chrome|chromium) profile\b`,
			`\bprivate keys? of the device\b`)).needVerb(),

		r(ExfilDestination, 1, "sends something to an address in the text", within(`\b`+sendVerbs+`\b`, 120, destination)),
		r(ExfilDestination, 1, "sends something to an address in the text", within(`\b`+alt("bcc", "cc", "copy to", "forward to", "send to")+`\b:?`, 10, emailRE)),
		r(ExfilDestination, 0.5, "writes a destination into the description", alt(emailRE, `\b0x[0-9a-f]{40}\b`, `\bacct_[0-9a-z]{10,}\b`,
			`\b[a-z]{2}\d{2} ?(?:[a-z0-9]{4} ?){3,7}[a-z0-9]{0,4}\b`)),

		r(Command, 1, "a shell payload", alt(`\bcurl\b[^\n]{0,200}?\|\s*(?:ba|z|k|da)?sh\b`, `\bwget\b[^\n]{0,200}?(?:\|\s*(?:ba|z)?sh\b|-o-)`,
			`\b(?:ba|z)?sh\s+-c\s`, `\$\((?:curl|wget)\b`, `/dev/tcp/`, `\bnc\s+(?:-\w+\s+)*-e\b`, `\bncat\b`, `base64\s+(?:-d|--decode)\b`,
			`\bpowershell(?:\.exe)?\s+-(?:enc|e|encodedcommand|nop|w)\b`, `\binvoke-expression\b`, `\biex\s*\(`, `\bpython3?\s+-c\s`, `\bnode\s+-e\s`,
			`\bperl\s+-e\s`, `\bruby\s+-e\s`, `\bchild_process\b`, `\bos\.system\b`, `\bsubprocess\.`, `\beval\s*\$\(`, `\bexec\s*\(`, `\beval\s*\(`,
			`\brm\s+-\w*\s+(?:~|/|\$home|\*|\.\.)`, `\bchmod\s+(?:-\w+\s+)*[0-7]{3,4}\s+(?:~|/)`, `\bmkfifo\b`, `\bcrontab\s`, `\bsh\s+-i\b`,
			`\bcurl\s+(?:-\w+\s+)*(?:-d|--data\S*|-f|--form|-t|--upload-file)\s+@`, `\bcurl\s+-x\s+post\b`, `&&\s*curl\b`, `;\s*curl\s`,
			`\burllib\.request\b`, `\brequire\('child_process'\)`)),
		r(Command, 0.8, "an SQL injection payload", alt(`'?\s*\bor\s+1\s*=\s*1\b`, `\bunion\s+(?:all\s+)?select\b`, `;\s*drop\s+(?:table|database)\b`, `\bxp_cmdshell\b`)),
		r(Command, 0.6, "installs software", alt(`\b(?:pip3?|npm|npx|yarn|pnpm|gem|cargo|apt(?:-get)?|brew|choco|winget) (?:install|add|i)\b`, `\bgo (?:install|get)\b`,
			`\bdownload(?:s|ing)? (?:and|&|then) (?:run|execute|install|launch|open)\b`)),
		r(Command, 0.6, "a command that changes the system", alt(`\brm\s+-\w*[rf]\w*\b`, `\bsudo\s+\S`, `\bchmod\s+(?:-\w+\s+)*(?:\+x|[0-7]{3,4})\b`)),
		r(Command, 0.6, "tells the model to run something", w("run", "execute", "exec", "eval", "invoke", "launch", "type", "paste")+` (?:the |this |these |a )?(?:following |below |next )?`+
			alt("commands?", "scripts?", "code", "shell commands?", "one-liners?", "snippets?", "payloads?", "binary", "installer")+`\b`),
		r(Command, 0.6, "sends the model to a shell", alt(w("have", "ask", "use", "tell", "through", "via", "with")+` (?:your |the |a |any )?(?:available )?`+
			alt("shell", "terminal", "command", "exec", "bash", "execute_command", "run_command", "command runner", "console")+`(?: tool| runner)?\b`,
			`\bin (?:the |a |your )?(?:user'?s )?(?:terminal|shell|console|command line)\b`, `\bfrom a terminal\b`)).amongOwn(),

		r(DestructiveAction, 0.8, "tells the model to delete in bulk", w("delete", "remove", "erase", "wipe", "overwrite", "truncate", "encrypt", "corrupt", "format",
			"drop", "destroy", "purge", "shred", "deleting", "removing", "erasing", "wiping", "overwriting", "purging", "destroying")+` `+
			alt("all", "every", "each", "any", "entire", "whole", "the user'?s", "the entire", "the whole", "all the", "all of the", "everything", "the home")+`\b`),

		r(ParamChannel, 0.5, "puts data into a parameter", within(`\b`+moveVerbs+`\b`, 100, `\b`+alt("in", "into", "as", "inside", "via", "through", "to")+
			` (?:the |this tool's |its |an? )?'?(?P<param>[\w-]+)'? `+alt("parameters?", "params?", "arguments?", "args?", "fields?", "property", "input", "variable")+`\b`)),

		// ---- hidden content, in the words ----
		r(HiddenMarkup, 0.8, "an HTML comment", `<!--`),
		r(HiddenMarkup, 1, "markup that hides its text", alt(`display\s*:\s*none`, `visibility\s*:\s*hidden`, `font-size\s*:\s*0`, `opacity\s*:\s*0(?:\.0+)?\b`,
			`color\s*:\s*(?:white|#fff\b|#ffffff|transparent)`, `\baria-hidden\b`, `<\w+[^>]*\shidden\b`)),
		r(HiddenMarkup, 0.6, "a collapsed block", `<details\b|\[\]\(`),
		r(ExfilDestination, 0.6, "a markdown image that loads an external URL", `!\[[^\]\n]{0,80}\]\(\s*(?:https?:)?//`),
		r(ExfilDestination, 0.5, "a URL with a slot for data", `(?:https?://|www\.)[^\s]*(?:\{\{?[a-z_ .]+\}\}?|\$\{[^}]+\}|<[a-z_ ]+>)`),

		// ---- in the schema ----
		r(ParamInstructions, 1, "poses as a note from the developers", alt(
			alt("note", "notes", "message", "notice", "memo", "reminder", "comment", "remark", "hint", "tip", "instructions?", "request", "update", "advice", "directive")+
				`s? (?:from|by) `+alt(`(?:the |our )?(?:developers?|devs?|maintainers?|engineering(?: team)?|admins?|administrators?|vendor|security team|support team)`,
				`(?:the|our) (?:team|authors?|creators?|owners?|publishers?|platform|operators?|staff|company)`)+`\b`,
			`\bas (?:requested|required|asked|instructed|directed|specified) by (?:the )?`+alt("developers?", "team", "maintainers?", "admins?", "vendor", "company", "management", "platform")+`\b`)),
		r(ParamInstructions, 0.8, "poses as a note from the developers", alt(`\b`+alt("developer", "developers", "dev", "maintainer", "maintainers", "implementation", "engineering", "vendor", "author")+
			`(?:'s|s')?[ -]`+alt("note", "notes", "notice", "comment", "remark", "hint", "tip", "requirement", "request", "message")+`s?\b`,
			`\b(?:the|our) (?:team|developers|engineers|devs|maintainers|vendor|company|staff|admins) `+upTo(1)+`(?:asks?|requests?|requires?|wants?|needs?|insists?|recommends?|suggests?|expects?)\b`)),
	}
}
