package confine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"path"
	"reflect"
	"strings"
)

// Spec is what the parent sends the trampoline over the spec pipe (fd 3).
// It is decoded by [DecodeSpec], the only parser in the trampoline; the
// parent is trusted, but the decoder is still strict and bounded so that a
// stray invocation of the hidden subcommand cannot make it misbehave
// (FuzzDecodeWireSpec).
type Spec struct {
	Version  int      `json:"v"`
	Argv     []string `json:"argv"`
	Env      []string `json:"env"`
	Dir      string   `json:"dir"`
	UID      int      `json:"uid"`
	GID      int      `json:"gid"`
	Hostname string   `json:"hostname,omitempty"`
	Rules    []Rule   `json:"rules"`
	Rlimits  Rlimits  `json:"rlimits"`
	// Stage is the empty, root-owned host directory on which the
	// trampoline mounts the run's new root before pivot_root (mounts.go).
	Stage string `json:"stage"`
	// Pools are bound file by file under /pools/<id>; Binds are extra host
	// paths bound read-only at the same path; Temp makes /tmp writable.
	Pools []Pool   `json:"pools,omitempty"`
	Binds []string `json:"binds,omitempty"`
	Temp  bool     `json:"temp,omitempty"`
	// ConnectPorts are the TCP ports the pipeline may connect to (a
	// Landlock net rule each): the port of Spec.Loopback, whose listener
	// the parent opened in the run's network namespace. Empty: no
	// connect is allowed at all.
	ConnectPorts []int `json:"connectPorts,omitempty"`
	// DryRun applies every mechanism and then exits 0 instead of exec'ing:
	// [New] uses it to prove the whole chain works before accepting runs.
	DryRun bool `json:"dryRun,omitempty"`
}

// Pool is one pool: the host directory and the manifest names to bind.
type Pool struct {
	ID    string   `json:"id"`
	Dir   string   `json:"dir"`
	Files []string `json:"files"`
}

// Rule is one Landlock grant: a path and what may be done beneath it.
type Rule struct {
	Path   string `json:"path"`
	Access Access `json:"access"`
	// Optional rules are skipped when the path does not exist (system
	// directories such as /lib32 that some distributions lack).
	Optional bool `json:"optional,omitempty"`
}

// access names a Landlock grant class; see landlock.go for the bits.
type Access string

const (
	AccessRead     Access = "r"   // read files, list directories
	AccessReadExec Access = "rx"  // read and execute
	AccessWrite    Access = "rw"  // read, create, write, remove; no execute, no devices
	AccessDevRW    Access = "dev" // read/write/truncate an existing file (/dev/null)
)

// rlimits are the numeric limits the trampoline sets; zero means "leave".
type Rlimits struct {
	CPUSeconds uint64 `json:"cpu"`
	NoFile     uint64 `json:"nofile"`
	FSize      uint64 `json:"fsize"`
	NProc      uint64 `json:"nproc"`
}

// Status is what the trampoline writes to the status pipe (fd 4): one
// message when every mechanism is in place (right before execve), or one
// describing the stage that failed. EOF without an error message means the
// execve succeeded, because the pipe is close-on-exec.
type Status struct {
	OK         bool     `json:"ok,omitempty"`
	Mechanisms []string `json:"mechanisms,omitempty"`
	Stage      string   `json:"stage,omitempty"`
	Error      string   `json:"error,omitempty"`
	Errno      int      `json:"errno,omitempty"`
}

const (
	WireVersion  = 1
	maxSpecBytes = 16 << 20
	maxArgs      = 4096
	maxEnv       = 1024
	maxRules     = 256
	maxPools     = 64
	maxBinds     = 64
	maxPorts     = 4
	// maxPoolFiles bounds the bind mounts of one run (one per pool file):
	// each costs a few system calls at start-up and a mount-table entry.
	// A larger pool refuses the run rather than starting slowly.
	maxPoolFiles = 20000
	maxStrLen    = 64 << 10
	maxPathLen   = 4096
)

