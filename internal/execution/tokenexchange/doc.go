// Package tokenexchange gets an upstream's Authorization on the calling
// agent's behalf: OAuth 2.0 Token Exchange (RFC 8693) of the caller's
// validated access token for one whose audience is the upstream
// (on-behalf-of; issue 23 item 3). The runner hands an [Exchanger] to
// package credentials, which calls it with the client secret it read;
// the server's HTTP edge puts the caller's validated token in the call's
// context ([WithCaller]) and nothing else does.
//
// Invariants, each with the attack it blocks:
//
//   - The agent's own token never reaches an upstream: only the
//     exchanged token is sent, and an answer that hands back the subject
//     token itself is refused (a provider, or something in its place,
//     that would turn the exchange into forwarding).
//   - Fail closed: a call without a caller token (stdio, a static role
//     token), with an expired one, or whose exchange the provider refuses
//     or answers unusably is refused with UPSTREAM_TOKEN_EXCHANGE_REFUSED;
//     the upstream is never called without the token it was configured
//     to get.
//   - The caller's token lives in the call's context only: never in an
//     error, a log line, an audit record or the cache (which keys on the
//     principal, its client and scopes, and holds only exchanged tokens).
//     Errors name the provider's error code and status, and its
//     description with the subject token and the client secret removed.
//   - The token endpoint is the configured one (no discovery from a
//     token, redirects refused), reached with a bounded answer.
//   - Exchanged tokens are cached per subject (principal, client, scopes)
//     and upstream until shortly before they expire, at most
//     [DefaultMaxEntries]; an entry is never used for a caller whose own
//     token has expired.
//
// Limits: the cache is per process (each instance behind a load balancer
// exchanges on its own); a provider's revocation of an exchanged token
// before its expiry is not seen until then; the exchange's scopes are the
// configured ones, not narrowed per call.
package tokenexchange
