//go:build linux

package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/airlock-dev/airlock/internal/execution/sandbox/confine"
	"golang.org/x/sys/unix"
)

// Probe checks, on this machine and for this process, which mechanisms a
// sandbox can use. The cgroup checks are real: a probe cgroup is created,
// given limits and removed. Probe does not start a process; New additionally
// dry-runs the trampoline, which applies every mechanism for real.
func Probe() Report {
	rep, _ := probe("")
	return rep
}

func probe(cgroupParent string) (Report, *cgroupSetup) {
	var rep Report
	add := func(name string, err error, detail string) {
		m := Mechanism{Name: name, Active: err == nil, Required: true, Detail: detail}
		if err != nil {
			m.Detail = err.Error()
		}
		rep.Mechanisms = append(rep.Mechanisms, m)
	}

	add(MechNamespaces, namespacesAvailable(), "net, pid, ipc, uts, mnt (empty network: no route anywhere)")
	add(MechRootFS, rootFSAvailable(), "private root per run: pools by manifest at /pools, tmpfs quota for /out and /tmp")

	abi, err := confine.LandlockABI()
	if err == nil && abi < 1 {
		err = fmt.Errorf("landlock ABI %d", abi)
	}
	add(MechLandlock, err, fmt.Sprintf("ABI %d", abi))

	add(MechSeccomp, confine.SeccompAvailable(), "deny-list filter with arch check ("+confine.ArchName()+")")

	var uerr error
	if !confine.HasCaps(unix.CAP_SETUID, unix.CAP_SETGID) {
		uerr = fmt.Errorf("dropping to an unprivileged uid needs CAP_SETUID and CAP_SETGID (run as root)")
	}
	add(MechUIDDrop, uerr, "setresuid/setresgid, no groups, capabilities and bounding set cleared")

	setup, err := discoverCgroups(cgroupParent)
	var memErr, pidsErr error
	var memDetail, pidsDetail string
	switch {
	case err != nil:
		memErr, pidsErr = err, err
	default:
		memDetail, memErr = checkController(setup.memory, "memory")
		pidsDetail, pidsErr = checkController(setup.pids, "pids")
		if memErr == nil && pidsErr == nil {
			// Prove we can create a run cgroup with limits, then remove it.
			rc, cerr := setup.create("airlock-probe-"+randomID(), 64<<20, minProcs)
			if cerr != nil {
				memErr, pidsErr = cerr, cerr
			} else if rerr := rc.remove(); rerr != nil {
				memErr = rerr
			}
		}
	}
	add(MechCgroupMemory, memErr, memDetail)
	add(MechCgroupPids, pidsErr, pidsDetail)
	return rep, setup
}

// rootFSAvailable creates (and drops) a tiny detached tmpfs: the new mount
// API the per-run root needs (Linux 5.12+ for mount_setattr, which the
// self-test then exercises).
func rootFSAvailable() error {
	f, err := newScratch(minDiskBytes, 16)
	if err != nil {
		return err
	}
	f.Close()
	if _, err := ensureStage(); err != nil {
		return err
	}
	return nil
}

func checkController(c *cgController, name string) (string, error) {
	if c == nil {
		return "", fmt.Errorf("no usable %s controller in cgroup v2 or v1", name)
	}
	v := "v1"
	if c.v2 {
		v = "v2"
	}
	return fmt.Sprintf("cgroup %s under %s", v, c.parent), nil
}

func randomID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
