package runner

import (
	"context"
	"net/http"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/execution/credentials"
	"github.com/airlock-dev/airlock/internal/execution/tokenexchange"
	"github.com/airlock-dev/airlock/internal/execution/toolkit"
)

// The runner's side of scoped credentials (issue 12 item 7): it owns the
// credentials.Set, hands each call only its role's injectors, and audits
// every revocation and restoration by id (never the value).

func (r *Runner) newCredentials() *credentials.Set {
	return credentials.New(r.Config().Credentials, &credentials.Options{OnChange: r.recordCredentialChange, Exchanger: tokenexchange.New(nil)})
}

// recordCredentialChange audits a credential becoming unusable (its file
// removed or emptied, its variable unset) or usable again. The record
// names the id and the reason; the value is never known here.
func (r *Runner) recordCredentialChange(ch credentials.Change) {
	at := r.now().UTC()
	rec := audit.CredentialRevoke(at, ch.ID, ch.Reason)
	if !ch.Revoked {
		rec = audit.CredentialRestore(at, ch.ID, ch.Reason)
	}
	r.log.Warn("credential state changed", "credential", ch.ID, "revoked", ch.Revoked, "reason", ch.Reason)
	if err := r.db.Append(context.Background(), rec); err != nil {
		r.log.Error("auditing a credential change", "credential", ch.ID, "err", err)
	}
}

// fetchHeaders adapts the role's header injector to comm.FetchOptions.Headers
// (here, not in credentials: that package reaches no network code).
func fetchHeaders(h *credentials.Hosts) func(string) (http.Header, error) {
	if h == nil {
		return nil
	}
	return func(host string) (http.Header, error) {
		hs, err := h.HeadersFor(host)
		if err != nil || len(hs) == 0 {
			return nil, err
		}
		out := http.Header{}
		for _, x := range hs {
			out.Add(x.Name, x.Value)
		}
		return out, nil
	}
}

// pipelineCredentials implements toolkit.PipelineCredentials for one call.
type pipelineCredentials struct {
	set  *credentials.Set
	role string
}

// PipelineEnv implements toolkit.PipelineCredentials.
func (p pipelineCredentials) PipelineEnv(pipeline string) ([]string, toolkit.Scrubber, error) {
	sc := &credentials.Scrubber{}
	env, err := p.set.PipelineEnv(p.role, pipeline, sc)
	return env, sc, err
}
