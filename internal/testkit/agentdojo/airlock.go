package agentdojo

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/airlock-dev/airlock/cli"
)

// BasePolicy is the policy the harness defines and every policy of a
// policy file extends unless it names another parent: it allows the
// suites' upstream tools (mcp.*) over loopback HTTP, where the fake
// upstreams listen. A policy file restricts it.
const BasePolicy = "agentdojo"

// harnessOwned are the configuration sections the harness writes; a policy
// file may not set them.
var harnessOwned = []string{"upstreams", "roles", "transports", "pools", "server"}

// PolicyFile is a policy file: Airlock configuration YAML holding
// `policies:` (and any other section the harness does not own, e.g.
// `comm`), written from the docs alone, with no value of a suite's data.
type PolicyFile struct {
	Path     string
	Suite    string         // the suite (upstream id) it is for
	Sections map[string]any // the decoded file
	Names    []string       // its policies, in file order
}

// LoadPolicyFile reads a policy file for suite.
func LoadPolicyFile(path, suite string) (*PolicyFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var ms yaml.MapSlice
	if err := yaml.UnmarshalWithOptions(data, &ms, yaml.UseOrderedMap()); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	pf := &PolicyFile{Path: path, Suite: suite, Sections: map[string]any{}}
	for _, it := range ms {
		k := fmt.Sprint(it.Key)
		for _, o := range harnessOwned {
			if k == o {
				return nil, fmt.Errorf("%s: section %q is written by the harness; a policy file holds policies", path, k)
			}
		}
		pf.Sections[k] = it.Value
		if k == "policies" {
			pols, ok := it.Value.(yaml.MapSlice)
			if !ok {
				return nil, fmt.Errorf("%s: policies is not a map", path)
			}
			for _, p := range pols {
				pf.Names = append(pf.Names, fmt.Sprint(p.Key))
			}
		}
	}
	if len(pf.Names) == 0 {
		return nil, fmt.Errorf("%s: no policies", path)
	}
	return pf, nil
}

// QualifiedName is the name policy name of this file gets in the
// generated configuration: <suite>.<name>, so files for several suites
// share one server.
func (pf *PolicyFile) QualifiedName(name string) string { return pf.Suite + "." + name }

// qualified returns the file's policies renamed, each extending the
// harness's base policy unless it extends one of the file's own.
func (pf *PolicyFile) qualified() (yaml.MapSlice, error) {
	var out yaml.MapSlice
	pols := pf.Sections["policies"].(yaml.MapSlice)
	for _, p := range pols {
		body, ok := p.Value.(yaml.MapSlice)
		if !ok && p.Value != nil {
			return nil, fmt.Errorf("%s: policy %v is not a map", pf.Path, p.Key)
		}
		nb := yaml.MapSlice{}
		hasExtends := false
		for _, f := range body {
			if fmt.Sprint(f.Key) == "extends" {
				hasExtends = true
				parent := fmt.Sprint(f.Value)
				if parent != BasePolicy {
					parent = pf.QualifiedName(parent)
				}
				f.Value = parent
			}
			nb = append(nb, f)
		}
		if !hasExtends {
			nb = append(yaml.MapSlice{{Key: "extends", Value: BasePolicy}}, nb...)
		}
		out = append(out, yaml.MapItem{Key: pf.QualifiedName(fmt.Sprint(p.Key)), Value: nb})
	}
	return out, nil
}

// Airlock is one in-process `airlock serve` on loopback, with the state
// directory and configuration the harness wrote.
type Airlock struct {
	Dir, Config, State string
	URL                string // http://ADDR/mcp
	Token              string

	cancel context.CancelFunc
	done   chan error
	log    *lockedBuffer

	opMu     sync.Mutex // one context create at a time (they share the prompt file)
	taskFile int        // taskFileUnknown, taskFilePresent or taskFileAbsent
}

