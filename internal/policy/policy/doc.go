// Package policy decides whether a call's capability may run, and how.
//
// The model is seed 003's security context, deny-first: a policy names the
// capabilities that may run, the ones that never run, conditions over the
// call written in expr (github.com/expr-lang/expr), the hosts comm.*
// capabilities may reach, the paths pipelines may touch, the limits a
// session runs under, and the mcp.* tools whose needs may carry argument
// keys their pinned schema does not name (additional.go). A policy that
// cannot be compiled is refused at load time with its file and line, never
// read leniently; a condition that fails at run time denies.
//
// # Capabilities and patterns
//
// Every call maps to a capability id: pool.list, pool.read, comm.fetch,
// comm.search, comm.query, pipeline.run:<name>. allow and deny are lists of
// patterns in which '*' matches any run of characters, '.' and ':'
// included (see package policy/capability; "**", '?' and '[' are refused).
//
// # Rules
//
// A rule is {id, capability, when, effect}. capability is a pattern; when
// is an expr condition compiled and type-checked at load time against [Env]:
//
//	args        map[string]any   the call's arguments (a missing key is nil)
//	tool        string           e.g. declare_need
//	capability  string           e.g. comm.fetch
//	tier        string           read, external or act
//	session, principal, role, phase  string
//	now         time.Time        the call's time (now() is disabled)
//	url         {raw, scheme, host, port, path}   args.url in normal form (package urlnorm)
//	pool, path, query  string    from args.pool, args.path, args.query
//	provenance  map[string]{origin, sources, readers, public, kind}
//	            where each argument of a declared need came from
//	trusted_args, endorsed_args, untrusted_args, agent_args  []string
//
// The provenance identifiers, and why a missing argument can never make a
// condition fail, are documented in provenance.go; a deny decided by a
// rule that reads them is PROVENANCE_DENIED ([Policy.UsesProvenance]).
//
// A syntax error, an unknown identifier (url.hots) or a condition that is
// not boolean stops the load. At run time a condition that fails to
// evaluate (args.limit > 5 when limit is a string, or absent: nil > 5 is an
// error; write (args.limit ?? 0) > 5) is a deny whose RuleID is the rule's
// id and whose Reason carries the error. An empty when always holds.
//
// Effects: a deny rule denies when its condition holds. A require_approval
// rule turns what would be an allow into require_approval; it never grants
// anything by itself. An allow rule is an allow pattern scoped by its
// condition: it may allow a capability that no allow pattern lists. So only
// allow rules and allow patterns grant; deny and require_approval only
// tighten.
//
// # Precedence
//
// Decide walks the inheritance chain root first. The first row that applies
// decides:
//
//	1  a deny pattern of any policy in the chain matches     deny     deny:<pattern>
//	2  some policy in the chain has no allow pattern and no  deny     default
//	   allow rule for the capability (conditions unevaluated)
//	3  a comm.* or mcp.* call's URL fails the network section deny    network
//	4  a matching rule's condition fails to evaluate         deny     <rule id>
//	5  a matching deny rule's condition holds                deny     <rule id>
//	6  some policy in the chain neither matched an allow     deny     default
//	   pattern nor had an allow rule whose condition held
//	7  a matching require_approval rule's condition holds    require_approval  <rule id> (the first)
//	8  otherwise                                             allow    allow:<pattern> or <rule id>
//
// Rules are evaluated root first and in file order; rows 4 and 5 stop at the
// first rule that triggers them, so [Decision.Matched] lists what matched up
// to that point. For an allow, the RuleID is the allow of the policy
// nearest the leaf that has allows of its own, a pattern before a rule.
// Hence: any deny (pattern or rule) > any require_approval > allow; no match
// = deny.
//
// # Inheritance
//
// A policy may extend another (extends: base); cycles are refused. A child
// can only restrict, and this holds by construction: its decision is
// computed over the whole chain as above, so it is never more permissive
// than its parent's for the same input (TestChildNeverWidens checks it).
// Concretely:
//
//   - deny patterns and rules of every ancestor still apply; the child's add
//     to them;
//   - a child that lists no allow patterns and no allow rules is neutral: it
//     allows what its parent allows. A child that lists allows must also be
//     allowed by its parent, whose conditions still apply;
//   - network, filesystem and limits are inherited field by field; a child
//     value replaces the parent's only after the load has checked it is
//     narrower (deny_hosts add up).
//
// A child that writes a wider allow would be inert, and inert text misleads
// its reader, so the load refuses it with the offending line
// ([ErrWidens]): each child allow pattern and allow-rule capability must be
// covered by an allow pattern or allow-rule capability of its nearest
// ancestor with allows of its own ([capability.Pattern.Covers]: comm.fetch ⊆
// comm.*, pipeline.run:report_* ⊆ pipeline.run:*); each allow host must be
// within a parent allow host (a.example.org and *.a.example.org ⊆
// *.example.org); each scheme, private prefix and filesystem path must be
// within the parent's; each limit must be at most the parent's (see
// [limits.Narrows]).
//
// # Network and filesystem
//
// For a comm.* call whose arguments carry a URL, and an mcp.* call to an
// HTTP upstream (the runner passes the upstream's URL), Decide applies
// [Policy.CheckURL]: allowed schemes (default https only), no user info, no
// literal private, loopback or link-local address unless allow_private
// covers it, deny_hosts before allow_hosts, and a host that must match
// allow_hosts, where an empty allow_hosts allows no host. Host patterns are
// exact names or addresses, "*.domain" (subdomains, not the domain itself)
// or "*". The URL is judged in its normal form (package urlnorm: dot
// segments, repeated slashes and unreserved escapes cannot make a path read
// as another), which is the form the fetcher requests; a URL without one is
// denied by the network step. The runner's fetch judges each redirect
// target with Decide for the same call (the target as url), and the fetcher
// re-checks it with CheckURL and each dialled address with [Policy.CheckIP]. Pipelines' paths are checked with
// [Policy.CheckRead] and [Policy.CheckWrite]: a path is allowed if it is a
// listed path or lies beneath one, by whole path elements.
//
// # Loading and authoring
//
// [CompileSet] compiles the policies: section of a configuration file,
// [LoadFile] reads one from disk (other top-level sections are ignored), and
// [Compile] builds a single parentless policy. [RunCases] runs a table of
// calls and expected decisions, and [Explain] lists every pattern and rule
// considered for one call with whether it matched and why; they back
// `airlock policy test` and `airlock policy explain`. testdata/ holds
// example policies with their case tables.
//
// # Cost
//
// A decision allocates nothing for pattern-only policies and evaluates only
// the rules whose capability pattern matches the call; the expr VM and the
// environment are pooled, the URL is parsed only when a check or a rule
// needs it, and decision reasons are built at load time. See
// BenchmarkDecide100Rules.
package policy
