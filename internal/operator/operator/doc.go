// Package operator is the operator's API: what a person, not the agent, may
// do to an Airlock — read and verify the audit trail, rotate it, anchor it
// (witness checkpoints), trip and release the kill switch, move a context
// between planning and execution, approve or deny declared needs, review
// and approve upstream tool definitions (pins), create child contexts and
// read contexts, sessions and usage. The CLI's operator commands and the
// web console both call it, so an order means one thing whichever way it
// comes.
//
// The invariant it keeps: the operator's side never executes a tool call.
// It reads the store and records decisions in it — every change it makes is
// itself an audit record, written before (or, for engaging the kill switch,
// right after) the change takes effect — and it never imports the runner
// (TestLayerOrder's forbidden imports). Upstream reviews connect to an
// upstream and list its tools; they never call one.
//
// An [API] comes from [Open] (a CLI command beside, or without, a running
// server: its own store connection) or [Attach] (the console inside a
// running server: the engine's own store, lent through state.Lent).
package operator
