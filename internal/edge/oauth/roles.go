package oauth

import (
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/internal/config"
)

// Rule maps a validated token to an Airlock role by the first
// role_mapping rule all of whose conditions hold: its role, and the context
// binding that comes with it. No rule matching means no role: the token is
// refused (403 insufficient_scope), never given a default.
func (v *Validator) Rule(t *Token) (config.RoleMapping, bool) {
	for _, rm := range v.cfg.RoleMapping {
		if ruleMatches(rm, t) {
			return rm, true
		}
	}
	return config.RoleMapping{}, false
}

func ruleMatches(rm config.RoleMapping, t *Token) bool {
	return (rm.Issuer == "" || rm.Issuer == t.Issuer) &&
		scopesHeld(rm.Scopes, t.Scopes) &&
		anyOf(rm.Groups, t.Groups) &&
		anyOf(rm.Subjects, []string{t.Subject}) &&
		anyOf(rm.ClientIDs, []string{t.ClientID})
}

// scopesHeld: every scope the rule names is granted (none named: holds).
func scopesHeld(want, have []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// anyOf: one of the rule's values is held (none named: holds). An empty
// claim value never matches.
func anyOf(want, have []string) bool {
	if len(want) == 0 {
		return true
	}
	for _, h := range have {
		if h != "" && slices.Contains(want, h) {
			return true
		}
	}
	return false
}

// NeededScope is the scope to name in a 403 insufficient_scope challenge
// for t: the scopes of the first rule that t fails only for want of
// scopes, else scopes_supported.
func (v *Validator) NeededScope(t *Token) string {
	for _, rm := range v.cfg.RoleMapping {
		if len(rm.Scopes) == 0 {
			continue
		}
		noScopes := rm
		noScopes.Scopes = nil
		if ruleMatches(noScopes, t) {
			return strings.Join(rm.Scopes, " ")
		}
	}
	return strings.Join(v.cfg.ScopesSupported, " ")
}
