package runner

import (
	"context"
	"fmt"

	"github.com/airlock-dev/airlock/internal/edge/edge"
	"github.com/airlock-dev/airlock/internal/kit/rawjson"
	"github.com/airlock-dev/airlock/store"
)

// RecordEdgeRefusal audits refusals at the transport edge (401, 403, 413,
// malformed messages, connection bounds): count is how many refusals of
// this remote address, principal and cause the record stands for (the edge
// aggregates floods, see package edge). No presented token or message body
// is recorded, only the cause.
func (r *Runner) RecordEdgeRefusal(ctx context.Context, ref edge.Refusal, count int) {
	reason := ref.Reason
	if count > 1 {
		reason = fmt.Sprintf("%s (%d refusals like this from this address)", reason, count)
	}
	principal := ref.Principal
	if principal == "" {
		principal = "anonymous"
	}
	rec := &store.Record{
		Time: r.now().UTC(), Principal: principal, Role: ref.Role, Transport: ref.Transport, Capability: "transport.edge",
		Decision: "deny", Reason: reason, Outcome: "denied", Violation: ref.Code,
	}
	extra := map[string]any{"remote_addr": ref.Remote, "count": count}
	if ref.ClientID != "" {
		extra["client_id"] = ref.ClientID
	}
	rec.Extra = rawjson.Marshal(extra)
	if err := r.db.Append(context.WithoutCancel(ctx), rec); err != nil {
		r.log.Error("auditing a refusal at the edge", "err", err)
	}
}
