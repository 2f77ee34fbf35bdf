// Package comm performs approved external-information needs: comm.fetch
// ([Fetcher]), comm.search ([Searcher]), comm.query ([Querier]) and the
// client side of comm.mcp ([DialMCP], [MCPSession]): one session with an
// upstream MCP server, over streamable HTTP through the same connect-time
// checked dialer as a fetch (no proxy, no redirects, only the configured
// headers) or over the stdio pipes of a process the runner started in the
// sandbox. The client declares no capabilities (an upstream can ask
// nothing of Airlock), reads at most MCPConn.MaxBytes from the upstream,
// parses its answers strictly, and returns the upstream's text raw: which
// definitions may be called (package pinning) and the fence are the
// runner's.
//
// Only the runner calls it, in the execution phase, after the phase gate,
// the policy, the limits and (where required) a person have allowed the
// call. This package does the I/O safely and returns raw, unfenced content
// with its metadata; fencing, attribution, rate limiting and auditing are
// the caller's. Every refusal is an *[Error] whose Kind is one of the
// sentinel errors (ErrScheme, ErrPrivateAddress, …); [Code] maps it to the
// violation code the agent sees and [Violation] builds the agent-safe
// *violation.Error, keeping the cause (which may name resolved internal
// addresses or driver errors) private.
//
// # Invariants of a fetch
//
// In order, for [Fetcher.Fetch]:
//
//  1. The URL is absolute, at most 8 KiB, carries no user info, has a
//     normal form (package urlnorm) — which is what is judged and
//     requested from here on — and is
//     https — or http for a host listed in FetchOptions.AllowHTTPHosts.
//     Anything else is refused before any I/O (ErrInvalidURL, ErrScheme).
//  2. FetchOptions.Rules.CheckURL accepts it (ErrHostDenied, wrapping the
//     rules' error).
//  3. The origin's robots.txt allows it for our user agent's product token
//     ("airlock"; else the "*" group; longest match wins, Allow on a tie),
//     unless FetchOptions.IgnoreRobots (ErrRobots). Following RFC 9309, a
//     robots.txt answering 4xx (or redirecting somewhere we will not go)
//     allows everything and is cached for 24 h; one answering 5xx, or not
//     within min(10 s, Timeout/2), disallows everything and is not cached.
//  4. Every connection — to the page, to robots.txt, to each redirect
//     target, to the search endpoint — is checked at connect time by the
//     dialer's Control hook against the address actually being dialled:
//     loopback, RFC 1918, CGNAT, link-local (including 169.254.169.254),
//     ULA, multicast, broadcast, reserved and documentation ranges, and
//     IPv4-mapped, NAT64 and 6to4 forms of them, are refused unless inside
//     FetchOptions.AllowPrivate (ErrPrivateAddress). Names are resolved by
//     FetchOptions.Resolver inside the dialer and each resulting IP is
//     dialled as a literal, so a resolver that answers differently on a
//     later lookup (DNS rebinding) is still judged by the address the
//     kernel connects to. A HostRules that also implements [IPRules] is
//     asked about that address too. No proxy is ever used.
//  5. Redirects (301, 302, 303, 307, 308) are followed by hand, at most
//     FetchOptions.MaxRedirects (default 5; ErrTooManyRedirects); each
//     target goes through steps 1–4 before anything is sent to it, and no
//     Referer, cookie or credential is ever sent. When the HostRules also
//     implements [HopRules] (the runner's does), each target first gets
//     the caller's full policy decision, rules included: a target the
//     policy denies is ErrRedirectDenied (POLICY_DENIED, as a direct
//     request for it), one it gates is ErrRedirectNeedsApproval
//     (APPROVAL_REQUIRED); either stops the fetch.
//  6. The whole fetch, robots.txt and body included, ends within
//     FetchOptions.Timeout (default 30 s; ErrTimeout).
//  7. A non-2xx final status is ErrStatus (Error.Status holds it).
//  8. The body is capped while streaming, after transparent gzip
//     decompression, at FetchOptions.MaxBodyBytes (default 2 MiB). One
//     byte more is ErrTooLarge — the default, because a cut document can
//     silently lose the part that mattered; FetchOptions.AllowTruncate
//     returns the first MaxBodyBytes instead, with Document.Truncated set.
//  9. Only text is returned: HTML (converted by [HTMLToText]), JSON (kept
//     byte for byte) and text/* and a few textual application/ types (kept
//     as received). Images, PDFs, archives, application/octet-stream,
//     anything not on the list, and bodies that sniff as binary or hold NUL
//     are ErrBinary. Text is converted to UTF-8 from UTF-8, UTF-16,
//     ISO-8859-1 or windows-1252; another declared charset is accepted
//     only for pure ASCII (else ErrCharset).
//
// # Search and query
//
// [Searcher] sends GET <endpoint>/search?q=…&format=json through the same
// guarded fetcher (steps 1–2 and 4–8; robots.txt is not consulted for an
// operator-configured API) and parses SearXNG's JSON leniently: results
// without an absolute http(s) URL are dropped, every field is stripped of
// control and invisible characters and bounded.
//
// [Querier] opens a SQLite file read-only (mode=ro, query_only, defensive,
// trusted_schema off), refuses anything but one SELECT / WITH / VALUES
// statement (ErrNotReadOnly, ErrMultipleStatements), sets
// SQLITE_LIMIT_ATTACHED to 0 on every query's connection (mode=ro and
// query_only alone still let ATTACH create a file), compiles every
// statement under SQLite's authorizer — reads of tables and views,
// functions, recursion, nothing else: no pragma (pragma_database_list
// names the file's host path), no sqlite_dbpage or dbstat, no ATTACH, no
// load_extension (ErrQueryRefused, TestQueryAuthorizer) — interrupts a
// query at its timeout (ErrTimeout) and caps rows, cells and total size.
//
// # Limits, honestly
//
//   - The address check sees IP addresses, not intent: a public address
//     that forwards to an internal service (an open proxy, a misconfigured
//     load balancer) is reachable if the host rules allow it. Ports are
//     not restricted.
//   - robots.txt is a courtesy honoured by default, not a security
//     boundary; the cache is per Fetcher, per origin, for 24 hours.
//   - [HTMLToText] is a readable-text extractor, not an HTML5 parser. It
//     drops elements hidden by attributes or inline style, but not text
//     hidden by CSS classes, external stylesheets, tiny fonts or colours,
//     and it never evaluates scripts. Prompt injection in visible text is
//     left for the fence and the model's instructions to contain.
//   - Charset support is deliberately small (see step 9).
//   - The SQLite checks trust SQLite: a bug in SQLite's read-only
//     enforcement is not something this package can catch, though the
//     lexical check, the authorizer, query_only and mode=ro are
//     independent layers (TestQueryRefuses, TestQueryAuthorizer,
//     TestQueryConnectionIsReadOnly). The authorizer refuses eponymous
//     virtual tables by name (pragma_*, sqlite_dbpage, dbstat): a module
//     a later SQLite adds is readable until it is named there.
//   - Rate limiting is the runner's (limits package), not this package's.
package comm
