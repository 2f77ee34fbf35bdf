package policy

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/kit/yamlfile"
)

// FuzzLoad feeds hostile YAML to the loader: it must never panic, every
// error must carry the file name, and a policy that loads must decide
// without panicking.
func FuzzLoad(f *testing.F) {
	for _, name := range []string{"../../../testdata/policy/example.yaml", "../../../testdata/policy/example_cases.yaml"} {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(parentYAML + "  child:\n    extends: base\n    allow: [comm.*]\n"))
	f.Add([]byte("policies:\n  a: {extends: b}\n  b: {extends: a}\n"))
	f.Add([]byte("policies:\n  a:\n    rules: [{id: r, capability: '*', effect: deny, when: 'args.x[0].y ?? url.host'}]\n"))
	f.Add([]byte("policies: {a: {limits: {rate: {'*': {per_minute: 1e308, burst: -1}}}}}\n"))
	f.Add([]byte("policies: &a\n  x: *a\n"))
	f.Add([]byte("policies:\n  a: {network: {allow_hosts: ['*.', '[::1]', '*'], allow_private: ['::/0']}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		const name = "fuzz.yaml"
		specs, err := DecodePolicies(name, data)
		if err == nil {
			var s *Set
			s, err = CompileSet(name, data, specs)
			if err == nil {
				for _, n := range s.Names() {
					p, _ := s.Get(n)
					for _, c := range []string{"pool.read", "comm.fetch", "pipeline.run:x", ""} {
						d := p.Decide(&Input{Capability: c, Args: map[string]any{"url": "https://a.example.org/", "limit": 1.0}})
						if !d.Effect.valid() || d.RuleID == "" || d.Reason == "" {
							t.Fatalf("bad decision %+v", d)
						}
					}
				}
				return
			}
		}
		checkErrorsNameFile(t, err, name)
	})
}

func checkErrorsNameFile(t *testing.T, err error, name string) {
	t.Helper()
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			checkErrorsNameFile(t, e, name)
		}
		return
	}
	var ye *yamlfile.Error
	if !errors.As(err, &ye) || ye.File != name || !strings.HasPrefix(err.Error(), name) {
		t.Fatalf("error without the file name: %T %v", err, err)
	}
}

// fuzzPolicy has rules that reach into arguments in every way an author
// might, so that hostile arguments meet real expressions.
var fuzzPolicy = func() *Policy {
	p, err := Compile(Spec{
		Allow: []string{"*"},
		Rules: []RuleSpec{
			{ID: "deep", Capability: "*", When: `args.a?.b?.c?.d == "x"`, Effect: Deny},
			{ID: "index", Capability: "*", When: `args.list[0] == 1`, Effect: RequireApproval},
			{ID: "len", Capability: "*", When: `len(args.s) > 100000`, Effect: Deny},
			{ID: "arith", Capability: "*", When: `args.n * 2 > 3`, Effect: RequireApproval},
			{ID: "loop", Capability: "*", When: `any(args.list, # == "z")`, Effect: Deny},
			{ID: "regex", Capability: "*", When: `args.s matches "^(a+)+$"`, Effect: Deny},
			{ID: "json", Capability: "*", When: `len(toJSON(args)) > 1000000`, Effect: Deny},
			{ID: "url", Capability: "*", When: `url.host endsWith ".test" || url.port == 1`, Effect: Allow},
			{ID: "eq", Capability: "*", When: `args == args`, Effect: Allow},
			{ID: "str", Capability: "*", When: `string(args.n) != "q" && pool + path + query != "zz"`, Effect: Allow},
		},
		Network: NetworkSpec{AllowHosts: []string{"*"}},
	})
	if err != nil {
		panic(err)
	}
	return p
}()

// weird returns a Go value JSON could never produce, chosen by k.
func weird(k byte) any {
	switch k % 12 {
	case 0:
		return math.NaN()
	case 1:
		return math.Inf(-1)
	case 2:
		return int8(-3)
	case 3:
		return make(chan int)
	case 4:
		return func() {}
	case 5:
		return (*int)(nil)
	case 6:
		return struct{ A int }{1}
	case 7:
		return []byte("bytes")
	case 8:
		return map[int]string{1: "a"}
	case 9:
		return uint64(math.MaxUint64)
	case 10:
		return time.Duration(-1)
	}
	return nil
}

// FuzzDecideArgs feeds hostile arguments to Decide: arbitrary JSON, deep
// nesting, huge strings and Go types JSON never yields. Decide must never
// panic, and must always return a valid decision with a rule and reason.
func FuzzDecideArgs(f *testing.F) {
	f.Add(`{"a":{"b":{"c":{"d":"x"}}}}`, "comm.fetch", uint16(0), uint32(0), byte(0))
	f.Add(`{"list":[1,2,"z"],"n":"two"}`, "pool.read", uint16(3), uint32(10), byte(3))
	f.Add(`{"s":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab","url":"https://[::1]:1/"}`, "comm.fetch", uint16(0), uint32(0), byte(5))
	f.Add(`{"url":"%zz","pool":7,"path":null}`, "comm.search", uint16(5000), uint32(1<<20), byte(4))
	f.Add(`[]`, "", uint16(1), uint32(1), byte(11))
	f.Fuzz(func(t *testing.T, raw, capability string, depth uint16, size uint32, kind byte) {
		var args map[string]any
		_ = json.Unmarshal([]byte(raw), &args)
		if args == nil {
			args = map[string]any{}
		}
		// Deep nesting under a key the rules read, bounded as encoding/json
		// bounds it. A tree, not a DAG: decoded JSON never shares a subtree,
		// and a shared one would make any full traversal exponential.
		var deep any = "leaf"
		for range int(depth) % 10001 {
			deep = map[string]any{"b": deep, "c": "x"}
			if depth%2 == 0 {
				deep = []any{deep}
			}
		}
		args["a"] = deep
		if size > 0 {
			args["s"] = strings.Repeat("a", int(size%(4<<20)))
		}
		args["weird"] = weird(kind)
		if kind%3 == 0 {
			args["n"] = weird(kind / 3)
		}
		if kind%5 == 0 {
			args["list"] = []any{weird(kind), nil, weird(kind + 1)}
		}
		for _, p := range []*Policy{fuzzPolicy, examplePolicy(t)} {
			d := p.Decide(&Input{Capability: capability, Args: args, Phase: "execution"})
			if !d.Effect.valid() || d.RuleID == "" || d.Reason == "" {
				t.Fatalf("bad decision %+v", d)
			}
			if strings.Contains(d.Reason, "failed to evaluate") && d.Effect != Deny {
				t.Fatalf("evaluation error did not deny: %+v", d)
			}
			_ = Explain(p, &Input{Capability: capability, Args: args})
		}
	})
}

func examplePolicy(t testing.TB) *Policy {
	s, err := LoadFile("../../../testdata/policy/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, _ := s.Get("researcher")
	return p
}
