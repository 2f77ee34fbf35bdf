// Package runner is the only code that executes a tool call.
//
// Every call, whatever the transport, becomes [Session.Run]. This is what
// happens to it, in the order the code does it (run.go, then finish.go,
// where each line below is marked "step:"; TestDocListsTheSteps keeps the
// two equal). The numbers are the thirteen steps of Airlock's design, which
// SECURITY.md and package toolkit cite; the lines without a number are what
// the code does between them.
//
//   - open: a call id on every log line the call causes, a record for it, a trace span
//   - 7. redact: the arguments are redacted for the record first, so that whatever ends the call,
//     the record holds only redacted arguments (oversized ones by hash only)
//   - look up the tool: by name; an unknown one is UNKNOWN_TOOL, its name cut short before it is
//     echoed or recorded
//   - load the context: the runtime context and its ancestors from the store (each must still
//     restrict its parent), its effective phase, the policy in force and this process's binding of
//     its pools, on every call, so an operator's change is seen at once
//   - 1. decode + validate: against the tool's JSON Schema, then strictly into its argument type
//     (unknown fields, trailing data, wrong types refused), then the type's own Validate
//   - expand: a tool's Expand replaces a reference with what it refers to (a declaration id with
//     its stored need), re-validated, so the policy judges the real target; a comm.mcp need is
//     checked against its pinned definition here (upstreams.go)
//   - 2. classify: the tier and the capability, from the tool's declaration, never from the agent
//   - 3. kill switch: read by every call, file and store (killswitch.go); an unreadable state is engaged
//   - 4. phase gate: unknown phase = blocked; planning makes an external call a dry run
//   - 5. policy: deny-first, an evaluation error is a denial; it judges the call's target (a URL, a
//     query, an HTTP upstream's URL); require_approval ends the call unless the tool runs the
//     approval flow itself (declare_need)
//   - trace: before the policy decides, each argument of a declared need is traced to the content
//     the context was given or shown (its task, pools, results, endorsements, and its ancestors';
//     provenance.go), so a rule can judge where a value came from; a deny by a rule that reads
//     provenance is PROVENANCE_DENIED
//   - 6. limits: one store transaction counts the call against the context, its ancestors and the
//     principal's rates (limits.go); the policy's max_execution_time_ms becomes the call's deadline
//   - 8. preconditions: the tool's Precheck, given the capabilities the handler will get
//     (toolkit.Env)
//   - started record: an external or act call writes a "started" record, so a store that cannot be
//     written stops it before it touches anything; in the same commit what the tool says it is
//     about to execute (toolkit.Tool.Intent: a declaration created executing)
//   - 9. execute: the handler, with only the capabilities in toolkit.Env; a panic becomes an error,
//     the deadline LIMIT_EXCEEDED, a client's cancellation CANCELLED
//   - after the handler: a need now waiting for a person is announced (webhooks, command hooks:
//     package hooks), a pipeline's output pool is registered for the context (package derived)
//   - 10. bound the error: the agent gets a violation code and a short message; any other error
//     becomes "internal error (ref …)", the full error going to the log and the record only
//   - 11. truncate: the output to max_output_bytes on a rune boundary, saying so; a result the tool
//     sized exactly is refused rather than cut
//   - 12. fence: untrusted content is fenced and, where the tool asks, attributed (signed);
//     untrusted text outside the fence is refused
//   - labels: what the agent is handed is recorded in its context with its source and integrity,
//     and each traced argument's provenance joins the record; a label that cannot be stored
//     withholds the result (provenance.go)
//   - 13. audit: the record is written durably before the response is returned; if it cannot be,
//     the agent gets AUDIT_UNAVAILABLE and none of the tool's output
//   - close: one log line (ids, names and codes only), the step metrics and the trace span
//     (observe.go)
//
// Any step can end the call, and every ending is audited (fail closed).
//
// The runner owns the tools and, with the operator's API, the store: the
// architecture test in this repository's root checks who imports them.
// What a call needs but is not a call's path lives in the other packages
// under internal/execution: the state directory and the store's opening
// (state), upstream MCP servers (upstream; this package's upstreams.go is
// the broker's side), the catalog of tools shown to clients (catalog),
// notifications (hooks), the pipeline host (pipelinehost), derived pools
// (derived) and approval latency (approvallatency). The operator's orders
// (approve, phase, kill, rotate, …) are package operator's, in
// internal/operator; it never imports this package.
package runner
