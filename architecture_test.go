package main

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const (
	module     = "github.com/airlock-dev/airlock"
	runnerPkg  = "internal/execution/runner"
	sandboxPkg = "internal/execution/sandbox"
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
// executes outside the runner": the tool handlers and the store's write API
// are reachable only by importing tools or store, and only the runner may.
// (cli and server reach them only through the runner's exported API, which
// exposes declarations and operator functions, never a handler.)
func TestOnlyRunnerReachesToolsAndStore(t *testing.T) {
	// comm holds the external executors: reachable only through the runner's
	// broker, after the phase gate, the policy and an approval.
	// credentials reads the secrets: only the runner may hand them out, at
	// the boundary (issue 12 item 7).
	guarded := []string{module + "/tools", module + "/store", module + "/internal/execution/comm", module + "/internal/execution/credentials"}
	for name, p := range goList(t) {
		if name == runnerPkg {
			continue
		}
		for _, g := range guarded {
			if slices.Contains(p.Imports, g) {
				t.Errorf("package %s imports %s; only the runner may", name, g)
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
// sandbox package alone — and in store/pgtest, which starts the test
// PostgreSQL cluster and which no non-test package may import
// (TestPgtestOnlyInTests).
func TestOnlySandboxStartsProcesses(t *testing.T) {
	for name, p := range goList(t) {
		if name == sandboxPkg || strings.HasPrefix(name, sandboxPkg+"/") || name == "store/pgtest" {
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
