//go:build linux

package sandbox

import (
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// buildResult turns the wait status, the reason the parent killed the run
// (if it did) and the cgroup counters into a Result.
func buildResult(ps *os.ProcessState, parentReason string, st cgStats, lim Limits) *Result {
	res := &Result{ExitCode: -1, MaxRSSBytes: st.PeakMemBytes}
	var ws syscall.WaitStatus
	if ps != nil {
		res.ExitCode = ps.ExitCode()
		res.UserCPU, res.SysCPU = ps.UserTime(), ps.SystemTime()
		ws, _ = ps.Sys().(syscall.WaitStatus)
	}
	var sig syscall.Signal
	if ws.Signaled() {
		sig = ws.Signal()
		res.Signal = unix.SignalName(sig)
	}
	if st.PidsMaxHits > 0 {
		res.LimitsHit = append(res.LimitsHit, "procs")
	}
	if st.OOMKills > 0 {
		res.LimitsHit = append(res.LimitsHit, KillMemory)
	}
	// A reason from the parent counts only if its SIGKILL is what ended the
	// process; a timer that fired just after a normal exit changes nothing.
	switch {
	case parentReason != "" && sig == syscall.SIGKILL:
		res.KillReason = parentReason
	case st.OOMKills > 0:
		res.KillReason = KillMemory
	case sig == syscall.SIGXCPU ||
		(sig == syscall.SIGKILL && res.UserCPU+res.SysCPU >= time.Duration(cpuSeconds(lim.CPU))*time.Second):
		res.KillReason = KillCPUTime
	case sig == syscall.SIGSYS:
		res.KillReason = KillSeccomp
	case sig == syscall.SIGXFSZ:
		res.KillReason = KillFileSize
	}
	res.Killed = res.KillReason != ""
	if res.Killed {
		res.LimitsHit = appendOnce(res.LimitsHit, res.KillReason)
	}
	return res
}
