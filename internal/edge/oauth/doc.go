// Package oauth makes Airlock an OAuth 2.1 resource server as the MCP
// authorization spec describes: it validates access tokens issued by the
// configured authorization servers and maps their claims to roles. The
// server's HTTP edge (server/auth.go) is its only caller.
//
// The invariants it owns, each with the attack it blocks:
//
//   - Only configured issuers are trusted, compared exactly. A token's iss
//     never makes Airlock fetch anything it was not configured to fetch
//     (no SSRF through a forged issuer).
//   - Signatures are checked by go-jose against the issuer's key set, with
//     an allow-list of asymmetric algorithms fixed at parse time: alg none
//     and HS* (the public key used as an HMAC secret) never verify.
//   - The audience must be this server's resource URI (RFC 8707), so a
//     token minted for another resource — or an ID token for a client — is
//     refused (token redirection / confused deputy).
//   - exp is required; exp, nbf and iat are judged with a bounded skew.
//   - Keys are cached (jwks_cache_seconds) and refetched on an unknown kid,
//     at most once per jwks_min_refresh_seconds per issuer, so a flood of
//     invented kids cannot hammer the authorization server, and a key the
//     server rotated out stops verifying once the set is refetched.
//   - Discovery (RFC 8414, then OpenID Connect) accepts metadata only when
//     its issuer equals the configured one (mix-up).
//   - Opaque tokens are checked by RFC 7662 introspection where configured;
//     only an active answer for this audience is accepted.
//   - A valid token that no role_mapping rule matches maps to no role
//     (deny); the caller answers 403 insufficient_scope.
//
// The token itself is never logged, kept in an error, or returned: errors
// name the check that failed (see the sentinels in errors.go), never the
// token, and Token carries only claims.
//
// Limits: when an issuer cannot be reached, the last key set fetched stays
// in use (a rotated-out key verifies until a fetch succeeds); revocation
// of a JWT before its exp is not seen (use short-lived tokens, or opaque
// tokens with introspection); a positive introspection answer is cached
// for at most a minute.
package oauth
