package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"
)

const (
	module       = "github.com/airlock-dev/airlock"
	runnerPkg    = "internal/execution/runner"
	sandboxPkg   = "internal/execution/sandbox"
	statePkg     = "internal/execution/state"
	provtracePkg = "internal/execution/provtrace"
	upstreamPkg  = "internal/execution/upstream"
	operatorPkg  = "internal/operator/operator"
)

type listedPackage struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// goList runs `go list -deps`-style queries over the module's own packages.
func goList(t *testing.T) map[string]listedPackage {
	t.Helper()
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports,Deps", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]listedPackage{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p listedPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs[strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")] = p
	}
	return pkgs
}

// TestOnlyRunnerReachesToolsAndStore is the structural half of "nothing
// executes outside the runner, and only the runner's side and the
// operator's API write the store": the tool handlers, the store's write
// API, the external executors and the secrets are reachable only by
// importing the packages below, and only the packages listed beside each
// may, for the reason given. (cli and server reach them only through the
// runner's and the operator's exported APIs, which expose calls, sessions
// and operator orders, never a handler or the store itself.)
func TestOnlyRunnerReachesToolsAndStore(t *testing.T) {
	guarded := []struct {
		pkg string
		may []string
		why string
	}{
		{"tools", []string{runnerPkg},
			"a tool's handler runs only as a step of Session.Run"},
		// The operator's API writes approvals, the kill switch, phases,
		// child contexts and pins: decisions, each itself audited; it
		// never executes a call (layers_test.go's forbiddenImports).
		{"store", []string{runnerPkg, operatorPkg, statePkg, upstreamPkg, provtracePkg},
			"the audit trail and the state every process shares are written by one call's path (the runner and its upstream connector) and by the operator's API; state only opens the store for them; provtrace reads a context's provenance and writes endorsements for both of them"},
		{provtracePkg, []string{runnerPkg, operatorPkg},
			"it writes endorsements, which make a value pass as vouched for: only the runner (for the person at the client, after the approval question's checks) and the operator's API may"},
		{"internal/execution/comm", []string{runnerPkg, upstreamPkg},
			"the external executors are reached only through the runner's broker, after the phase gate, the policy and an approval; the upstream connector dials upstream MCP servers through comm for the broker's calls (and lists their tools for the operator's review)"},
		{"internal/execution/credentials", []string{runnerPkg},
			"the secrets: only the runner hands them out, at the boundary (issue 12 item 7)"},
		{statePkg, []string{runnerPkg, operatorPkg},
			"it opens the store, and lends a running runner's own (state.Lent): whoever imports it holds the store"},
		{upstreamPkg, []string{runnerPkg, operatorPkg, statePkg},
			"it connects to upstream MCP servers: the runner's broker calls them, the operator's API only reviews their tools (state names its type in state.Lent)"},
		{upstreamPkg + "/warm", []string{upstreamPkg},
			"warm upstream sessions are reached only through the upstream connector, which keys them by context, principal and policy and checks the pins on them (issue 23)"},
	}
	for name, p := range goList(t) {
		for _, g := range guarded {
			if slices.Contains(p.Imports, module+"/"+g.pkg) && !slices.Contains(g.may, name) {
				t.Errorf("package %s imports %s; only %s may: %s", name, g.pkg, strings.Join(g.may, ", "), g.why)
			}
		}
	}
}

