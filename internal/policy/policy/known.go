package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/internal/kit/capability"
	"github.com/airlock-dev/airlock/internal/kit/nearest"
	"github.com/airlock-dev/airlock/internal/kit/yamlfile"
	"github.com/airlock-dev/airlock/internal/policy/limits"
)

// Capabilities are the capability ids of Airlock's tools, apart from the
// pipeline family [PipelinePrefix]<name>. tools/schema_test.go checks that
// every tool's capability is one of them.
var Capabilities = []string{"pool.list", "pool.read", "comm.fetch", "comm.search", "comm.query"}

// PipelinePrefix starts the capability of running a pipeline:
// "pipeline.run:<name>".
const PipelinePrefix = "pipeline.run:"

// MCPPrefix starts the capability of calling an upstream MCP server's
// tool: "mcp.<upstream>.<tool>" (issue 15). The tools are whatever the
// upstream lists, so any pattern under this prefix is accepted here; which
// tools exist is the operator's review (`airlock upstreams review`).
const MCPPrefix = "mcp."

// ErrUnknownCapability: a pattern in allow, deny or a rule matches no
// capability Airlock has, so it is almost certainly misspelt ("comm.fecth"):
// an allow that never applies or, worse, a deny that never applies.
var ErrUnknownCapability = errors.New("matches no capability")

// CheckCapabilities reports, with file:line, every allow, deny and rule
// capability pattern of specs (read from file name with contents data)
// that matches no capability, with a "did you mean" when one is close.
// pipelines, when non-nil, are the pipelines the configuration declares:
// a literal pipeline.run:<name> must then name one of them; with nil any
// name is accepted (a policy file checked on its own). Compile does not
// make this check, so policies can be unit-tested with made-up
// capabilities; `airlock policy check` and `airlock config check` do
// (cli/check_test.go: TestPolicyCheckRefusesMisspeltCapability).
func CheckCapabilities(name string, data []byte, specs map[string]Spec, pipelines []string) error {
	var errs []error
	check := func(path, text string) {
		p, err := capability.Parse(text)
		if err != nil {
			return // Compile reports it
		}
		if knownMatch(p, pipelines) {
			return
		}
		msg := fmt.Sprintf("capability pattern %q", text)
		if s := suggest(text, pipelines); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		errs = append(errs, yamlfile.At(name, data, path, fmt.Errorf("%s: %w", msg, ErrUnknownCapability)))
	}
	names := make([]string, 0, len(specs))
	for n := range specs {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		s, base := specs[n], "$.policies"+limits.Key(n)
		for i, t := range s.Allow {
			check(fmt.Sprintf("%s.allow[%d]", base, i), t)
		}
		for i, t := range s.Deny {
			check(fmt.Sprintf("%s.deny[%d]", base, i), t)
		}
		for i, r := range s.Rules {
			if r.Capability != "" {
				check(fmt.Sprintf("%s.rules[%d].capability", base, i), r.Capability)
			}
		}
	}
	return errors.Join(errs...)
}

// knownMatch reports whether p matches some capability: one of
// Capabilities, a declared pipeline's, or — for a pattern with a star, or
// when no pipelines are given — any pipeline.run:<name>.
func knownMatch(p capability.Pattern, pipelines []string) bool {
	for _, id := range Capabilities {
		if p.Match(id) {
			return true
		}
	}
	for _, n := range pipelines {
		if p.Match(PipelinePrefix + n) {
			return true
		}
	}
	text := p.String()
	if strings.HasPrefix(text, MCPPrefix) && len(text) > len(MCPPrefix) {
		return true
	}
	if !strings.Contains(text, "*") {
		name, ok := strings.CutPrefix(text, PipelinePrefix)
		return ok && name != "" && pipelines == nil
	}
	// A star pattern may be meant for pipelines declared later: accept it
	// if some pipeline id at all can match it (stars matching nothing, or
	// everything before the first star standing for the prefix).
	stripped := strings.ReplaceAll(text, "*", "")
	_, after, _ := strings.Cut(text, "*")
	for _, id := range []string{stripped, PipelinePrefix + stripped, PipelinePrefix + strings.ReplaceAll(after, "*", ""), PipelinePrefix + "x"} {
		if name, ok := strings.CutPrefix(id, PipelinePrefix); ok && name != "" && p.Match(id) {
			return true
		}
	}
	return false
}

// suggest returns the known id closest to text, if it is close enough to
// be a typo.
func suggest(text string, pipelines []string) string {
	t := strings.ReplaceAll(text, "*", "")
	cands := slices.Clone(Capabilities)
	for _, n := range pipelines {
		cands = append(cands, PipelinePrefix+n)
	}
	if _, name, ok := strings.Cut(t, ":"); ok && name != "" && pipelines == nil {
		cands = append(cands, PipelinePrefix+name)
	}
	return Closest(t, cands)
}

// Closest returns the candidate nearest to text when it is close enough to
// be a typo, else "" (package nearest). It backs the "did you mean" of
// check-time errors.
func Closest(text string, cands []string) string { return nearest.Name(text, cands) }

// CheckFile is LoadFile plus CheckCapabilities and CheckReachable, for
// `airlock policy check`: everything that loads, no pattern that matches
// nothing, no rule that can never fire.
func CheckFile(path string) (*Set, error) {
	set, data, specs, err := loadFile(path)
	if err != nil {
		return nil, err
	}
	if err := errors.Join(CheckCapabilities(path, data, specs, nil), CheckReachable(path, data, set)); err != nil {
		return nil, err
	}
	return set, nil
}
