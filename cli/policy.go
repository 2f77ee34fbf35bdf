package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/airlock-dev/airlock/policy"
)

// runPolicy is the policy author's workbench, modelled on `opa check` and
// `opa test`: check a file, run a table of cases against it, explain one
// decision, print the schema.
func runPolicy(_ context.Context, args []string, io Streams) error {
	usage := fmt.Errorf("airlock policy check FILE | test FILE CASES.yaml | explain FILE --call JSON [--policy NAME] | schema: %w", ErrUsage)
	if len(args) == 0 {
		return usage
	}
	switch args[0] {
	case "check":
		if len(args) != 2 {
			return usage
		}
		set, err := policy.CheckFile(args[1])
		if err != nil {
			return err
		}
		fmt.Fprintf(io.Out, "%s: OK (policies: %s)\n", args[1], strings.Join(set.Names(), ", "))
		return nil
	case "test":
		if len(args) != 3 {
			return usage
		}
		set, err := policy.LoadFile(args[1])
		if err != nil {
			return err
		}
		rep, err := policy.RunCases(set, args[2])
		if err != nil {
			return err
		}
		fmt.Fprint(io.Out, rep.String())
		if !rep.OK() {
			return fmt.Errorf("%d of %d cases failed: %w", len(rep.Failures), rep.Total, ErrFailed)
		}
		return nil
	case "explain":
		return policyExplain(args[1:], io)
	case "schema":
		return printSchema(io.Out)
	default:
		return usage
	}
}

func policyExplain(args []string, io Streams) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return fmt.Errorf("airlock policy explain FILE --call JSON: %w", ErrUsage)
	}
	file := args[0]
	fs := newFlags("policy explain", io)
	callJSON := fs.String("call", "", `the call as JSON, e.g. {"capability":"pool.read","args":{"pool":"sales"}}; "@FILE" reads a file`)
	name := fs.String("policy", "", "policy to explain (default: the file's only policy)")
	asJSON := fs.Bool("json", false, "print the explanation as JSON")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	if *callJSON == "" {
		return fmt.Errorf("--call is required: %w", ErrUsage)
	}
	data := []byte(*callJSON)
	if strings.HasPrefix(*callJSON, "@") {
		var err error
		if data, err = os.ReadFile(strings.TrimPrefix(*callJSON, "@")); err != nil {
			return err
		}
	}
	set, err := policy.LoadFile(file)
	if err != nil {
		return err
	}
	in, err := policy.ParseCall(data)
	if err != nil {
		return fmt.Errorf("--call: %w", err)
	}
	pname := *name
	if pname == "" && len(set.Names()) == 1 {
		pname = set.Names()[0]
	}
	p, ok := set.Get(pname)
	if !ok {
		return fmt.Errorf("policy %q not in %s (have: %s): %w", pname, file, strings.Join(set.Names(), ", "), ErrUsage)
	}
	ex := policy.Explain(p, in)
	if *asJSON {
		enc := json.NewEncoder(io.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(ex)
	}
	out := ex.String()
	if !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	fmt.Fprint(io.Out, out)
	return nil
}
