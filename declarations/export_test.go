package declarations

// The unexported names the black-box tests (package declarations_test)
// check directly: the text rules, the source-name rule and the state
// machine's table.
var (
	BadRune     = badRune
	CheckSource = checkSource
	Transitions = transitions
)

// States returns every state, in lifecycle order.
func States() []State { return append([]State(nil), allStates...) }
