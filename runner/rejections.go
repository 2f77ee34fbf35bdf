package runner

import (
	"context"

	"github.com/airlock-dev/airlock/store"
	"github.com/airlock-dev/airlock/violation"
)

// RecordAuthFailure audits an HTTP request refused for want of a valid
// token. The presented token is never recorded, only whether one was sent.
func (r *Runner) RecordAuthFailure(ctx context.Context, transport, remoteAddr string, tokenPresented bool) {
	reason := "no bearer token"
	if tokenPresented {
		reason = "bearer token not recognised"
	}
	rec := &store.Record{
		Time: r.now().UTC(), Principal: "anonymous", Transport: transport, Capability: "transport.connect",
		Decision: "deny", Reason: reason, Outcome: "denied", Violation: string(violation.PolicyDenied),
		Extra: mustJSON(map[string]string{"remote_addr": remoteAddr}),
	}
	if err := r.db.Append(context.WithoutCancel(ctx), rec); err != nil {
		r.log.Error("auditing authentication failure", "err", err)
	}
}
