package poisoning

import (
	"fmt"
	"strings"
)

// The word classes the rules are written in. Each rule combines classes
// (an imperative verb with a sensitive object in one clause, a bracket
// with an authority word) rather than listing whole phrases, so a
// rewording of a known attack still matches; the tests hold paraphrases
// of every rule (TestSignals) and a held-out corpus no rule was tuned on
// (TestPoisoningCorpus).

// alt is a non-capturing alternation.
func alt(ws ...string) string { return `(?:` + strings.Join(ws, "|") + `)` }

// gap is up to n characters inside one clause: no sentence end, no
// newline (a dot followed by a non-space, as in a path or a domain, does
// not end it).
func gap(n int) string { return fmt.Sprintf(`(?:[^.!?;\n]|\.\S){0,%d}?`, n) }

// upTo is up to n whole words.
func upTo(n int) string { return fmt.Sprintf(`(?:[\w'-]+ ){0,%d}?`, n) }

var (
	// Imperative (base-form) verbs that move data: instructions say
	// "include", descriptions of honest tools say "includes".
	moveVerbs = alt("include", "pass", "send", "attach", "append", "prepend", "add", "provide", "insert", "put", "embed", "copy",
		"forward", "share", "upload", "post", "transmit", "submit", "supply", "fill", "populate", "report", "leak", "exfiltrate",
		"encode", "concatenate", "dump", "output", "print", "log", "store", "save", "write", "enter", "place", "mirror", "sync",
		"relay", "deliver", "export", "expose", "reveal", "disclose", "paste", "return", "bcc", "cc", "email", "mail", "give",
		"hand over", "set", "pre-fill", "prefill", "tell", "echo", "repeat", "summari[sz]e", "contain")
	// Imperative verbs that gather data.
	readVerbs = alt("read", "open", "cat", "load", "fetch", "retrieve", "collect", "gather", "extract", "grab", "obtain", "get",
		"access", "scan", "list", "enumerate", "look up", "search", "find", "inspect", "harvest", "capture", "record",
		"compile", "look at", "view", "browse", "check")
	anyVerb = alt(moveVerbs, readVerbs)
	// The same, passive: "must be included in", "is mailed to".
	passive = `\b` + alt("be", "is", "are", "been", "get", "gets") + ` ` + upTo(2) + alt("included", "sent", "passed", "attached", "appended",
		"forwarded", "provided", "added", "uploaded", "posted", "copied", "shared", "transmitted", "submitted", "supplied", "embedded",
		"inserted", "read", "collected", "gathered", "extracted", "retrieved", "placed", "put", "mailed", "emailed", "reported",
		"logged", "stored", "saved", "filled", "populated", "given", "handed", "required", "needed", "attached") + `\b`

	// Objects: what a tool should not ask the model for, by class. Each
	// is a named group "obj" in the rules so that its head noun can be
	// checked against the tool's purpose (a Slack history tool may speak
	// of messages; a calculator may not).
	objContext = alt(
		alt("conversation", "chat", "dialog", "dialogue", "message", "session", "interaction", "browsing", "browser", "search",
			"query", "request", "command", "shell", "bash", "terminal", "clipboard", "prompt", "location", "call")+`s? `+alt("history", "histories", "logs?", "transcripts?"),
		alt("previous", "prior", "earlier", "past", "preceding", "entire", "full", "complete", "whole", "recent", `last (?:\d+|few|five|three|ten|two|\w+)`,
			"above", "current", "original", "ongoing")+` `+upTo(1)+alt("user ", "chat ", "conversation ", "session ", "")+
			alt("messages?", "conversations?", "chats?", "context", "prompts?", "instructions", "exchanges", "turns", "transcripts?",
				"discussion", "dialog(?:ue)?", "requests?", "queries", "questions", "e-?mails?", "inputs?"),
		`system `+alt("prompts?", "messages?", "instructions?", "configuration", "rules"),
		alt("your", "the model'?s", "the assistant'?s", "the agent'?s", "the ai'?s", "the llm'?s")+` (?:own |complete |full |entire )?`+
			alt("instructions?", "instruction set", "prompts?", "context(?: window)?", "memory", "memories", "guidelines", "rules",
				"reasoning", "thoughts", "chain of thought", "configuration", "setup"),
		alt("complete", "full", "entire", "whole")+` `+alt("instruction set", "context window", "context"),
		`contents? of (?:the |this |our |your )?(?:current |whole |entire |full |ongoing )?`+alt("conversation", "chat", "dialog(?:ue)?", "session", "context", "thread", "discussion"),
		`(?:the )?`+alt("user'?s", "users'", "customer'?s", "their")+` (?:[\w'-]+,? (?:and |or )?){0,3}?`+alt("messages", "queries", "name", "prompts", "requests?",
			"questions", `personal (?:data|details|information|info)`, `private (?:data|details|information|files)`, `contacts?(?: list)?`,
			"contact list", "address book", "e-?mails?", `email address(?:es)?`, `(?:home )?address(?:es)?`, `phone(?: numbers?)?`,
			`location(?: history)?`, "files", "documents", "secrets", "notes", "photos", "full name", "card number", "credit card",
			"identity", `browser history`, "history", "vocabulary"),
		alt("results?", "outputs?", "responses?", "return values?", "data", "contents?", "descriptions?", "arguments", "args",
			"parameters", "inputs")+` `+alt("of", "from", "returned by", "produced by", `(?:that )?you (?:received|got) from`, "received from")+
			` (?:the |all |any |every |each |other |previous |prior |earlier |connected |available )*(?:[\w-]+ )?`+
			alt("tools?", "tool calls?", "function calls?", "functions?", "servers?", "calls?", "integrations?"),
		alt("other", "another", "each", "every", "any", "all")+`(?: [\w-]+)? tools?'?s? (?:full )?`+alt("results?", "outputs?", "responses?",
			"arguments", "args", "data", "descriptions?", "names", "list", "schemas?", "definitions?", "contents?", "parameters", "inputs"),
		`the tool'?s (?:full |complete |entire )?`+alt("output", "result", "response"),
		alt("list", "names", "descriptions?", "schemas?", "definitions?")+` of (?:all |the |every |each |available |other |your )*`+
			alt("tools", "functions", "servers", "integrations"),
		`(?:all|every) (?:of )?(?:the )?`+alt("tools", "functions")+` (?:you|that you) (?:have|can)`,
		alt("everything", "anything", "all", "whatever")+`(?: else)? (?:the user|you) (?:has |have |had )?`+
			alt("said", "wrote", "written", "typed", "told you", "shared", "know", "remember", "seen", "saw", "can see", "mentioned"),
		alt("all", "any", "every")+` `+upTo(3)+alt("you", "the assistant", "the model")+` `+
			alt("know", "have seen", "can see", "can find", "remember", "have access to", "saw"),
		alt("recently", "last", "most recently")+` `+alt("opened", "used", "edited", "modified", "accessed", "viewed")+` `+alt("files?", "documents?", "urls?", "pages?"),
	)
	objCredential = alt(
		alt("api", "access", "auth", "authentication", "bearer", "session", "refresh", "oauth", "id", "github", "gitlab", "slack",
			"aws", "openai", "anthropic", "secret", "personal access", "npm", "pypi", "jwt", "client")+`[ _-]?`+alt("keys?", "tokens?", "secrets?"),
		"passwords?", "passphrases?", "passcodes?", "secrets?", "credentials?", `private[ _-]?keys?`, `ssh[ _-]?keys?`, `gpg[ _-]?keys?`,
		`pgp[ _-]?keys?`, "signing keys?", "seed phrases?", `mnemonic(?: phrases?)?`, `recovery (?:phrases?|codes?|keys?)`,
		`wallet (?:keys?|files?|seeds?)`, "2fa codes?", "otp", `one[- ]time (?:codes?|passwords?)`, "cookies?", "session ids?", "tokens?",
		"environment variables?", `env(?:ironment)? vars?`, `(?:full |whole |entire )?environment`, "printenv",
		`credit card(?: numbers?)?`, "card numbers?", "cvv", "cvc", `social security(?: numbers?)?`, "ssn",
		`bank (?:account|details|login)s?`, "routing numbers?")
	objFiles = alt(
		alt("home", "root", "downloads", "documents", "desktop", "pictures", "photos", `\.config`, `\.ssh`)+` `+alt("directory", "directories", "folders?", "dir"),
		alt("all", "every", "each", "any")+` `+upTo(2)+alt("files?", "documents?", "folders?", "directories")+` `+alt("in", "under", "on", "from", "of", "inside", "within"),
		alt("directory", "file", "folder")+` `+alt("listing", "tree", "structure", "list"),
		`contents? of (?:the |your |every |all |each |any )?(?:user'?s )?(?:[\w.-]+ )?`+alt("files?", "directory", "folder", "home", "disk", "drive"),
	)

	// Words of authority a tag or a heading dresses text up in.
	authorityWords = alt("important", "system", "sys", "admin", "administrator", "root", "sudo", "critical", "urgent", "internal",
		"override", "priority", "security", "developer", "dev", "maintainer", "assistant", "ai", "model", "llm", "agent",
		"secret", "hidden", "confidential", "compliance", "mandatory") +
		`(?:[ _-]+` + alt("note", "notes", "notice", "message", "instructions?", "override", "comment", "memo", "directive", "alert",
		"warning", "prompt", "update", "mode", "only", "info", "information", "instruction", "request", "rules?", "protocols?", "guidelines?",
		"requirements?", "policy", "context", "task", "constraints?", "orders?", `behaviou?r`) + `)?`
	tagWords = alt(authorityWords, "instructions?", "directive", "attention", "inst",
		`(?:note|message|memo|notice) (?:to|for) (?:the )?`+alt("ai", "assistant", "model", "llm", "agent"))

	// Who a description may address when it speaks to the model.
	modelWords = alt("ai", `a\.i\.`, "assistants?", "models?", "llms?", "agents?", "bots?", "chatbots?", "claude", "gpt", "chatgpt",
		"copilot", "gemini", "cursor", "language models?", "ai models?", "ai assistants?", "calling agents?")

	// A tool-ish noun: what a description refers to when it means another tool.
	toolNoun = alt("tools?", "functions?", "servers?", "mcp servers?", "plugins?", "integrations?", "extensions?", "connectors?")

	// A destination written into the text.
	urlRE   = `(?:https?://|www\.)\S+`
	emailRE = `[a-z0-9._%+-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}`
	ipRE    = `\b\d{1,3}(?:\.\d{1,3}){3}\b`
	domain  = `\b[a-z0-9-]+(?:\.[a-z0-9-]+)*\.` + alt("com", "net", "org", "io", "app", "dev", "co", "xyz", "ru", "cn", "sh", "example",
		"evil", "site", "info", "biz", "me", "cc", "tk", "top", "ai", "cloud", "online") + `\b(?:/\S*)?`
	destination = alt(urlRE, emailRE, ipRE, domain)
	sendVerbs   = alt("send", "sent", "post", "posted", "upload", "uploaded", "forward", "forwarded", "transmit", "report", "submit",
		"copy", "bcc", "cc", "email", "e-mail", "mail", "mailed", "emailed", "deliver", "delivered", "relay", "sync", "mirror",
		"export", "log", "beacon", "ping", "notify", "leak", "exfiltrate", "push", "add", "append", "include", "attach", "share",
		"route", "redirect", "direct", "go", "goes", "uploads", "sends", "forwards", "posts", "transfer")
)
