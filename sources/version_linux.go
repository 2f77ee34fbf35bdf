//go:build linux

package sources

import (
	"os"
	"syscall"
)

// versionOf keys the file version an open descriptor's stat describes. ok is
// false when the stat carries no inode (then nothing is cached and every
// page verifies the whole file).
func versionOf(p *pool, name string, info os.FileInfo) (versionKey, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return versionKey{}, false
	}
	return versionKey{
		pool: p, name: name,
		dev: st.Dev, ino: st.Ino, size: st.Size,
		mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(),
	}, true
}
