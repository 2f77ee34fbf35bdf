//go:build !linux

package sandbox

import (
	"context"
	"fmt"
	"os"
	"runtime"
)

// TrampolineArg is the hidden subcommand under which the server re-executes
// itself as a sandbox trampoline (Linux only).
const TrampolineArg = "__airlock-sandbox-trampoline"

// MaybeRunTrampoline returns immediately unless os.Args[1] is
// TrampolineArg; on this platform the trampoline cannot run, so it exits.
func MaybeRunTrampoline() {
	if len(os.Args) >= 2 && os.Args[1] == TrampolineArg {
		fmt.Fprintln(os.Stderr, "sandbox trampoline: unsupported on", runtime.GOOS)
		os.Exit(125)
	}
}

// Sandbox is unavailable on this platform; New always fails.
type Sandbox struct{}

// Probe reports every mechanism missing: they are Linux kernel features.
func Probe() Report {
	var rep Report
	for _, n := range []string{MechNamespaces, MechRootFS, MechLandlock, MechSeccomp, MechUIDDrop, MechCgroupMemory, MechCgroupPids} {
		rep.Mechanisms = append(rep.Mechanisms, Mechanism{Name: n, Required: true, Detail: "requires Linux"})
	}
	return rep
}

// New fails closed: there is no sandbox outside Linux.
func New(*Options) (*Sandbox, error) {
	return nil, &UnavailableError{Reason: "pipelines need Linux (namespaces, Landlock, seccomp, cgroups)", Report: Probe()}
}

// Report returns Probe's report.
func (*Sandbox) Report() Report { return Probe() }

// Run always fails on this platform.
func (*Sandbox) Run(context.Context, Spec) (*Result, error) {
	return nil, fmt.Errorf("%w: requires Linux", ErrUnavailable)
}