// StartAirlock writes the configuration (the harness's base policy and
// role, an upstream per suite, the policy files' policies) and serves it.
func StartAirlock(ctx context.Context, dir string, ups map[string]*Upstream, files []*PolicyFile) (*Airlock, error) {
	tok := make([]byte, 24)
	if _, err := rand.Read(tok); err != nil {
		return nil, err
	}
	a := &Airlock{Dir: dir, Config: filepath.Join(dir, "airlock.yaml"), State: filepath.Join(dir, "state"),
		Token: hex.EncodeToString(tok), done: make(chan error, 1), log: &lockedBuffer{}}
	tokFile := filepath.Join(dir, "agent.token")
	if err := os.WriteFile(tokFile, []byte(a.Token), 0o600); err != nil {
		return nil, err
	}
	cfg, err := configYAML(ups, files, tokFile)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(a.Config, cfg, 0o600); err != nil {
		return nil, err
	}
	// Check it as an operator would, for errors with file:line.
	if out, err := a.Op(ctx, "config", "check", a.Config); err != nil {
		return nil, fmt.Errorf("airlock config check: %v\n%s", err, out)
	}
	sctx, cancel := context.WithCancel(ctx)
	a.cancel = cancel
	pr, pw := io.Pipe()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		re := regexp.MustCompile(`serving streamable HTTP at (http://\S+/mcp)`)
		for sc.Scan() {
			line := sc.Text()
			a.log.WriteString(line + "\n")
			if m := re.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	go func() {
		err := cli.Run(sctx, []string{"serve", "--http", "127.0.0.1:0", "--config", a.Config, "--state", a.State, "--log-level", "warn"},
			cli.Streams{In: strings.NewReader(""), Out: io.Discard, Err: pw})
		pw.Close()
		a.done <- err
	}()
	select {
	case a.URL = <-addr:
	case err := <-a.done:
		cancel()
		return nil, fmt.Errorf("airlock serve ended: %v\n%s", err, a.log.String())
	case <-time.After(30 * time.Second):
		cancel()
		return nil, fmt.Errorf("airlock serve did not start in 30s\n%s", a.log.String())
	}
	return a, nil
}

// Close stops the server.
func (a *Airlock) Close() error {
	a.cancel()
	select {
	case err := <-a.done:
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	case <-time.After(10 * time.Second):
		return fmt.Errorf("airlock serve did not stop")
	}
	return nil
}

// Log is what the server wrote to stderr.
func (a *Airlock) Log() string { return a.log.String() }

// Op runs an operator command in-process against this server's state and
// configuration (`--state` and, where the command takes it, `--config`
// are added).
func (a *Airlock) Op(ctx context.Context, args ...string) (string, error) {
	var out, errb bytes.Buffer
	full := append([]string{}, args...)
	switch args[0] {
	case "config":
	case "upstreams", "context":
		full = append(full, "--state", a.State, "--config", a.Config)
	default:
		full = append(full, "--state", a.State)
	}
	err := cli.Run(ctx, full, cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	if err != nil {
		return out.String() + errb.String(), err
	}
	return out.String(), nil
}

// approveCmd is the line `upstreams review` prints for a pending pin.
var approveCmd = regexp.MustCompile(`approve with: airlock upstreams approve (\S+) (\S+) (\S+)`)

// ApproveUpstreams reviews the upstreams' tool definitions and approves
// each pending one as the operator would, returning how many.
func (a *Airlock) ApproveUpstreams(ctx context.Context) (int, error) {
	out, err := a.Op(ctx, "upstreams", "review")
	if err != nil {
		return 0, fmt.Errorf("upstreams review: %v\n%s", err, out)
	}
	n := 0
	for _, m := range approveCmd.FindAllStringSubmatch(out, -1) {
		if o, err := a.Op(ctx, "upstreams", "approve", m[1], m[2], m[3], "--reason", "agentdojo replay: the suite's tool as published"); err != nil {
			return n, fmt.Errorf("upstreams approve %s %s: %v\n%s", m[1], m[2], err, o)
		}
		n++
	}
	return n, nil
}

var handleRe = regexp.MustCompile(`handle: (\S+)`)

// NewTaskContext creates a child context of parent under policy for one
// task and returns its handle. The task prompt is handed over as the
// context's trusted input with --task-file (the provenance work adds the
// flag to `context create`); the first call finds out by trying, and
// while the flag does not exist contexts are made without it.
func (a *Airlock) NewTaskContext(ctx context.Context, parent, policy, task, prompt string) (string, error) {
	args := []string{"context", "create", "--parent", parent, "--policy", policy, "--phase", "execution",
		"--reason", "agentdojo " + task}
	a.opMu.Lock()
	defer a.opMu.Unlock()
	out, err := "", error(nil)
	if a.taskFile != taskFileAbsent {
		f := filepath.Join(a.Dir, "task-prompt.txt")
		if err := os.WriteFile(f, []byte(prompt), 0o600); err != nil {
			return "", err
		}
		out, err = a.Op(ctx, append(args, "--task-file", f)...)
		if err != nil && a.taskFile == taskFileUnknown && strings.Contains(err.Error()+out, "flag provided but not defined: -task-file") {
			a.taskFile = taskFileAbsent
		} else if err == nil {
			a.taskFile = taskFilePresent
		}
	}
	if a.taskFile == taskFileAbsent {
		out, err = a.Op(ctx, args...)
	}
	if err != nil {
		return "", fmt.Errorf("context create: %v\n%s", err, out)
	}
	m := handleRe.FindStringSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("context create printed no handle:\n%s", out)
	}
	return m[1], nil
}

// TaskFile reports whether task contexts get the prompt as trusted input.
func (a *Airlock) TaskFile() bool {
	a.opMu.Lock()
	defer a.opMu.Unlock()
	return a.taskFile == taskFilePresent
}

// Whether `context create` takes --task-file.
const (
	taskFileUnknown = iota
	taskFilePresent
	taskFileAbsent
)

// RootContext finds the agent principal's default context (the parent of
// every task's context).
func (a *Airlock) RootContext(ctx context.Context) (string, error) {
	out, err := a.Op(ctx, "context", "list")
	if err != nil {
		return "", fmt.Errorf("context list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		// CONTEXT PARENT PRINCIPAL ROLE POLICY PHASE POOLS
		if len(f) >= 5 && f[1] == "-" && f[3] == agentRole {
			return f[0], nil
		}
	}
	return "", fmt.Errorf("no default context of role %s in:\n%s", agentRole, out)
}

const agentRole = "agent"

// configYAML is the whole Airlock configuration of a run.
func configYAML(ups map[string]*Upstream, files []*PolicyFile, tokFile string) ([]byte, error) {
	policies := yaml.MapSlice{{Key: BasePolicy, Value: yaml.MapSlice{
		{Key: "allow", Value: []string{"mcp.*"}},
		{Key: "network", Value: yaml.MapSlice{
			{Key: "allow_hosts", Value: []string{"127.0.0.1"}},
			{Key: "allow_schemes", Value: []string{"http"}},
			{Key: "allow_private", Value: []string{"127.0.0.0/8"}},
		}},
	}}}
	extra := map[string]any{}
	for _, pf := range files {
		q, err := pf.qualified()
		if err != nil {
			return nil, err
		}
		policies = append(policies, q...)
		for k, v := range pf.Sections {
			if k == "policies" {
				continue
			}
			if prev, ok := extra[k]; ok && fmt.Sprint(prev) != fmt.Sprint(v) {
				return nil, fmt.Errorf("%s: section %q differs from another policy file's", pf.Path, k)
			}
			extra[k] = v
		}
	}
	var upl []yaml.MapSlice
	ids := make([]string, 0, len(ups))
	for id := range ups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		upl = append(upl, yaml.MapSlice{{Key: "id", Value: id}, {Key: "url", Value: ups[id].URL()}})
	}
	doc := yaml.MapSlice{
		{Key: "server", Value: yaml.MapSlice{{Key: "name", Value: "airlock-agentdojo"}}},
		{Key: "pools", Value: []any{}},
		{Key: "policies", Value: policies},
		{Key: "roles", Value: yaml.MapSlice{{Key: agentRole, Value: yaml.MapSlice{
			{Key: "policy", Value: BasePolicy},
			{Key: "initial_phase", Value: "execution"},
			{Key: "approver", Value: "operator"},
			{Key: "tokens", Value: []any{yaml.MapSlice{{Key: "file", Value: tokFile}}}},
		}}}},
		{Key: "transports", Value: yaml.MapSlice{{Key: "stdio", Value: yaml.MapSlice{{Key: "role", Value: agentRole}}}}},
		{Key: "upstreams", Value: upl},
	}
	comm := yaml.MapSlice{{Key: "fetch", Value: yaml.MapSlice{{Key: "allow_private", Value: []string{"127.0.0.0/8"}}}}}
	if _, ok := extra["comm"]; !ok {
		doc = append(doc, yaml.MapItem{Key: "comm", Value: comm})
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		doc = append(doc, yaml.MapItem{Key: k, Value: extra[k]})
	}
	return yaml.Marshal(doc)
}

// lockedBuffer is a bytes.Buffer safe for one writer and other readers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) WriteString(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(s)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
