// Package pinning decides whether an upstream MCP server's tool definition
// may be used: the first time a definition is seen it is pending until an
// operator approves it, and only an approved, unchanged definition is
// usable (issue 15: upstream MCP servers behind declare_need). The store
// keeps the pins (store.DB.UpdateUpstreamPins), the runner observes every
// listing of an upstream's tools against them and refuses a tool whose pin
// is not usable, and `airlock upstreams review|approve` is the operator's
// side.
//
// Two attacks it blocks:
//
//   - the "rug pull": a server changes a tool's description or schema after
//     it was approved. The definition's digest (name, description, input
//     and output schema, canonically encoded) no longer matches the pin, so
//     the tool is blocked until the change — shown as a diff — is approved;
//   - tool poisoning: instructions hidden in a definition (invisible
//     characters, authority tags, words addressed to the model, other
//     tools named, look-alike names …). The review is package poisoning's
//     (issue 25): [Scan] for one definition, [Review] across every
//     upstream's pins. A flagged definition — as the agent would be shown
//     it, with an operator's edited description in place of the
//     upstream's — is approved only with an explicit override and a
//     reason ([ApproveReviewed], [ErrOverrideRequired]); the override and
//     the edited description are the pin's [Decision], valid for the
//     approved digest only ([Pin.Shown]). Flags never block a call: an
//     approved, unchanged definition is usable whatever the scanner would
//     say of it today.
//
// A definition whose schemas hold duplicate keys or are not JSON objects is
// refused outright: two readers of it could disagree on what was approved.
package pinning
