package poisoning

// Signal names one kind of evidence the review reports. The names are
// stable: `airlock upstreams review --json` prints them, and operators
// gate approvals on them in their own tooling.
type Signal string

// The signals, by what an attacker does with a definition.
const (
	// Hidden content: text the reviewer does not see but the model reads.
	HiddenCharacters Signal = "hidden-characters" // zero-width, bidi, tag, control characters
	Homoglyphs       Signal = "homoglyphs"        // look-alike letters of other scripts, fullwidth or mathematical letters
	HiddenMarkup     Signal = "hidden-markup"     // HTML comments, display:none, collapsed blocks
	Padding          Signal = "padding"           // runs of blank lines or spaces pushing text out of view
	LongDescription  Signal = "long-description"  // more text than a tool needs to say what it does

	// Words addressed to the model rather than the user.
	AuthorityMarker      Signal = "authority-marker"      // <IMPORTANT>, [SYSTEM], INTERNAL NOTE, chat-template roles, in any bracket or case
	AddressesModel       Signal = "addresses-model"       // "note to the AI", "as an assistant you …"
	OverrideInstructions Signal = "override-instructions" // "ignore previous instructions", "you are now …"
	Concealment          Signal = "concealment"           // "do not tell the user", "silently", fake consent
	FutureBehaviour      Signal = "future-behaviour"      // "always", "from now on", "before calling …", "every time …"
	Urgency              Signal = "urgency"               // threats and pressure: "or the tool will fail", "immediately"

	// Reaching past the tool itself.
	OtherTools      Signal = "other-tools"      // names other tools or upstreams: shadowing
	Redirection     Signal = "redirection"      // changes a recipient, an account, a destination
	FunctionOverlap Signal = "function-overlap" // "an improved version of X", "replaces X"
	SelfPromotion   Signal = "self-promotion"   // "the best", "#1", "trusted by millions", "always prefer this"
	Exclusivity     Signal = "exclusivity"      // "only use this", "do not use other tools"

	// Data the tool's purpose does not need.
	DataRequest       Signal = "data-request"       // read, send or include the conversation, credentials, files, other tools' output
	SensitivePath     Signal = "sensitive-path"     // ~/.ssh, .env, mcp.json, /etc/passwd, cookie stores …
	ExfilDestination  Signal = "exfil-destination"  // send … to a URL, an e-mail address, an IP
	Command           Signal = "command"            // shell payloads: curl | sh, rm -rf, nc -e, base64 -d | bash
	DestructiveAction Signal = "destructive-action" // "delete all files", "wipe the home directory"

	// In the schema.
	ParamInstructions   Signal = "param-instructions"   // instructions in parameter descriptions, titles, defaults, enums, examples
	ParamChannel        Signal = "parameter-channel"    // "put it in the `notes` parameter": a parameter as a channel for data
	SuspiciousParameter Signal = "suspicious-parameter" // a parameter named to carry the model's context or secrets

	// Across the catalog (only with a [Catalog]).
	LookalikeName Signal = "lookalike-name" // a near-copy of another upstream's tool name
	ShadowedName  Signal = "shadowed-name"  // the same name as another upstream's tool
)

// Explain says what a signal is evidence of, for the review.
func (s Signal) Explain() string { return explanations[s] }

var explanations = map[Signal]string{
	HiddenCharacters:     "holds characters a reader cannot see but a model reads (zero-width, bidi, tag, control or private-use characters)",
	Homoglyphs:           "spells words with look-alike letters of another script, or with fullwidth or mathematical letters, which word lists and reviewers miss",
	HiddenMarkup:         "hides text in markup a rendered view does not show (an HTML comment, display:none, a collapsed block)",
	Padding:              "pushes text out of view with runs of blank lines or spaces",
	LongDescription:      "is far longer than a tool needs to say what it does: room for instructions a reviewer skims past",
	AuthorityMarker:      "dresses text up as coming from the system, an administrator or the developers (a tag like <IMPORTANT> or [SYSTEM], a chat-template role, an \"internal note\")",
	AddressesModel:       "speaks to the model rather than describing the tool",
	OverrideInstructions: "tells the model to set aside its instructions or to take on a new role",
	Concealment:          "tells the model to hide what it does from the user, to act silently, or claims the user already agreed",
	FutureBehaviour:      "instructs how the model should behave beyond this call (always, from now on, before or after other calls)",
	Urgency:              "pressures the model with urgency or threats of failure",
	OtherTools:           "refers to other tools or upstreams: a description that changes how another tool behaves (tool shadowing)",
	Redirection:          "changes where something goes: a recipient, an account, a destination, a route through this tool",
	FunctionOverlap:      "presents the tool as an improved version or replacement of another tool (function overlapping)",
	SelfPromotion:        "promotes itself to be chosen over other tools (preference manipulation)",
	Exclusivity:          "tells the model to use only this tool or to avoid the others",
	DataRequest:          "asks for data the tool's purpose does not need: the conversation, the model's instructions, credentials, files, other tools' results",
	SensitivePath:        "names a file that holds secrets or configuration (SSH keys, .env, credentials, MCP client config, cookie stores)",
	ExfilDestination:     "sends something to an address given in the text (a URL, an e-mail address, an IP)",
	Command:              "carries a shell command or code to run (a download piped to a shell, a reverse shell, recursive deletion)",
	DestructiveAction:    "tells the model to delete, wipe or overwrite data in bulk",
	ParamInstructions:    "hides instructions in the input schema (a parameter's description, title, default, enum or example), where reviewers rarely look",
	ParamChannel:         "tells the model to put data into a parameter, a channel out of the conversation",
	SuspiciousParameter:  "has a parameter whose name invites the model to pass its context, another tool's data or secrets",
	LookalikeName:        "has a name that nearly copies another upstream's tool (a typo, a digit for a letter, another separator, a decoration such as _v2)",
	ShadowedName:         "has the same name as another upstream's tool",
}

// Signals lists every signal in a stable order (for documentation and
// tooling).
func Signals() []Signal {
	return []Signal{
		HiddenCharacters, Homoglyphs, HiddenMarkup, Padding, LongDescription,
		AuthorityMarker, AddressesModel, OverrideInstructions, Concealment, FutureBehaviour, Urgency,
		OtherTools, Redirection, FunctionOverlap, SelfPromotion, Exclusivity,
		DataRequest, SensitivePath, ExfilDestination, Command, DestructiveAction,
		ParamInstructions, ParamChannel, SuspiciousParameter, LookalikeName, ShadowedName,
	}
}