// TestForbiddenDependencies keeps capabilities where they belong: a tool or
// a pool reader that could open sockets would be a way around the broker.
// (Tools do depend on the sandbox package — run_pipeline is handed a
// *sandbox.Sandbox by the runner — but only the sandbox imports os/exec.)
func TestForbiddenDependencies(t *testing.T) {
	rules := map[string][]string{
		"tools":                      {"net/http", module + "/store", "database/sql"},
		"internal/execution/toolkit": {"net/http", module + "/store", module + "/" + runnerPkg, module + "/tools"},
		"sources":                    {"net", "net/http", "os/exec"},
		"internal/policy/policy":     {"net/http", "os/exec", module + "/store"},
		"phasegate":                  {"net/http", "os/exec", module + "/store"},
		"internal/policy/redact":     {"net/http", "os/exec"},
		// credentials reads secrets and hands them to the runner; it neither
		// sends them anywhere nor logs nor stores them itself.
		"internal/execution/credentials": {"net/http", "os/exec", "log/slog", module + "/store"},
		// tracing exports spans; it must not reach what the calls touch.
		"internal/edge/tracing": {"os/exec", module + "/store", module + "/" + runnerPkg, module + "/tools", module + "/internal/execution/credentials"},
		// The operator's side reads and decides; it links neither the
		// execution engine nor a tool's handler, even indirectly (issue 21).
		operatorPkg:                 {module + "/" + runnerPkg, module + "/tools"},
		"internal/operator/console": {module + "/" + runnerPkg, module + "/tools"},
		"internal/operator/report":  {module + "/" + runnerPkg, module + "/tools"},
		// egress decides and copies bytes; it dials only through the dialer
		// it is given (comm's checked one) and audits through a callback.
		"internal/execution/egress": {"os/exec", module + "/store", module + "/" + runnerPkg, module + "/internal/execution/comm", module + "/internal/execution/credentials"},
	}
	pkgs := goList(t)
	for name, forbidden := range rules {
		p, ok := pkgs[name]
		if !ok {
			t.Errorf("package %s not found", name)
			continue
		}
		for _, f := range forbidden {
			if slices.Contains(p.Deps, f) {
				t.Errorf("package %s depends on %s (directly or not)", name, f)
			}
		}
	}
}

// TestOnlySandboxStartsProcesses: os/exec in non-test code lives in the
// sandbox package alone — and in three test helpers no non-test package may
// import (TestPgtestOnlyInTests, TestTestPackagesNotShipped): store/pgtest,
// which starts the test PostgreSQL cluster, internal/testkit/gobuild,
// which builds the binaries tests run, and internal/testkit/childtest,
// which starts a test binary again as its own child.
func TestOnlySandboxStartsProcesses(t *testing.T) {
	for name, p := range goList(t) {
		if name == sandboxPkg || strings.HasPrefix(name, sandboxPkg+"/") || name == "store/pgtest" || name == "internal/testkit/gobuild" || name == "internal/testkit/childtest" {
			continue
		}
		if slices.Contains(p.Imports, "os/exec") {
			t.Errorf("package %s imports os/exec; only sandbox may start processes", name)
		}
	}
}

// TestTestIdPNotShipped: the test OpenID Provider (internal/testkit/testidp, built
// on zitadel's provider library) signs tokens for anyone with a known
// secret; it must never be linked into the airlock binary.
func TestTestIdPNotShipped(t *testing.T) {
	p, ok := goList(t)[""]
	if !ok {
		t.Fatal("main package not found")
	}
	for _, d := range p.Deps {
		if strings.HasPrefix(d, "github.com/zitadel/") || d == module+"/internal/testkit/testidp" {
			t.Errorf("the airlock binary depends on %s", d)
		}
	}
}

// TestPlainMCPNotShipped: the ungoverned benchmark baseline
// (internal/testkit/plainmcp) serves a file with no policy, audit or fence; it
// must never be linked into the airlock binary.
func TestPlainMCPNotShipped(t *testing.T) {
	p, ok := goList(t)[""]
	if !ok {
		t.Fatal("main package not found")
	}
	if slices.Contains(p.Deps, module+"/internal/testkit/plainmcp") {
		t.Error("the airlock binary depends on internal/testkit/plainmcp")
	}
}

// TestPgtestOnlyInTests: the test cluster helper (which runs initdb and
// pg_ctl) is reachable from test files only.
func TestPgtestOnlyInTests(t *testing.T) {
	for name, p := range goList(t) {
		if name != "store/pgtest" && slices.Contains(p.Deps, module+"/store/pgtest") {
			t.Errorf("package %s depends on store/pgtest, a test-only helper", name)
		}
	}
}

// isTestPackage reports whether a package is test code: the test framework,
// a …test helper package (the module's conformance suites contextstest and
// declarationstest, store/pgtest, or a library's, like net/http/httptest),
// or anything under internal/testkit. The standard library's own internal
// packages (internal/synctest, which the runtime links) are not.
func isTestPackage(path string) bool {
	rel, own := strings.CutPrefix(path, module+"/")
	switch {
	case path == "testing" || strings.HasPrefix(path, "testing/"):
		return true
	case own && strings.HasPrefix(rel, "internal/testkit/"):
		return true
	case !own && (path == "internal" || strings.HasPrefix(path, "internal/")):
		return false
	}
	return strings.HasSuffix(path[strings.LastIndex(path, "/")+1:], "test")
}