// DecodeSpec reads and validates a spec. Unknown fields, trailing data,
// oversized input and every structural problem are errors.
func DecodeSpec(r io.Reader) (*Spec, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxSpecBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading spec: %w", err)
	}
	if len(data) > maxSpecBytes {
		return nil, fmt.Errorf("spec larger than %d bytes", maxSpecBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var ws Spec
	if err := dec.Decode(&ws); err != nil {
		return nil, fmt.Errorf("decoding spec: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after spec")
	}
	if err := exactKeys(data); err != nil {
		return nil, err
	}
	if err := ws.Validate(); err != nil {
		return nil, err
	}
	return &ws, nil
}

// exactKeys closes encoding/json's case-insensitive field matching: every
// object key must be spelled exactly as a field's tag ("ARGV" is refused).
// DisallowUnknownFields has already refused keys that match nothing.
func exactKeys(data []byte) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return fmt.Errorf("decoding spec: %w", err)
	}
	if err := keysIn(top, reflect.TypeFor[Spec]()); err != nil {
		return err
	}
	if raw, ok := top["rlimits"]; ok && string(raw) != "null" {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return fmt.Errorf("decoding rlimits: %w", err)
		}
		if err := keysIn(m, reflect.TypeFor[Rlimits]()); err != nil {
			return err
		}
	}
	for key, t := range map[string]reflect.Type{"rules": reflect.TypeFor[Rule](), "pools": reflect.TypeFor[Pool]()} {
		raw, ok := top[key]
		if !ok {
			continue
		}
		var list []map[string]json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return fmt.Errorf("decoding %s: %w", key, err)
		}
		for _, m := range list {
			if err := keysIn(m, t); err != nil {
				return err
			}
		}
	}
	return nil
}

func keysIn(m map[string]json.RawMessage, t reflect.Type) error {
	for k := range m {
		found := false
		for i := 0; i < t.NumField() && !found; i++ {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			found = name == k
		}
		if !found {
			return fmt.Errorf("spec key %q is not spelled as a known field", k)
		}
	}
	return nil
}

func (ws *Spec) Validate() error {
	if ws.Version != WireVersion {
		return fmt.Errorf("spec version %d, want %d", ws.Version, WireVersion)
	}
	if !ws.DryRun && len(ws.Argv) == 0 {
		return fmt.Errorf("empty argv")
	}
	if len(ws.Argv) > maxArgs || len(ws.Env) > maxEnv || len(ws.Rules) > maxRules {
		return fmt.Errorf("too many argv, env or rule entries")
	}
	for i, a := range ws.Argv {
		if err := checkString(a); err != nil {
			return fmt.Errorf("argv[%d]: %w", i, err)
		}
	}
	if len(ws.Argv) > 0 && ws.Argv[0] == "" {
		return fmt.Errorf("argv[0] is empty")
	}
	for i, e := range ws.Env {
		if err := checkString(e); err != nil {
			return fmt.Errorf("env[%d]: %w", i, err)
		}
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return fmt.Errorf("env[%d]: not KEY=value", i)
		}
	}
	if err := checkAbsPath(ws.Dir); err != nil {
		return fmt.Errorf("dir: %w", err)
	}
	if ws.UID <= 0 || ws.GID <= 0 || ws.UID > 1<<31-2 || ws.GID > 1<<31-2 {
		// Zero would mean "stay root": the uid drop is not optional.
		return fmt.Errorf("uid/gid %d/%d out of range (must be non-root)", ws.UID, ws.GID)
	}
	if len(ws.Hostname) > 64 || strings.ContainsRune(ws.Hostname, 0) {
		return fmt.Errorf("bad hostname")
	}
	if err := checkAbsPath(ws.Stage); err != nil {
		return fmt.Errorf("stage: %w", err)
	}
	if err := ws.validateMounts(); err != nil {
		return err
	}
	if len(ws.ConnectPorts) > maxPorts {
		return fmt.Errorf("more than %d connect ports", maxPorts)
	}
	for i, p := range ws.ConnectPorts {
		if p < 1 || p > 65535 {
			return fmt.Errorf("connectPorts[%d]: %d is not a TCP port", i, p)
		}
	}
	for i, r := range ws.Rules {
		if err := checkAbsPath(r.Path); err != nil {
			return fmt.Errorf("rule[%d]: %w", i, err)
		}
		switch r.Access {
		case AccessRead, AccessReadExec, AccessWrite, AccessDevRW:
		default:
			return fmt.Errorf("rule[%d]: unknown access %q", i, r.Access)
		}
	}
	return nil
}

