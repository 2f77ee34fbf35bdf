package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/airlock-dev/airlock/internal/kit/atomicfile"
	"os"
	"regexp"
	"strings"

	"github.com/airlock-dev/airlock/internal/kit/yamlfile"
	"github.com/airlock-dev/airlock/internal/policy/policy"
)

// runPolicy is the policy author's workbench, modelled on `opa check` and
// `opa test`: check a file, run a table of cases against it, explain one
// decision, print the schema.
func runPolicy(_ context.Context, args []string, io Streams) error {
	usage := fmt.Errorf("airlock policy check FILE | test FILE CASES.yaml [-v] [--run RE] [--json] [--coverage] | fmt [--check] FILE | explain FILE --call JSON [--policy NAME] | schema: %w", ErrUsage)
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
		return policyTest(args[1:], io)
	case "fmt":
		return policyFmt(args[1:], io)
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

// policyTest runs a case table: -v shows every case with its decision,
// rule and reason; --run selects cases by a regexp on their names; --json
// prints the whole report; --coverage lists the patterns and rules no case
// hit (an error only with --require-coverage).
func policyTest(args []string, io Streams) error {
	fs := newFlags("policy test", io)
	verbose := fs.Bool("v", false, "print every case with its decision, rule and reason")
	runRE := fs.String("run", "", "run only the cases whose name matches this regexp")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	coverage := fs.Bool("coverage", false, "list the patterns and rules no case hit")
	requireCoverage := fs.Bool("require-coverage", false, "fail when a pattern or rule is hit by no case (implies --coverage)")
	pos, err := parseExactly(fs, args, 2, "airlock policy test FILE CASES.yaml [-v] [--run RE] [--json] [--coverage] [--require-coverage]")
	if err != nil {
		return err
	}
	var opts policy.CaseOptions
	if *runRE != "" {
		re, err := regexp.Compile(*runRE)
		if err != nil {
			return fmt.Errorf("--run: %v: %w", err, ErrUsage)
		}
		opts.Match = re.MatchString
	}
	set, err := policy.LoadFile(pos[0])
	if err != nil {
		return err
	}
	rep, err := policy.RunCases(set, pos[1], &opts)
	if err != nil {
		return err
	}
	*coverage = *coverage || *requireCoverage
	switch {
	case *asJSON:
		if !*coverage {
			rep.Uncovered = nil
		}
		enc := json.NewEncoder(io.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	case *verbose:
		fmt.Fprint(io.Out, rep.Verbose())
	default:
		fmt.Fprint(io.Out, rep.String())
	}
	if *coverage && !*asJSON {
		fmt.Fprint(io.Out, rep.CoverageString())
	}
	if !rep.OK() {
		return fmt.Errorf("%d of %d cases failed: %w", len(rep.Failures), len(rep.Results), ErrFailed)
	}
	if *requireCoverage && len(rep.Uncovered) > 0 {
		return fmt.Errorf("%d of %d patterns and rules hit by no case: %w", len(rep.Uncovered), rep.Rules, ErrFailed)
	}
	return nil
}

// policyFmt rewrites a policy or configuration file in canonical YAML
// form, or with --check only reports whether it is (exit 1 if not).
func policyFmt(args []string, io Streams) error {
	fs := newFlags("policy fmt", io)
	check := fs.Bool("check", false, "do not write; exit 1 if FILE is not formatted")
	pos, err := parseExactly(fs, args, 1, "airlock policy fmt [--check] FILE")
	if err != nil {
		return err
	}
	file := pos[0]
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	out, err := yamlfile.Format(file, data)
	if err != nil {
		return err
	}
	if bytes.Equal(out, data) {
		if *check {
			fmt.Fprintf(io.Out, "%s: formatted\n", file)
		}
		return nil
	}
	if *check {
		fmt.Fprintf(io.Out, "%s: not formatted (run airlock policy fmt %s)\n", file, file)
		return fmt.Errorf("%s is not formatted: %w", file, ErrFailed)
	}
	st, err := os.Stat(file)
	if err != nil {
		return err
	}
	// Write beside it and rename: an interrupted fmt never leaves half a policy.
	if err := atomicfile.Write(file, out, st.Mode().Perm()); err != nil {
		return err
	}
	fmt.Fprintf(io.Out, "%s: formatted\n", file)
	return nil
}
