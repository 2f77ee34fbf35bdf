// Package egress is the only way out of the sandbox for a stdio upstream
// whose config names hosts (issue 15): an HTTP proxy, served by Airlock
// outside the sandbox on a listener inside the run's network namespace
// (sandbox.Loopback), that connects only to the hosts the upstream's
// config names, on their ports, when the calling policy's network section
// allows them, through comm's connect-time checked dialer.
//
// # Invariant
//
// A [Proxy] opens a connection only for a request that names, after
// normalisation, exactly one [Target] it was given — host and port —
// and that [Options.Check] (the policy) accepts; the connection is made by
// [Options.Dial] (comm.CheckedDialer: private, loopback, link-local and
// metadata addresses refused at connect time, so neither a DNS answer nor
// an IP literal can turn the proxy on the host's own services or on
// itself). Every request, admitted or refused, is reported to
// [Options.Audit] as an [Event]: method, host, port, decision — never
// a path, header or byte of content.
//
// Two request forms are accepted (RFC 9110 §9.3.6, §7.1):
//
//   - CONNECT host:port — a tunnel (HTTPS_PROXY; Node tunnels http://
//     URLs too); judged as http on port 80 and as https on any other
//     port. The bytes inside are the client's and the server's; the proxy
//     does not read them.
//   - an absolute-form http:// request — forwarded once (Connection:
//     close), its URL normalised by urlnorm first; judged as http.
//
// Everything else (origin-form requests, https:// in absolute form,
// other schemes, user info, malformed or oversized heads) is refused with
// a 4xx answer and audited.
//
// # Limits, honestly
//
//   - The proxy decides by host name and port; it does not look inside a
//     CONNECT tunnel, so what is said to an admitted host is not seen.
//   - An admitted host can be asked anything on its port; path rules of
//     the policy (url.path) apply to comm.fetch, not here — the policy's
//     network section (hosts, schemes, addresses) is what applies.
//   - Names are matched exactly (no wildcards, no IDNA mapping).
package egress
