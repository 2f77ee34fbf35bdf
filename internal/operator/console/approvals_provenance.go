package console

import (
	"net/http"

	"github.com/airlock-dev/airlock/internal/execution/runner"
)

// pendingRow is a waiting declaration with what the approver needs to judge
// its values: for a comm.mcp need the upstream, tool and arguments, and
// where each argument came from (recomputed from the store: the context
// and its ancestors). Every string is the agent's or a remote's: made
// visible (hidden characters as ⟦U+XXXX⟧) and escaped by the template. A
// provenance that cannot be read shows none, not a guess; the approver
// still sees the arguments.
func (c *Console) pendingRow(r *http.Request, d *runner.Declaration) approvalRow {
	out := row(d)
	if p := d.Need.Parameters; p.Upstream != "" {
		out.Upstream, out.Tool, out.Arguments = visible(p.Upstream), visible(p.Tool), visible(cut(string(p.Arguments), 2000))
	}
	args, err := c.op.NeedProvenance(r.Context(), d)
	if err != nil {
		c.log.Warn("console: provenance of a declaration", "declaration", d.ID, "err", err)
		return out
	}
	for _, a := range args {
		a.Name, a.Value = visible(cut(a.Name, 120)), visible(cut(a.Value, 300))
		srcs := make([]string, len(a.Sources))
		for i, s := range a.Sources {
			srcs[i] = visible(cut(s, 120))
		}
		a.Sources = srcs
		out.Args = append(out.Args, a)
	}
	return out
}

// cut bounds s to n runes, marking the cut.
func cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
