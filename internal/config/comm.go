package config

import (
	"fmt"
	"net/netip"
)

// Comm configures the executors of approved external needs (comm.fetch,
// comm.search, comm.query). Which hosts may be reached is the policy's
// network section; this says how.
type Comm struct {
	Fetch     FetchConfig         `json:"fetch,omitempty" jsonschema:"description=How comm.fetch fetches."`
	Search    SearchConfig        `json:"search,omitempty" jsonschema:"description=The SearXNG endpoint comm.search queries."`
	Databases map[string]Database `json:"databases,omitempty" jsonschema:"description=SQLite databases comm.query may read\\, by source name."`
	// Approvals
	ApprovalTTLSeconds    int64 `json:"approval_ttl_seconds,omitempty" jsonschema:"minimum=0,description=How long an approval stays usable (default 900)."`
	DeclarationTTLSeconds int64 `json:"declaration_ttl_seconds,omitempty" jsonschema:"minimum=0,description=How long a declaration waits for a decision (default 3600)."`
}

// FetchConfig tunes comm.fetch.
type FetchConfig struct {
	AllowHTTPHosts []string `json:"allow_http_hosts,omitempty" jsonschema:"description=Hosts that may be fetched over plain http (default none: https only)."`
	AllowPrivate   []string `json:"allow_private,omitempty" jsonschema:"description=Address ranges (CIDR) fetches may connect to although private/loopback/link-local (default none)."`
	MaxBodyBytes   int64    `json:"max_body_bytes,omitempty" jsonschema:"minimum=0,description=Largest response body (default 2097152)."`
	TimeoutMS      int64    `json:"timeout_ms,omitempty" jsonschema:"minimum=0,description=Whole-request timeout (default 30000)."`
	MaxRedirects   int      `json:"max_redirects,omitempty" jsonschema:"minimum=0,description=Redirects followed\\, each re-checked (default 5)."`
	IgnoreRobots   bool     `json:"ignore_robots,omitempty" jsonschema:"description=Do not honour robots.txt (default: honour it)."`
	PerMinute      float64  `json:"per_minute,omitempty" jsonschema:"minimum=0,description=Fetches per session per minute (default 10)."`
}

// SearchConfig names the SearXNG endpoint.
type SearchConfig struct {
	Endpoint   string `json:"endpoint,omitempty" jsonschema:"description=Base URL of a SearXNG instance (its JSON API)."`
	MaxResults int    `json:"max_results,omitempty" jsonschema:"minimum=0,description=Results returned per search (default 10)."`
}

// Database is a SQLite file comm.query may read (opened read-only).
type Database struct {
	Path      string `json:"path" jsonschema:"description=The SQLite file\\, relative to the config file."`
	MaxRows   int    `json:"max_rows,omitempty" jsonschema:"minimum=0,description=Rows returned at most (default 1000)."`
	TimeoutMS int64  `json:"timeout_ms,omitempty" jsonschema:"minimum=0,description=Query timeout (default 5000)."`
}

// PrivatePrefixes parses AllowPrivate.
func (f FetchConfig) PrivatePrefixes() ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(f.AllowPrivate))
	for _, s := range f.AllowPrivate {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			addr, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return nil, fmt.Errorf("allow_private %q: %w", s, ErrInvalid)
			}
			p = netip.PrefixFrom(addr, addr.BitLen())
		}
		out = append(out, p)
	}
	return out, nil
}

func (c *Config) checkComm() error {
	if _, err := c.Comm.Fetch.PrivatePrefixes(); err != nil {
		return c.at("$.comm.fetch.allow_private", err)
	}
	for name, db := range c.Comm.Databases {
		if err := checkKey("database", name); err != nil {
			return c.at("$.comm.databases."+name, err)
		}
		if db.Path == "" {
			return c.at("$.comm.databases."+name+".path", fmt.Errorf("path required: %w", ErrInvalid))
		}
	}
	return nil
}

func (c *Config) resolveCommPaths() {
	for name, db := range c.Comm.Databases {
		db.Path = c.rel(db.Path)
		c.Comm.Databases[name] = db
	}
}