// validateMounts checks what the trampoline will bind: pool ids that make
// one path element, manifest names that stay inside their pool
// (fs.ValidPath: no "..", no absolute path, no empty element), and extra
// paths that cannot shadow the sandbox's own directories.
func (ws *Spec) validateMounts() error {
	if len(ws.Pools) > maxPools || len(ws.Binds) > maxBinds {
		return fmt.Errorf("too many pools or binds")
	}
	seen := map[string]bool{}
	files := 0
	for i, p := range ws.Pools {
		if !validPoolID(p.ID) || seen[p.ID] {
			return fmt.Errorf("pool[%d]: id %q invalid or repeated", i, p.ID)
		}
		seen[p.ID] = true
		if err := checkAbsPath(p.Dir); err != nil {
			return fmt.Errorf("pool[%d]: %w", i, err)
		}
		if files += len(p.Files); files > maxPoolFiles {
			return fmt.Errorf("more than %d pool files", maxPoolFiles)
		}
		for j, f := range p.Files {
			if len(f) > maxPathLen || !fs.ValidPath(f) || f == "." || strings.ContainsAny(f, "\x00\\") {
				return fmt.Errorf("pool[%d].files[%d]: %q is not a canonical relative path", i, j, f)
			}
		}
	}
	for i, b := range ws.Binds {
		if err := checkBindPath(b); err != nil {
			return fmt.Errorf("bind[%d]: %w", i, err)
		}
	}
	return nil
}

// reservedDirs may not receive (or contain) an extra read-only bind: the
// sandbox builds them itself, and a bind there would shadow a pool, the
// outputs or a device.
var reservedDirs = []string{OutDir, PoolMountDir, "/proc", "/sys", "/dev"}

func checkBindPath(p string) error {
	if err := checkAbsPath(p); err != nil {
		return err
	}
	if p == "/" || p == "/etc" || p == TempDir {
		return fmt.Errorf("%q cannot be bound whole", p)
	}
	for _, r := range reservedDirs {
		if p == r || strings.HasPrefix(p, r+"/") {
			return fmt.Errorf("%q is inside %s, which the sandbox builds itself", p, r)
		}
	}
	return nil
}

// validPoolID: 1-64 of [a-z0-9_.-], starting with a letter or digit, so the
// id is one path element and never "." or "..".
func validPoolID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || (i > 0 && (c == '_' || c == '.' || c == '-'))
		if !ok {
			return false
		}
	}
	return true
}

func checkString(s string) error {
	if len(s) > maxStrLen {
		return fmt.Errorf("longer than %d bytes", maxStrLen)
	}
	if strings.IndexByte(s, 0) >= 0 {
		return fmt.Errorf("contains NUL")
	}
	return nil
}

// checkAbsPath accepts only absolute, already-clean paths without NUL: the
// trampoline never has to guess what a path means.
func checkAbsPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("empty path")
	case len(p) > maxPathLen:
		return fmt.Errorf("path longer than %d bytes", maxPathLen)
	case strings.IndexByte(p, 0) >= 0:
		return fmt.Errorf("path contains NUL")
	case !path.IsAbs(p):
		return fmt.Errorf("path %q is not absolute", p)
	case path.Clean(p) != p:
		return fmt.Errorf("path %q is not clean", p)
	}
	return nil
}
