package policy

import (
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/expr-lang/expr/vm"

	"github.com/airlock-dev/airlock/internal/kit/urlnorm"
)

// Input is what a decision is made over. The runner fills it from the call
// and the session; nothing in it comes from the agent except Args (and the
// optional URL, Pool, Path and Query, which the runner takes from Args).
type Input struct {
	Tool       string
	Capability string
	Tier       string
	Session    string
	Principal  string
	Role       string
	Phase      string
	Args       map[string]any // the call's decoded JSON arguments; must be acyclic
	Now        time.Time      // zero means time.Now()

	// URL, Pool, Path and Query name the call's target when the tool's
	// arguments spell it differently; each empty one is taken from the
	// string argument of the same (lower-case) name, if any.
	URL, Pool, Path, Query string

	// Provenance is where each traced argument of a declared need came
	// from (provenance.go), keyed by argument name; nil when the call has
	// none. The runner computes it; the agent cannot state it.
	Provenance map[string]ArgProvenance
}

// Env is the typed environment a rule's when condition is compiled against
// and evaluated in. Identifiers are the expr tags: a condition may use args,
// tool, capability, tier, session, principal, role, phase, now, url, pool,
// path, query and the provenance identifiers (provenance.go), and nothing
// else (an unknown identifier fails the load).
type Env struct {
	Args       map[string]any `expr:"args"`       // the call's arguments; a missing key is nil
	Tool       string         `expr:"tool"`       // e.g. declare_need
	Capability string         `expr:"capability"` // e.g. comm.fetch
	Tier       string         `expr:"tier"`       // read, external or act
	Session    string         `expr:"session"`
	Principal  string         `expr:"principal"`
	Role       string         `expr:"role"`
	Phase      string         `expr:"phase"` // planning or execution
	Now        time.Time      `expr:"now"`   // the call's time (the now() builtin is disabled)
	URL        URL            `expr:"url"`
	Pool       string         `expr:"pool"`
	Path       string         `expr:"path"`
	Query      string         `expr:"query"`

	// Provenance of a declared need's arguments (provenance.go).
	Provenance    map[string]ArgProvenance `expr:"provenance"`
	TrustedArgs   []string                 `expr:"trusted_args"`
	EndorsedArgs  []string                 `expr:"endorsed_args"`
	UntrustedArgs []string                 `expr:"untrusted_args"`
	AgentArgs     []string                 `expr:"agent_args"`
}

// URL is the call's target URL in its normal form (package urlnorm: dot
// segments and repeated slashes removed, unreserved escapes decoded), the
// form the fetcher requests; Raw is that form too, so no condition reads
// the agent's spelling. Every field is empty (Port 0) when the call has no
// URL; Raw is the URL as given and the rest empty when it has no normal
// form (it does not parse, or hides a dot segment behind an escape).
type URL struct {
	Raw    string `expr:"raw"`
	Scheme string `expr:"scheme"` // lower case
	Host   string `expr:"host"`   // lower case, no port, no brackets, no trailing dot
	Port   int    `expr:"port"`   // explicit port, else 443 for https and 80 for http, else 0
	Path   string `expr:"path"`   // decoded ("%2F" reads as "/")
}

// state is the per-call scratch space: the expr VM and the environment,
// reused through a pool so that a decision does not allocate them.
type state struct {
	vm  vm.VM
	env Env

	rawURL  string
	urlDone bool
	parsed  *url.URL
	urlErr  error
}

var statePool = sync.Pool{New: func() any { return new(state) }}

func getState(p *Policy, in *Input) *state {
	st := statePool.Get().(*state)
	now := in.Now
	if now.IsZero() {
		now = time.Now()
	}
	st.env = Env{
		Args: in.Args, Tool: in.Tool, Capability: in.Capability, Tier: in.Tier,
		Session: in.Session, Principal: in.Principal, Role: in.Role, Phase: in.Phase, Now: now,
		Pool: in.Pool, Path: in.Path, Query: in.Query,
	}
	// Only look arguments up when some rule reads them.
	if p.uses&usesPool != 0 && st.env.Pool == "" {
		st.env.Pool = argString(in.Args, "pool")
	}
	if p.uses&usesPath != 0 && st.env.Path == "" {
		st.env.Path = argString(in.Args, "path")
	}
	if p.uses&usesQuery != 0 && st.env.Query == "" {
		st.env.Query = argString(in.Args, "query")
	}
	if p.uses&usesProvenance != 0 {
		st.env.fillProvenance(in.Provenance)
	}
	st.rawURL = in.URL
	if st.rawURL == "" {
		st.rawURL = argString(in.Args, "url")
	}
	return st
}

func putState(st *state) {
	// Drop references to the call's data so the pool does not keep it alive.
	st.env = Env{}
	clear(st.vm.Stack[:cap(st.vm.Stack)])
	clear(st.vm.Variables)
	st.rawURL, st.urlDone, st.parsed, st.urlErr = "", false, nil, nil
	statePool.Put(st)
}

func argString(args map[string]any, key string) string {
	if s, ok := args[key].(string); ok {
		return s
	}
	return ""
}

// url parses the call's URL on first use and fills env.URL. It reports the
// parsed URL, or nil when the call has none.
func (st *state) url() (*url.URL, error) {
	if st.urlDone {
		return st.parsed, st.urlErr
	}
	st.urlDone = true
	if st.rawURL == "" {
		return nil, nil
	}
	st.env.URL.Raw = st.rawURL
	// Rules judge the normal form, the one the fetcher requests: a path
	// rule cannot be dodged by "/x/../gated" or "//gated"
	// (TestDecideNormalisesURL). A URL without one is refused like one that
	// does not parse.
	norm, err := urlnorm.Normalize(st.rawURL)
	if err != nil {
		st.urlErr = err
		return nil, err
	}
	u, err := url.Parse(norm)
	if err != nil {
		st.urlErr = err
		return nil, err
	}
	st.parsed = u
	st.env.URL = URL{
		Raw:    norm,
		Scheme: strings.ToLower(u.Scheme),
		Host:   normalHost(u.Hostname()),
		Path:   u.Path,
		Port:   port(u),
	}
	return u, nil
}

func port(u *url.URL) int {
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 65535 {
			return 0
		}
		return n
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return 443
	case "http":
		return 80
	}
	return 0
}

// normalHost lower-cases a host name and strips one trailing dot, so that
// "Docs.Example.org." and "docs.example.org" are the same host to every
// check (a trailing dot is the same DNS name, and would otherwise slip past
// an exact deny entry).
func normalHost(h string) string {
	h = strings.TrimSuffix(h, ".")
	for i := 0; i < len(h); i++ {
		if c := h[i]; 'A' <= c && c <= 'Z' {
			return strings.ToLower(h)
		}
	}
	return h
}
