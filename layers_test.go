package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
)

// layer is one part of the house: the packages it holds (by path prefix,
// relative to the module) and why it sits where it does. Layers are listed
// from the leaves up: a package may import its own layer and the layers
// listed before it, never one listed after (tailscale's deptest, as one
// table). A sideways or upward import fails TestLayerOrder naming the rule.
type layer struct {
	name  string
	holds []string
	why   string
}

var layers = []layer{
	{"kit", []string{"internal/kit/"},
		"small tools with one job each (atomic files, strict JSON and YAML, the agent-visible error type, URL and origin normal forms, capability patterns, metrics): they know nothing of Airlock's parts"},
	{"content", []string{"fence", "attribution", "sources", "schemas", "internal/provenance"},
		"what content is and how its trust travels (pools, fences, signed attribution, schemas): data the decisions read, deciding nothing themselves"},
	{"policy", []string{"internal/policy/", "phasegate", "declarations"},
		"the decisions over a call (phase, policy, limits, redaction, contexts, approval questions, pins, declared needs): pure judgement, no I/O of their own"},
	{"audit", []string{"internal/audit/"},
		"the audit record, its encoding and its anchors: below the store that keeps them, so that readers of the trail need nothing that wrote it"},
	{"config", []string{"internal/config"},
		"the configuration file: its types are the settings of every part above it, checked with the policy's and the pools' own parsers"},
	{"store", []string{"store"},
		"the durable state (audit chain, contexts, declarations, pins) behind one interface, SQLite or PostgreSQL: it stores what the layers below define"},
	{"edge", []string{"internal/edge/"},
		"the network's front (connection bounds, wire checks, OAuth, tracing): guards that run before a call reaches the runner"},
	{"execution", []string{"internal/execution/", "tools"},
		"one call's path (the runner, its broker, the tools, the sandbox, the external executors): the only code that executes"},
	{"operator", []string{"internal/operator/"},
		"the operator's side (its API, the console, the reports): drives the store through the runner's side, never executes a call"},
	{"server", []string{"server"},
		"the transports: put the runner and the operator's console on the wire"},
	{"command", []string{"cli", ""},
		"the airlock command: wires every part together, so it may import any"},
	{"testkit", []string{"internal/testkit/"},
		"test-only helpers (peers, a test IdP, the AgentDojo replay); TestTestPackagesNotShipped keeps them out of the binary"},
}

// narrower rules a layer's rank alone would allow: each names the import
// it forbids and why.
var forbiddenImports = []struct{ from, to, why string }{}

// layerOf returns the index of the layer holding a package, or -1. The
// longest matching prefix wins, so "store" does not claim "store/pgtest"
// unless nothing longer does.
func layerOf(pkg string) int {
	best, bestLen := -1, -1
	for i, l := range layers {
		for _, h := range l.holds {
			match := pkg == strings.TrimSuffix(h, "/") || (strings.HasSuffix(h, "/") && strings.HasPrefix(pkg, h)) ||
				(h != "" && !strings.HasSuffix(h, "/") && strings.HasPrefix(pkg, h+"/"))
			if match && len(h) > bestLen {
				best, bestLen = i, len(h)
			}
		}
	}
	return best
}

// layerViolations judges an import graph (module-relative package → its
// module-relative imports) against the table; TestLayerOrder runs it on
// the real graph, TestLayerOrderCatchesForbiddenImport on a doctored one.
func layerViolations(graph map[string][]string) []string {
	var out []string
	for pkg, imports := range graph {
		from := layerOf(pkg)
		if from < 0 {
			out = append(out, fmt.Sprintf("package %q is in no layer: add it to the table in layers_test.go", pkg))
			continue
		}
		for _, imp := range imports {
			to := layerOf(imp)
			if to < 0 {
				continue // reported as its own package
			}
			if to > from && layers[from].name != "testkit" {
				out = append(out, fmt.Sprintf("%s (layer %s) imports %s (layer %s): %s sits above %s because %s",
					pkg, layers[from].name, imp, layers[to].name, layers[to].name, layers[from].name, layers[to].why))
			}
			if layers[to].name == "testkit" && layers[from].name != "testkit" {
				out = append(out, fmt.Sprintf("%s imports %s: testkit is for tests only", pkg, imp))
			}
			for _, f := range forbiddenImports {
				if (pkg == f.from || strings.HasPrefix(pkg, f.from+"/")) && (imp == f.to || strings.HasPrefix(imp, f.to+"/")) {
					out = append(out, fmt.Sprintf("%s imports %s: %s", pkg, imp, f.why))
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// moduleGraph is the real import graph of the module's non-test code.
func moduleGraph(t *testing.T) map[string][]string {
	graph := map[string][]string{}
	for name, p := range goList(t) {
		var own []string
		for _, imp := range p.Imports {
			if imp == module || strings.HasPrefix(imp, module+"/") {
				own = append(own, strings.TrimPrefix(strings.TrimPrefix(imp, module), "/"))
			}
		}
		graph[name] = own
	}
	return graph
}

func TestLayerOrder(t *testing.T) {
	for _, v := range layerViolations(moduleGraph(t)) {
		t.Error(v)
	}
}

// TestLayerOrderCatchesForbiddenImport is the test of the test: the real
// graph plus one upward import (a kit package reaching the runner) and one
// sideways import into the testkit must each be reported, naming the rule.
func TestLayerOrderCatchesForbiddenImport(t *testing.T) {
	graph := moduleGraph(t)
	graph["internal/kit/strictjson"] = append(slices.Clone(graph["internal/kit/strictjson"]), runnerPkg)
	graph["server"] = append(slices.Clone(graph["server"]), "internal/testkit/plainmcp")
	got := strings.Join(layerViolations(graph), "\n")
	for _, want := range []string{
		"internal/kit/strictjson (layer kit) imports " + runnerPkg + " (layer execution)",
		"server imports internal/testkit/plainmcp: testkit is for tests only",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("layer check missed %q; it reported:\n%s", want, got)
		}
	}
	for _, f := range forbiddenImports {
		g := moduleGraph(t)
		g[f.from] = append(g[f.from], f.to)
		if v := strings.Join(layerViolations(g), "\n"); !strings.Contains(v, f.why) {
			t.Errorf("forbidden import %s → %s not reported", f.from, f.to)
		}
	}
}

// TestEveryLayerHoldsAPackage keeps the table honest: a layer whose
// packages all moved away is a stale rule.
func TestEveryLayerHoldsAPackage(t *testing.T) {
	graph := moduleGraph(t)
	for i, l := range layers {
		found := false
		for pkg := range graph {
			if layerOf(pkg) == i {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("layer %s holds no package", l.name)
		}
	}
}
