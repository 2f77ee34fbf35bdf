// Package runner is the only code that executes a tool call.
//
// Every call, whatever the transport, becomes [Session.Run], whose steps are
// fixed, ordered and total (DESIGN.md "One call, end to end"):
//
//  1. decode + validate the arguments against the tool's type (unknown fields rejected)
//  2. classify the tier from the tool's declaration
//  3. kill switch
//  4. phase gate (unknown phase = blocked)
//  5. policy (deny-first; an evaluation error is a denial)
//  6. limits
//  7. redact the arguments for the record
//  8. preconditions
//  9. execute the handler with only the capabilities in toolkit.Env
//  10. bound the error: the agent gets a violation code and a short message
//  11. truncate the output
//  12. fence untrusted content
//  13. write the audit record, durably, before the response is returned
//
// Any step can end the call, and every ending is audited. If the audit
// record cannot be written the call is refused (fail closed): the agent gets
// AUDIT_UNAVAILABLE and none of the tool's output. Calls of the external and
// act tiers also write a "started" record before step 9, so a store that
// cannot be written stops them before they touch anything.
//
// The runner owns the store and the tools: it is the only package that
// imports either (the architecture test in this repository's root checks it).
//
// Upstream MCP servers (issue 15, upstreams.go) are reached only from here:
// a comm.mcp need is checked against its pinned definition before the
// policy (the tool's Expand step calls back into the runner), and an
// approved one is executed by the session's broker, which connects (a
// stdio upstream inside the sandbox), lists the tools again against the
// pins (a changed definition blocks the call and is audited), calls, and
// hands the answer back for fencing and attribution.
package runner
