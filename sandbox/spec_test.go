package sandbox

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func validWireSpec() wireSpec {
	return wireSpec{
		Version: wireVersion, Argv: []string{"/bin/true"}, Env: []string{"PATH=/usr/bin"},
		Dir: "/", UID: 65534, GID: 65534,
		Rules: []fsRule{{Path: "/usr", Access: accessReadExec}},
	}
}

func TestDecodeWireSpec(t *testing.T) {
	good, _ := json.Marshal(validWireSpec())
	if _, err := decodeWireSpec(bytes.NewReader(good)); err != nil {
		t.Fatalf("valid spec refused: %v", err)
	}
	mutate := func(f func(*wireSpec)) string {
		ws := validWireSpec()
		f(&ws)
		b, _ := json.Marshal(ws)
		return string(b)
	}
	bad := map[string]string{
		"unknown field":   strings.Replace(string(good), `"v":1`, `"v":1,"extra":true`, 1),
		"trailing data":   string(good) + `{}`,
		"not json":        "argv",
		"empty":           "",
		"oversized":       strings.Repeat(" ", maxSpecBytes+1),
		"version":         mutate(func(w *wireSpec) { w.Version = 2 }),
		"no argv":         mutate(func(w *wireSpec) { w.Argv = nil }),
		"empty argv0":     mutate(func(w *wireSpec) { w.Argv = []string{""} }),
		"NUL in argv":     mutate(func(w *wireSpec) { w.Argv = []string{"/bin/sh\x00x"} }),
		"env no equals":   mutate(func(w *wireSpec) { w.Env = []string{"PATH"} }),
		"env empty key":   mutate(func(w *wireSpec) { w.Env = []string{"=x"} }),
		"relative dir":    mutate(func(w *wireSpec) { w.Dir = "tmp" }),
		"unclean dir":     mutate(func(w *wireSpec) { w.Dir = "/tmp/../etc" }),
		"root uid":        mutate(func(w *wireSpec) { w.UID = 0 }),
		"root gid":        mutate(func(w *wireSpec) { w.GID = 0 }),
		"negative uid":    mutate(func(w *wireSpec) { w.UID = -1 }),
		"relative rule":   mutate(func(w *wireSpec) { w.Rules = []fsRule{{Path: "usr", Access: accessRead}} }),
		"unknown access":  mutate(func(w *wireSpec) { w.Rules = []fsRule{{Path: "/usr", Access: "rwx"}} }),
		"too many rules":  mutate(func(w *wireSpec) { w.Rules = make([]fsRule, maxRules+1) }),
		"long hostname":   mutate(func(w *wireSpec) { w.Hostname = strings.Repeat("h", 65) }),
		"case-folded key": strings.Replace(string(good), `"argv"`, `"ARGV"`, 1),
	}
	for name, in := range bad {
		t.Run(name, func(t *testing.T) {
			if _, err := decodeWireSpec(strings.NewReader(in)); err == nil {
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
	f.Fuzz(func(t *testing.T, data []byte) {
		ws, err := decodeWireSpec(bytes.NewReader(data))
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
		for _, s := range append(append([]string(nil), ws.Argv...), ws.Env...) {
			if strings.IndexByte(s, 0) >= 0 {
				t.Fatal("NUL accepted")
			}
		}
	})
}

var knownAccess = map[access]bool{accessRead: true, accessReadExec: true, accessWrite: true, accessDevRW: true}
