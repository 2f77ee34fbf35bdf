package sandbox

import (
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/internal/execution/sandbox/confine"
)

// Mechanism names used in a Report.
const (
	MechNamespaces   = "namespaces"    // new net, PID, IPC, UTS, mount namespaces
	MechRootFS       = "root_fs"       // per-run root: manifest-only pools, tmpfs quota, stable paths
	MechLandlock     = "landlock"      // filesystem (and TCP) confinement
	MechSeccomp      = "seccomp"       // syscall filter with arch check
	MechUIDDrop      = "uid_drop"      // unprivileged uid/gid, no capabilities
	MechCgroupMemory = "cgroup_memory" // per-run memory limit
	MechCgroupPids   = "cgroup_pids"   // per-run task limit
	MechSelfTest     = "self_test"     // a dry run of the trampoline (New only)
)

// Mechanism is one isolation mechanism as found on this machine.
type Mechanism struct {
	Name     string
	Active   bool
	Required bool
	Detail   string // version, hierarchy, or why it is unavailable
}

// Report says which mechanisms are available. `airlock doctor` prints it.
type Report struct {
	Mechanisms []Mechanism
}

// Ready reports whether every required mechanism is active; it is false in
// particular when network isolation (namespaces) or filesystem confinement
// (Landlock) is unavailable. New refuses to build a Sandbox unless Ready.
func (r Report) Ready() bool { return len(r.Missing()) == 0 }

// Missing lists the required mechanisms that are not active, with details.
func (r Report) Missing() []string {
	var out []string
	for _, m := range r.Mechanisms {
		if m.Required && !m.Active {
			out = append(out, m.Name+" ("+m.Detail+")")
		}
	}
	return out
}

// Get returns the named mechanism.
func (r Report) Get(name string) (Mechanism, bool) {
	for _, m := range r.Mechanisms {
		if m.Name == name {
			return m, true
		}
	}
	return Mechanism{}, false
}

// String renders the report one mechanism per line, for `airlock doctor`.
func (r Report) String() string {
	var b strings.Builder
	for _, m := range r.Mechanisms {
		state := "active"
		if !m.Active {
			state = "MISSING"
			if !m.Required {
				state = "absent"
			}
		}
		fmt.Fprintf(&b, "%-14s %-8s %s\n", m.Name, state, m.Detail)
	}
	if r.Ready() {
		b.WriteString("sandbox: ready\n")
	} else {
		b.WriteString("sandbox: NOT READY, pipelines will be refused\n")
	}
	return b.String()
}

// BuiltWithCgo reports whether this binary was linked with cgo, which the
// trampoline refuses (the uid change goes through libc's cross-thread
// machinery and Landlock inside a PID namespace hangs): such a binary's
// pipelines never run, and `airlock doctor` says how to rebuild it.
func BuiltWithCgo() bool { return confine.BuiltWithCgo() }
