//go:build linux

package cache

import (
	"io/fs"
	"syscall"
)

func sysFileID(fi fs.FileInfo, id *fileID) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id.ino = st.Ino
		id.dev = uint64(st.Dev)
		id.ctime = st.Ctim.Nano()
	}
}
