package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/airlock-dev/airlock/internal/operator/operator"
)

// runContext lists, shows and creates runtime contexts: the durable state
// (phase, pools, policy, limit usage, declarations) a principal's calls run
// in, whatever session or process they arrive on.
func runContext(ctx context.Context, args []string, io Streams) error {
	const use = "airlock context list [--principal P] | show CONTEXT | create --parent CONTEXT [--pools a,b] [--policy NAME] [--phase planning|execution] [--task-file FILE] --reason TEXT [--config FILE] | endorse CONTEXT --value V --reason TEXT  (all take --state DIR)"
	sub, id, rest, err := subcommand(args, fmt.Errorf("%s: %w", use, ErrUsage), "show", "endorse")
	if err != nil {
		return err
	}
	fs := newFlags("context "+sub, io)
	state := fs.String("state", "", "state directory")
	principal := fs.String("principal", "", "list: only this principal's contexts")
	parent := fs.String("parent", "", "create: the context (or a session onto it) to restrict")
	pools := fs.String("pools", "", "create: comma-separated subset of the parent's pools (default: the parent's)")
	pol := fs.String("policy", "", "create: the parent's policy or one that extends it (default: the parent's)")
	phase := fs.String("phase", "", "create: planning (default) or execution (only under a parent in execution)")
	reason := fs.String("reason", "", "create, endorse: why (recorded in the audit trail)")
	value := fs.String("value", "", "endorse: the value to vouch for in this context only (provenance)")
	cfgPath := fs.String("config", "", "create: configuration file whose policies apply (default: the embedded demo)")
	taskFile := fs.String("task-file", "", "create: the principal's task text, the context's trusted input (provenance; at most 256 KiB)")
	if err := parse(fs, rest); err != nil {
		return err
	}
	switch sub {
	case "list":
		op, _, err := openOperator(*state, true)
		if err != nil {
			return err
		}
		defer op.Close()
		cs, err := op.Contexts(ctx, *principal)
		if err != nil {
			return err
		}
		w := newTable(io.Out)
		fmt.Fprintln(w, "CONTEXT\tPARENT\tPRINCIPAL\tROLE\tPOLICY\tPHASE\tPOOLS")
		for _, c := range cs {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.ID, dash(c.Parent), c.Principal, c.Role, c.Policy, c.Phase, strings.Join(c.Pools, ","))
		}
		return w.Flush()
	case "show":
		op, _, err := openOperator(*state, true)
		if err != nil {
			return err
		}
		defer op.Close()
		return showContext(ctx, op, id, io)
	case "create":
		if *parent == "" || *reason == "" {
			return fmt.Errorf("--parent and --reason are required: %w", ErrUsage)
		}
		op, cfg, closeAll, err := openConfigured(*state, *cfgPath, false)
		if err != nil {
			return err
		}
		defer closeAll()
		spec := operator.ChildSpec{Parent: *parent, Policy: *pol, Phase: *phase}
		if *taskFile != "" {
			if spec.Task, err = readTask(*taskFile); err != nil {
				return err
			}
		}
		if *pools != "" {
			spec.Pools = strings.Split(*pools, ",")
		}
		cx, handle, err := op.CreateChild(ctx, cfg, spec, operatorName(), *reason)
		if err != nil {
			return err
		}
		fmt.Fprintf(io.Out, "context %s created under %s (policy %s, phase %s, pools %s)\n", cx.ID, cx.Parent, cx.Policy, cx.Phase, strings.Join(cx.Pools, ","))
		fmt.Fprintf(io.Out, "handle: %s\n", handle)
		fmt.Fprintf(io.Out, "clients run in it with the HTTP header \"Airlock-Context: %s\", or `airlock serve --context %s` on stdio\n", handle, handle)
		return nil
	case "endorse":
		return endorseValue(ctx, *state, id, *value, *reason, io)
	default:
		return fmt.Errorf("unknown subcommand %q; %s: %w", sub, use, ErrUsage)
	}
}

func showContext(ctx context.Context, op *operator.API, id string, io Streams) error {
	c, err := op.Context(ctx, id)
	if err != nil {
		return err
	}
	u, err := op.ContextUsage(ctx, c.ID)
	if err != nil {
		return err
	}
	ss, err := op.Sessions(ctx, c.ID)
	if err != nil {
		return err
	}
	w := newTable(io.Out)
	for _, kv := range [][2]string{
		{"context", c.ID}, {"parent", dash(c.Parent)}, {"principal", c.Principal}, {"role", c.Role},
		{"policy", c.Policy + " (version " + c.PolicyVersion + ")"}, {"phase", c.Phase}, {"pools", strings.Join(c.Pools, ",")},
		{"created", c.CreatedAt.Format("2006-01-02T15:04:05Z") + " by " + c.CreatedBy},
		{"usage", fmt.Sprintf("%d actions, cost %g", u.Actions, u.Cost)},
		{"open sessions", fmt.Sprint(len(ss))},
	} {
		fmt.Fprintf(w, "%s:\t%s\n", kv[0], kv[1])
	}
	for _, s := range ss {
		fmt.Fprintf(w, "  session:\t%s (%s, last seen %s)\n", s.ID, s.Transport, s.LastSeen.Format("2006-01-02T15:04:05Z"))
	}
	if p, err := op.ContextProvenance(ctx, c.ID); err == nil {
		for _, in := range p.Inputs {
			fmt.Fprintf(w, "trusted input:\t%s (%s, %d bytes, sha256 %s, by %s)\n", in.ID, in.Kind, len(in.Text), in.SHA256, in.AddedBy)
		}
		evicted := 0
		for _, l := range p.Content {
			if l.Evicted {
				evicted++
			}
		}
		fmt.Fprintf(w, "labelled results:\t%d (%d evicted), %d endorsements\n", len(p.Content), evicted, len(p.Endorsements))
	}
	return w.Flush()
}

// readTask reads a task file, refusing one over the store's bound before
// reading it whole.
func readTask(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, operator.MaxTaskBytes+1))
	if err != nil {
		return "", fmt.Errorf("reading the task file: %w", err)
	}
	if len(b) > operator.MaxTaskBytes {
		return "", fmt.Errorf("task file %s: over %d bytes: %w", path, operator.MaxTaskBytes, operator.ErrTaskInvalid)
	}
	return string(b), nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
