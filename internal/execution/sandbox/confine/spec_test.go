package confine

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"strings"
	"testing"
)

func validWireSpec() Spec {
	return Spec{
		Version: WireVersion, Argv: []string{"/bin/true"}, Env: []string{"PATH=/usr/bin"},
		Dir: "/", UID: 65534, GID: 65534, Stage: "/tmp/.airlock-sandbox-root",
		Rules: []Rule{{Path: "/usr", Access: AccessReadExec}},
		Pools: []Pool{{ID: "sales", Dir: "/srv/pools/sales", Files: []string{"data.csv", "q1/regions.csv"}}},
		Binds: []string{"/etc/airlock/scripts"},
	}
}

func TestDecodeWireSpec(t *testing.T) {
	good, _ := json.Marshal(validWireSpec())
	if _, err := DecodeSpec(bytes.NewReader(good)); err != nil {
		t.Fatalf("valid spec refused: %v", err)
	}
	mutate := func(f func(*Spec)) string {
		ws := validWireSpec()
		f(&ws)
		b, _ := json.Marshal(ws)
		return string(b)
	}
	bad := map[string]string{
		"unknown field":        strings.Replace(string(good), `"v":1`, `"v":1,"extra":true`, 1),
		"trailing data":        string(good) + `{}`,
		"not json":             "argv",
		"empty":                "",
		"oversized":            strings.Repeat(" ", maxSpecBytes+1),
		"version":              mutate(func(w *Spec) { w.Version = 2 }),
		"no argv":              mutate(func(w *Spec) { w.Argv = nil }),
		"empty argv0":          mutate(func(w *Spec) { w.Argv = []string{""} }),
		"NUL in argv":          mutate(func(w *Spec) { w.Argv = []string{"/bin/sh\x00x"} }),
		"env no equals":        mutate(func(w *Spec) { w.Env = []string{"PATH"} }),
		"env empty key":        mutate(func(w *Spec) { w.Env = []string{"=x"} }),
		"relative dir":         mutate(func(w *Spec) { w.Dir = "tmp" }),
		"unclean dir":          mutate(func(w *Spec) { w.Dir = "/tmp/../etc" }),
		"root uid":             mutate(func(w *Spec) { w.UID = 0 }),
		"root gid":             mutate(func(w *Spec) { w.GID = 0 }),
		"negative uid":         mutate(func(w *Spec) { w.UID = -1 }),
		"relative rule":        mutate(func(w *Spec) { w.Rules = []Rule{{Path: "usr", Access: AccessRead}} }),
		"unknown access":       mutate(func(w *Spec) { w.Rules = []Rule{{Path: "/usr", Access: "rwx"}} }),
		"too many rules":       mutate(func(w *Spec) { w.Rules = make([]Rule, maxRules+1) }),
		"long hostname":        mutate(func(w *Spec) { w.Hostname = strings.Repeat("h", 65) }),
		"case-folded key":      strings.Replace(string(good), `"argv"`, `"ARGV"`, 1),
		"case-folded pool key": strings.Replace(string(good), `"files"`, `"Files"`, 1),
		"no stage":             mutate(func(w *Spec) { w.Stage = "" }),
		"relative stage":       mutate(func(w *Spec) { w.Stage = "stage" }),
		"pool id dotdot":       mutate(func(w *Spec) { w.Pools[0].ID = ".." }),
		"pool id slash":        mutate(func(w *Spec) { w.Pools[0].ID = "a/b" }),
		"pool id empty":        mutate(func(w *Spec) { w.Pools[0].ID = "" }),
		"pool id twice":        mutate(func(w *Spec) { w.Pools = append(w.Pools, w.Pools[0]) }),
		"pool dir rel":         mutate(func(w *Spec) { w.Pools[0].Dir = "pools" }),
		"pool file up":         mutate(func(w *Spec) { w.Pools[0].Files = []string{"../../etc/shadow"} }),
		"pool file abs":        mutate(func(w *Spec) { w.Pools[0].Files = []string{"/etc/shadow"} }),
		"pool file dot":        mutate(func(w *Spec) { w.Pools[0].Files = []string{"."} }),
		"pool file empty":      mutate(func(w *Spec) { w.Pools[0].Files = []string{""} }),
		"pool file unclean":    mutate(func(w *Spec) { w.Pools[0].Files = []string{"a//b"} }),
		"pool file bslash":     mutate(func(w *Spec) { w.Pools[0].Files = []string{"a\\b"} }),
		"too many files":       mutate(func(w *Spec) { w.Pools[0].Files = make([]string, maxPoolFiles+1) }),
		"bind root":            mutate(func(w *Spec) { w.Binds = []string{"/"} }),
		"bind out":             mutate(func(w *Spec) { w.Binds = []string{"/out/x"} }),
		"bind pools":           mutate(func(w *Spec) { w.Binds = []string{"/pools"} }),
		"bind dev":             mutate(func(w *Spec) { w.Binds = []string{"/dev/sda"} }),
		"bind proc":            mutate(func(w *Spec) { w.Binds = []string{"/proc/1/root"} }),
		"bind relative":        mutate(func(w *Spec) { w.Binds = []string{"scripts"} }),
	}
	for name, in := range bad {
		t.Run(name, func(t *testing.T) {
			if _, err := DecodeSpec(strings.NewReader(in)); err == nil {
				t.Fatalf("accepted %.200q", in)
			}
		})
	}
}

