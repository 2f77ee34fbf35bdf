// Package console is the operator's web console at /console (issue 12
// item 1): pending approvals, the audit browser with the chain's and the
// witness's verification state, contexts and their Sources Used reports,
// pipeline runs with their evidence, upstream tool definitions to review
// and approve, and the kill switch.
//
// Invariants it owns, each with the test that proves it:
//
//   - Admin only. A login needs a static token of
//     transports.http.console_role (Admin.Login); another role's token, an
//     unknown token and no token are refused and audited; a session whose
//     admin token was revoked (config reload) ends on its next request
//     (TestConsoleLogin, TestConsoleRevokedAdmin).
//   - The session cookie is Secure, HttpOnly, SameSite=Strict, and
//     __Host-prefixed when served over TLS; the session id is 256 random
//     bits, held server-side only as its SHA-256; a session lasts
//     console_session_seconds and logout ends it (TestConsoleCookieFlags,
//     TestConsoleSessionExpiry, TestConsoleLogout).
//   - Every state-changing request is a POST that carries its session's
//     CSRF token (constant-time compare) and passes Go's cross-origin
//     protection (Sec-Fetch-Site / Origin); otherwise 403 CSRF_REFUSED,
//     audited (TestConsoleCSRF). The login form has its own pre-session
//     token (a double-submit cookie), against login CSRF.
//   - Every response carries a strict Content-Security-Policy (no inline
//     script or style, no framing, forms only to the console),
//     X-Content-Type-Options, Referrer-Policy same-origin and no-store
//     (TestConsoleHeaders).
//   - Everything an agent or a remote wrote (a declaration's reasons, URLs,
//     audit reasons) is rendered by html/template, escaped for its context;
//     nothing is marked trusted HTML (TestConsoleEscapesHostileDeclaration).
//   - Every action (approve, deny, phase, kill switch engage and release,
//     upstream refresh and approve, login, logout) requires a reason where it changes state, and goes
//     through operator.API — the very methods the CLI's `approvals`,
//     `phase`, `kill` and `upstreams` commands call — which audits it with the admin as
//     the principal and "console" as the transport (TestConsoleActionsAudited).
//   - The Upstreams page (issue 15) shows upstream tool definitions as
//     `airlock upstreams review` does, as text with every hidden character
//     rendered as a ⟦U+XXXX⟧ marker (visible), and approves exactly the
//     digest the form carries through API.ApproveUpstreamToolAs:
//     a definition changed since the page was rendered is refused
//     (TestConsoleUpstreamsApprove, TestConsoleUpstreamsStaleDigest,
//     TestConsoleUpstreamsHostileDescription, TestVisible, FuzzVisible).
//     Each tool shows the review's score, verdict and signals; a flagged
//     one is approved only with the override box and a reason, or with a
//     description of the operator's own (issue 25,
//     TestConsoleUpstreamsOverride).
//     "Approve all reviewed" (issue 23 item 4) carries every waiting
//     definition the page showed and approves, through
//     API.ApproveUpstreamSet, those the review does not flag — or nothing,
//     if the waiting set changed since the render
//     (TestConsoleUpstreamsApproveAll).
//
// Limits: sessions live in the memory of the instance that issued them
// (behind a load balancer, pin the console to one instance, or log in on
// each); the audit browser filters by scanning the trail, which is linear
// in its length; a Secure cookie over plain HTTP is kept by browsers only
// for loopback hosts, so off loopback serve the console over TLS.
package console
