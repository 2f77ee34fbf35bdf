//go:build linux

package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Each run gets its own cgroup for the two whole-run limits rlimits cannot
// express: memory actually charged (page cache and kernel memory included)
// and the number of tasks. The parent creates the cgroup and moves the
// trampoline into it before sending the spec, so the trampoline — and so the
// pipeline and everything it forks — is inside before any untrusted code
// runs. Membership is inherited on fork and cannot be left without write
// access to the cgroup filesystem, which Landlock and the uid drop remove.
//
// cgroup v2 is used per controller when the controller is available and
// delegated to the parent cgroup; otherwise the v1 hierarchy for that
// controller is used (on the reference machines only v1 memory and pids
// work). Run cgroups are created beneath the server's own cgroup in each
// hierarchy (or Options.CgroupParent), so the server's own limits still
// bound them, and removed after the run.
//
// Tests: TestHostileMemoryBomb (memory, KillReason "memory"),
// TestHostileForkBomb (pids, LimitsHit "procs").

// cgController locates one controller: the directory run cgroups are
// created in and whether it is a v2 hierarchy.
type cgController struct {
	name   string // "memory" or "pids"
	v2     bool
	parent string
}

// cgroupSetup is the result of discovery: where each controller lives.
type cgroupSetup struct {
	memory *cgController
	pids   *cgController
}

type mountEntry struct {
	root, point, fstype string
	superOpts           []string
}

// discoverCgroups finds the memory and pids controllers for this process.
// parentOverride, when set, is a path relative to each hierarchy's root.
func discoverCgroups(parentOverride string) (*cgroupSetup, error) {
	mounts, err := readCgroupMounts("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	own, err := readOwnCgroups("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	setup := &cgroupSetup{}
	for _, name := range []string{"memory", "pids"} {
		c := findController(name, mounts, own, parentOverride)
		switch name {
		case "memory":
			setup.memory = c
		case "pids":
			setup.pids = c
		}
	}
	return setup, nil
}

func findController(name string, mounts []mountEntry, own map[string]string, override string) *cgController {
	// Prefer v2 when the controller is enabled for our subtree.
	for _, m := range mounts {
		if m.fstype != "cgroup2" {
			continue
		}
		dir := cgroupDir(m, own[""], override)
		if dir == "" || !hasWord(dir+"/cgroup.controllers", name) {
			continue
		}
		if !hasWord(dir+"/cgroup.subtree_control", name) {
			// Enabling fails (EBUSY) when the parent holds processes itself,
			// which is the usual case for a server's own cgroup; then we
			// fall back to v1 rather than move the server.
			if os.WriteFile(dir+"/cgroup.subtree_control", []byte("+"+name), 0) != nil {
				continue
			}
		}
		return &cgController{name: name, v2: true, parent: dir}
	}
	for _, m := range mounts {
		if m.fstype != "cgroup" || !contains(m.superOpts, name) {
			continue
		}
		if dir := cgroupDir(m, own[name], override); dir != "" {
			return &cgController{name: name, parent: dir}
		}
	}
	return nil
}

// cgroupDir maps our cgroup path in a hierarchy to a directory under the
// mount, honouring the mount's root (cgroup namespaces, bind mounts).
func cgroupDir(m mountEntry, ownPath, override string) string {
	p := ownPath
	if override != "" {
		p = override
	}
	if p == "" {
		return ""
	}
	rel, ok := strings.CutPrefix(p, m.root)
	if m.root == "/" {
		rel, ok = p, true
	}
	if !ok {
		return ""
	}
	dir := filepath.Join(m.point, rel)
	if override != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return ""
		}
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return ""
	}
	return dir
}

func readCgroupMounts(path string) ([]mountEntry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return parseMountinfo(data), nil
}

// parseMountinfo extracts cgroup and cgroup2 mounts from /proc/self/mountinfo.
func parseMountinfo(data []byte) []mountEntry {
	var out []mountEntry
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		sep := -1
		for i, x := range f {
			if x == "-" {
				sep = i
				break
			}
		}
		if sep < 5 || len(f) < sep+4 {
			continue
		}
		fstype := f[sep+1]
		if fstype != "cgroup" && fstype != "cgroup2" {
			continue
		}
		out = append(out, mountEntry{
			root:      unescapeMountinfo(f[3]),
			point:     unescapeMountinfo(f[4]),
			fstype:    fstype,
			superOpts: strings.Split(f[sep+3], ","),
		})
	}
	return out
}

// unescapeMountinfo undoes the kernel's octal escaping of space, tab,
// newline and backslash in mountinfo paths.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// readOwnCgroups maps controller name ("" for v2) to this process's path.
func readOwnCgroups(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return parseProcCgroup(data), nil
}

