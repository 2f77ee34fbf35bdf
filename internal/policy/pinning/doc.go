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
//   - tool poisoning: instructions hidden in a description (invisible or
//     bidi characters, tag characters, words addressed to the model rather
//     than the user). [Scan] flags them for the review; flags never approve
//     or block by themselves, the operator decides with them in view.
//
// A definition whose schemas hold duplicate keys or are not JSON objects is
// refused outright: two readers of it could disagree on what was approved.
package pinning
