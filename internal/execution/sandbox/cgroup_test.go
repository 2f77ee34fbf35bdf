//go:build linux

package sandbox

import "testing"

func FuzzParseMountinfo(f *testing.F) {
	f.Add([]byte("36 25 0:31 / /sys/fs/cgroup/memory rw,relatime shared:14 - cgroup cgroup rw,memory\n"))
	f.Add([]byte("40 25 0:35 / /sys/fs/cgroup/uni\\040fied rw - cgroup2 cgroup2 rw\n"))
	f.Add([]byte("- - - -\n\\"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, m := range parseMountinfo(data) {
			if m.fstype != "cgroup" && m.fstype != "cgroup2" {
				t.Fatalf("non-cgroup mount returned: %+v", m)
			}
		}
		parseProcCgroup(data)
	})
}

func TestParseCgroupFiles(t *testing.T) {
	mi := "36 25 0:31 / /sys/fs/cgroup/memory rw,relatime shared:14 - cgroup cgroup rw,memory\n" +
		"37 25 0:32 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n" +
		"40 25 0:35 /sub /sys/fs/cgroup/uni\\040fied rw - cgroup2 cgroup2 rw\n" +
		"41 25 0:36 / /proc rw - proc proc rw\n"
	ms := parseMountinfo([]byte(mi))
	if len(ms) != 3 || ms[2].point != "/sys/fs/cgroup/uni fied" || ms[2].root != "/sub" ||
		!contains(ms[1].superOpts, "cpuacct") {
		t.Fatalf("parsed %+v", ms)
	}
	own := parseProcCgroup([]byte("4:memory:/process_api/x\n1:cpu,cpuacct:/\n0::/user.slice\n"))
	if own["memory"] != "/process_api/x" || own["cpuacct"] != "/" || own[""] != "/user.slice" {
		t.Fatalf("parsed %v", own)
	}
}