func parseProcCgroup(data []byte) map[string]string {
	own := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			own[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			own[c] = parts[2]
		}
	}
	return own
}

// runCgroup is one run's cgroup(s): one directory per hierarchy used.
type runCgroup struct {
	mem, pids *cgController
	memDir    string
	pidsDir   string
	dirs      []string // created, in creation order
}

// create makes the run's cgroup directories and writes the limits.
func (s *cgroupSetup) create(name string, memBytes int64, procs int) (_ *runCgroup, err error) {
	if s == nil || s.memory == nil || s.pids == nil {
		return nil, errors.New("memory or pids cgroup controller unavailable")
	}
	rc := &runCgroup{mem: s.memory, pids: s.pids}
	defer func() {
		if err != nil {
			rc.remove()
		}
	}()
	mkdir := func(c *cgController) (string, error) {
		dir := filepath.Join(c.parent, name)
		for _, d := range rc.dirs {
			if d == dir { // v2: memory and pids share one directory
				return dir, nil
			}
		}
		if err := os.Mkdir(dir, 0o755); err != nil {
			return "", fmt.Errorf("creating cgroup: %w", err)
		}
		rc.dirs = append(rc.dirs, dir)
		return dir, nil
	}
	if rc.memDir, err = mkdir(s.memory); err != nil {
		return nil, err
	}
	if rc.pidsDir, err = mkdir(s.pids); err != nil {
		return nil, err
	}
	mem := strconv.FormatInt(memBytes, 10)
	if s.memory.v2 {
		if err := writeCg(rc.memDir, "memory.max", mem); err != nil {
			return nil, err
		}
		// No swap: a memory bomb must hit the limit, not the disk.
		_ = writeCg(rc.memDir, "memory.swap.max", "0")
	} else {
		if err := writeCg(rc.memDir, "memory.limit_in_bytes", mem); err != nil {
			return nil, err
		}
		// Absent without swap accounting; when present, memory+swap gets
		// the same limit so swap cannot extend it.
		_ = writeCg(rc.memDir, "memory.memsw.limit_in_bytes", mem)
	}
	if err := writeCg(rc.pidsDir, "pids.max", strconv.Itoa(procs)); err != nil {
		return nil, err
	}
	return rc, nil
}

// add moves pid (all its threads) into the run's cgroups.
func (rc *runCgroup) add(pid int) error {
	p := strconv.Itoa(pid)
	for _, d := range rc.dirs {
		if err := writeCg(d, "cgroup.procs", p); err != nil {
			return err
		}
	}
	return nil
}

// cgStats is what the cgroups saw during the run.
type cgStats struct {
	OOMKills     int64 // processes killed by the memory limit
	PidsMaxHits  int64 // forks refused by the task limit
	PeakMemBytes int64
}

func (rc *runCgroup) stats() cgStats {
	var st cgStats
	if rc.mem.v2 {
		st.OOMKills = keyedInt(filepath.Join(rc.memDir, "memory.events"), "oom_kill")
		st.PeakMemBytes = fileInt(filepath.Join(rc.memDir, "memory.peak"))
	} else {
		st.OOMKills = keyedInt(filepath.Join(rc.memDir, "memory.oom_control"), "oom_kill")
		st.PeakMemBytes = fileInt(filepath.Join(rc.memDir, "memory.max_usage_in_bytes"))
	}
	st.PidsMaxHits = keyedInt(filepath.Join(rc.pidsDir, "pids.events"), "max")
	return st
}

// remove deletes the run's cgroups. By the time it runs the PID namespace
// is gone, so the cgroups are empty; rmdir is retried briefly while the
// kernel finishes tearing down exited tasks.
func (rc *runCgroup) remove() error {
	var errs []error
	for i := len(rc.dirs) - 1; i >= 0; i-- {
		var err error
		for try := 0; try < 50; try++ {
			if err = os.Remove(rc.dirs[i]); err == nil || errors.Is(err, os.ErrNotExist) {
				err = nil
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("removing cgroup: %w", err))
		}
	}
	rc.dirs = nil
	return errors.Join(errs...)
}

func writeCg(dir, file, value string) error {
	if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0); err != nil {
		return fmt.Errorf("writing cgroup %s: %w", file, err)
	}
	return nil
}

func hasWord(path, word string) bool {
	b, err := os.ReadFile(path)
	return err == nil && contains(strings.Fields(string(b)), word)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// keyedInt reads "key N" from a flat-keyed cgroup file; 0 when absent.
func keyedInt(path, key string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

func fileInt(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// describe names the hierarchies in use, for Result.Mechanisms.
func (rc *runCgroup) describe() []string {
	v := func(c *cgController) string {
		if c.v2 {
			return "v2"
		}
		return "v1"
	}
	return []string{"cgroup_memory:" + v(rc.mem), "cgroup_pids:" + v(rc.pids)}
}
