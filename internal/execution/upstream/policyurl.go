package upstream

import (
	"net/url"
	"strings"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/policy/policy"
)

// An HTTP upstream is judged by the policy's network section like a
// fetch's host (issue 15): when the call is decided (PolicyURL) and again
// before anything connects (CheckURL).

// PolicyURL is the URL the policy judges a call of capability c by: an
// HTTP upstream's own URL for mcp.<upstream>.<tool> (the network section
// then refuses its host as it refuses a fetch's: issue 15), "" otherwise
// (a stdio upstream reaches no network; other capabilities name their own).
func PolicyURL(cfg *config.Config, c string) string {
	rest, ok := strings.CutPrefix(c, "mcp.")
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, ".")
	up, ok := cfg.Upstream(id)
	if !ok || up.Stdio() {
		return ""
	}
	return up.URL
}

// CheckURL refuses an HTTP upstream the policy's network section
// does not allow, before anything connects: the same check, rule id and
// code (POLICY_DENIED, rule network) the policy step gives in planning.
// It runs again at execution because a declaration approved earlier may
// be collected under a policy that has since narrowed.
func CheckURL(pol *policy.Policy, up config.Upstream) error {
	if up.Stdio() {
		return nil
	}
	if pol == nil {
		return violation.New(violation.PolicyDenied, "mcp.%s: no policy to judge the upstream's host by", up.ID)
	}
	u, err := url.Parse(up.URL)
	if err == nil {
		err = pol.CheckURL(u)
	}
	if err != nil {
		return violation.Wrap(violation.PolicyDenied, err, "mcp.%s is denied by policy (rule network): %s", up.ID, strings.TrimSuffix(err.Error(), ": "+policy.ErrNetworkDenied.Error()))
	}
	return nil
}
