package runner

import (
	"context"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/edge/edge"
)

// RecordEdgeRefusal audits refusals at the transport edge (401, 403, 413,
// malformed messages, connection bounds): count is how many refusals of
// this remote address, principal and cause the record stands for (the edge
// aggregates floods, see package edge). No presented token or message body
// is recorded, only the cause.
func (r *Runner) RecordEdgeRefusal(ctx context.Context, ref edge.Refusal, count int) {
	rec := audit.EdgeRefusal(r.now().UTC(), audit.Edge{Transport: ref.Transport, Remote: ref.Remote, Principal: ref.Principal,
		Role: ref.Role, ClientID: ref.ClientID, Code: ref.Code, Reason: ref.Reason}, count)
	if err := r.db.Append(context.WithoutCancel(ctx), rec); err != nil {
		r.log.Error("auditing a refusal at the edge", "err", err)
	}
}