// TestTestPackagesNotShipped: test code (conformance suites, fakes, the
// test IdP, the PostgreSQL cluster helper) is reachable from test files
// only. The airlock binary links none of it, not even the testing package,
// and no production package of the module depends on a test package, so
// a suite's fixtures or a fake store cannot become a path the server runs.
func TestTestPackagesNotShipped(t *testing.T) {
	pkgs := goList(t)
	main, ok := pkgs[""]
	if !ok {
		t.Fatal("main package not found")
	}
	for _, d := range main.Deps {
		if isTestPackage(d) {
			t.Errorf("the airlock binary links %s, test code", d)
		}
	}
	for name, p := range pkgs {
		if isTestPackage(module + "/" + name) {
			continue
		}
		for _, d := range p.Deps {
			if strings.HasPrefix(d, module+"/") && isTestPackage(d) {
				t.Errorf("package %s depends on %s, test code: only _test.go files may import it", name, d)
			}
		}
	}
}

// TestIsTestPackage pins the classification TestTestPackagesNotShipped
// relies on, so a rename cannot quietly exempt a test package.
func TestIsTestPackage(t *testing.T) {
	for path, want := range map[string]bool{
		"testing":                                 true,
		"testing/fstest":                          true,
		"net/http/httptest":                       true,
		"internal/synctest":                       false,
		module + "/store/pgtest":                  true,
		module + "/declarations/declarationstest": true,
		module + "/internal/policy/contexts/contextstest": true,
		module + "/internal/testkit/plainmcp":             true,
		module + "/internal/testkit/testidp/cmd/testidp":  true,
		module + "/internal/policy/contexts":              false,
		module + "/store":                                 false,
		module + "/internal/execution/runner":             false,
	} {
		if got := isTestPackage(path); got != want {
			t.Errorf("isTestPackage(%q) = %v, want %v", path, got, want)
		}
	}
}

// TestPoisoningIsALeaf: the tool-poisoning scanner reads untrusted text
// for the review and decides nothing itself (issue 25); it depends on the
// standard library and golang.org/x/text only — no store, no network, no
// other part of Airlock — so any part may ask it and it can reach nothing.
func TestPoisoningIsALeaf(t *testing.T) {
	p, ok := goList(t)["internal/policy/poisoning"]
	if !ok {
		t.Fatal("internal/policy/poisoning not found")
	}
	for _, d := range p.Deps {
		first, _, _ := strings.Cut(d, "/")
		if strings.Contains(first, ".") && !strings.HasPrefix(d, "golang.org/x/text/") {
			t.Errorf("internal/policy/poisoning depends on %s: standard library and golang.org/x/text only", d)
		}
	}
	for _, banned := range []string{"net", "net/http", "os/exec", "database/sql"} {
		if slices.Contains(p.Deps, banned) {
			t.Errorf("internal/policy/poisoning depends on %s", banned)
		}
	}
}

// Sizes the house keeps (issue 21): the runner is one call's path that a
// newcomer reads in one sitting, and no Go file grows past what a
// reviewer holds in mind. A change that crosses either line splits the
// code, or moves the line here with its reason.
const (
	maxRunnerLines = 2500 // non-test lines of internal/execution/runner
	maxFileLines   = 800  // any Go file of the module, tests included
)

func TestSizesStayReadable(t *testing.T) {
	out, err := exec.Command("git", "ls-files", "*.go").Output()
	if err != nil {
		t.Skipf("git ls-files: %v (not a checkout)", err)
	}
	runner := 0
	for _, name := range strings.Fields(string(out)) {
		data, err := os.ReadFile(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the working tree, not yet in the index
		}
		if err != nil {
			t.Fatal(err)
		}
		n := bytes.Count(data, []byte("\n"))
		if n > maxFileLines {
			t.Errorf("%s has %d lines, over %d: split it along its jobs", name, n, maxFileLines)
		}
		if path.Dir(name) == runnerPkg && !strings.HasSuffix(name, "_test.go") {
			runner += n
		}
	}
	if runner > maxRunnerLines {
		t.Errorf("%s has %d non-test lines, over %d: the runner keeps one call's path; move what is not that to its own package", runnerPkg, runner, maxRunnerLines)
	}
	if runner == 0 {
		t.Errorf("no file of %s counted: the test no longer sees the runner", runnerPkg)
	}
}