// FuzzDecodeWireSpec: whatever arrives on the spec pipe, the decoder either
// refuses it or returns a spec that satisfies every invariant the
// trampoline relies on (absolute clean paths, non-root ids, known access).
func FuzzDecodeWireSpec(f *testing.F) {
	good, _ := json.Marshal(validWireSpec())
	f.Add(good)
	f.Add([]byte(`{"v":1,"dryRun":true,"dir":"/","uid":1,"gid":1,"rules":[]}`))
	f.Add([]byte(`{"v":1,"argv":["sh"],"dir":"/a/../b","uid":1,"gid":1}`))
	f.Add([]byte(`{"v":1,"argv":["\u0000"],"dir":"/","uid":0,"gid":1}`))
	f.Add([]byte(`{"v":1,"argv":["sh"],"dir":"/","uid":1,"gid":1,"stage":"/s","pools":[{"id":"p","dir":"/d","files":["a/../b"]}]}`))
	f.Add([]byte(`{"v":1,"argv":["sh"],"dir":"/","uid":1,"gid":1,"stage":"/s","binds":["/out"],"temp":true}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ws, err := DecodeSpec(bytes.NewReader(data))
		if err != nil {
			return
		}
		if ws.UID <= 0 || ws.GID <= 0 {
			t.Fatalf("root ids accepted: %d/%d", ws.UID, ws.GID)
		}
		if !ws.DryRun && (len(ws.Argv) == 0 || ws.Argv[0] == "") {
			t.Fatal("empty argv accepted")
		}
		if checkAbsPath(ws.Dir) != nil {
			t.Fatalf("bad dir accepted: %q", ws.Dir)
		}
		for _, r := range ws.Rules {
			if checkAbsPath(r.Path) != nil || !knownAccess[r.Access] {
				t.Fatalf("bad rule accepted: %+v", r)
			}
		}
		for _, p := range ws.Pools {
			if !validPoolID(p.ID) || strings.Contains(p.ID, "/") || checkAbsPath(p.Dir) != nil {
				t.Fatalf("bad pool accepted: %+v", p)
			}
			for _, f := range p.Files {
				if !fs.ValidPath(f) || f == "." {
					t.Fatalf("bad pool file accepted: %q", f)
				}
			}
		}
		for _, b := range ws.Binds {
			if checkBindPath(b) != nil || b == "/out" || strings.HasPrefix(b, "/pools") {
				t.Fatalf("bad bind accepted: %q", b)
			}
		}
		for _, s := range append(append([]string(nil), ws.Argv...), ws.Env...) {
			if strings.IndexByte(s, 0) >= 0 {
				t.Fatal("NUL accepted")
			}
		}
	})
}

var knownAccess = map[Access]bool{AccessRead: true, AccessReadExec: true, AccessWrite: true, AccessDevRW: true}
