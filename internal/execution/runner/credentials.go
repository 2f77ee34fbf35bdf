package runner

import (
	"context"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/execution/credentials"
)

// The runner's side of scoped credentials (issue 12 item 7): it owns the
// credentials.Set, hands each call only its role's injectors, and audits
// every revocation and restoration by id (never the value).

func (r *Runner) newCredentials() *credentials.Set {
	return credentials.New(r.Config().Credentials, &credentials.Options{OnChange: r.recordCredentialChange})
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
