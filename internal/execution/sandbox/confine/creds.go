//go:build linux

package confine

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// dropPrivileges turns the trampoline (root in the host user namespace) into
// an unprivileged user with no capabilities at all:
//
//  1. every capability is dropped from the bounding set, so nothing exec'd
//     later can regain one (file capabilities are also neutralised by
//     no_new_privs);
//  2. supplementary groups are cleared (root's groups could grant DAC access,
//     e.g. group "shadow" on /etc/shadow — TestHostileShadow);
//  3. real, effective and saved gid then uid are set, which clears the
//     permitted and effective capability sets;
//  4. the result is checked, not assumed: uid/gid, groups and all capability
//     sets must read back as expected, or the run is refused.
//
// syscall.Setresuid and friends apply to every thread of the trampoline
// (AllThreadsSyscall), which is why the trampoline must be built without cgo.
//
// last is capLastCap(), read by the caller before the new root hides /proc.
func dropPrivileges(uid, gid, last int) error {
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			return fmt.Errorf("PR_CAPBSET_DROP(%d): %w", c, err)
		}
	}
	// Ambient capabilities would survive execve; clear them explicitly.
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("PR_CAP_AMBIENT_CLEAR_ALL: %w", err)
	}
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setresgid(gid, gid, gid); err != nil {
		return fmt.Errorf("setresgid(%d): %w", gid, err)
	}
	if err := syscall.Setresuid(uid, uid, uid); err != nil {
		return fmt.Errorf("setresuid(%d): %w", uid, err)
	}
	// Clear the inheritable set too (permitted/effective are already empty).
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return verifyUnprivileged(uid, gid)
}

func verifyUnprivileged(uid, gid int) error {
	ru, eu, su := unix.Getresuid()
	rg, eg, sg := unix.Getresgid()
	if ru != uid || eu != uid || su != uid || rg != gid || eg != gid || sg != gid {
		return fmt.Errorf("ids are %d/%d/%d:%d/%d/%d after the drop", ru, eu, su, rg, eg, sg)
	}
	if groups, err := unix.Getgroups(); err != nil || len(groups) != 0 {
		return fmt.Errorf("supplementary groups remain: %v %v", groups, err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	for _, d := range data {
		if d.Effective|d.Permitted|d.Inheritable != 0 {
			return errors.New("capabilities remain after the drop")
		}
	}
	return nil
}

// capLastCap is the highest capability number this kernel knows.
func capLastCap() (int, error) {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 0, fmt.Errorf("reading cap_last_cap: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 || n > 63 {
		return 0, fmt.Errorf("bad cap_last_cap %q", b)
	}
	return n, nil
}

// HasCaps reports whether the calling process holds every capability in
// caps in its effective set (the parent needs SYS_ADMIN for namespaces and
// SETUID/SETGID for the drop).
func HasCaps(caps ...int) bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	for _, c := range caps {
		if data[c/32].Effective&(1<<(uint(c)%32)) == 0 {
			return false
		}
	}
	return true
}
