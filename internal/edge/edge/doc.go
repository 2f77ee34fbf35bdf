// Package edge keeps a hostile network peer from exhausting, slowing or
// filling Airlock before it has proven who it is.
//
// It owns three things that sit in front of authentication:
//
//   - [Origins]: which browser origins may reach the server at all. A page
//     on evil.example that makes the user's browser POST to a local Airlock
//     gets 403 (DNS rebinding and cross-site requests), on every bind address.
//   - [Tracker]: a listener that bounds open connections, in all and per
//     remote address for connections that have not authenticated yet. At a
//     bound the oldest unauthenticated connection is closed, so idle or slow
//     peers without a token cannot crowd out a client that has one.
//   - [Aggregator]: refusals at the edge are audited, but a flood of them
//     must not become a flood of fsynced audit records. The first refusal
//     per remote address, principal and cause in a window is recorded at
//     once; the rest of that window is recorded as one record with a count.
//
// And one thing right behind it: [Owners] binds a session that lives as
// long as one connection (SSE) to the credential that opened it, so the
// session's id alone lets nobody else post to it.
package edge
