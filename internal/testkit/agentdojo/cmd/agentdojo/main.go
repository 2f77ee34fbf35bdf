// Command agentdojo replays AgentDojo suites through an in-process Airlock
// and writes the JSON report (make agentdojo; see
// internal/testkit/agentdojo/README.md).
//
//	agentdojo [--suite FILE[,FILE...]] [--config FILE[,FILE...]] [--report FILE]
//	          [--policies NAME[,NAME...]] [--evasions sample|all|none] [--max-user-tasks N]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/airlock-dev/airlock/internal/testkit/agentdojo"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "agentdojo:", err)
		os.Exit(1)
	}
}

func run() error {
	def := filepath.Join("testdata", "agentdojo")
	suites := flag.String("suite", strings.Join([]string{filepath.Join(def, "banking.json"), filepath.Join(def, "slack.json"), filepath.Join(def, "travel.json")}, ","),
		"suite files, comma-separated")
	configs := flag.String("config", "", "policy files, comma-separated, one per suite in the same order (default: DIR/NAME.policy.yaml beside each suite file)")
	report := flag.String("report", filepath.Join("bin", "agentdojo-report.json"), "where to write the JSON report")
	policies := flag.String("policies", "", "policies of each file to run, comma-separated, or all (default: provenance when the file has it, else all)")
	evasions := flag.String("evasions", "sample", "evasion arm: sample (one pair per injection task), all (every scorable pair) or none")
	maxTasks := flag.Int("max-user-tasks", 0, "replay only the first N user tasks of each suite (0: all)")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	files := split(*suites)
	cfgs := split(*configs)
	if len(cfgs) > 0 && len(cfgs) != len(files) {
		return fmt.Errorf("%d suite files but %d policy files", len(files), len(cfgs))
	}
	var runs []agentdojo.SuiteRun
	for i, f := range files {
		s, err := agentdojo.LoadSuite(f)
		if err != nil {
			return err
		}
		cfg := filepath.Join(filepath.Dir(f), s.Name+".policy.yaml")
		if len(cfgs) > 0 {
			cfg = cfgs[i]
		}
		pf, err := agentdojo.LoadPolicyFile(cfg, s.Name)
		if err != nil {
			return err
		}
		runs = append(runs, agentdojo.SuiteRun{Suite: s, Policy: pf, Policies: split(*policies)})
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := agentdojo.Run(ctx, runs, agentdojo.Options{MaxUserTasks: *maxTasks, Evasions: *evasions, Log: os.Stderr})
	if err != nil {
		return err
	}
	for _, l := range rep.Summaries() {
		fmt.Println(l)
	}
	data, err := json.MarshalIndent(rep, "", " ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(*report), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(*report, append(data, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Println("report:", *report)
	return nil
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
