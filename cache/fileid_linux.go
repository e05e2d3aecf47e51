//go:build linux

package cache

import (
	"io/fs"
	"os"
	"syscall"
)

func sysFileID(fi fs.FileInfo, id *fileID) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id.ino = st.Ino
		id.dev = uint64(st.Dev)
		id.ctime = st.Ctim.Nano()
	}
}

// statID is fileIDOf(f.Stat()) without the allocation of an os.FileInfo.
func statID(f *os.File) (fileID, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return fileID{}, err
	}
	return fileID{
		size:  st.Size,
		mtime: st.Mtim.Nano(),
		ctime: st.Ctim.Nano(),
		ino:   st.Ino,
		dev:   uint64(st.Dev),
		mode:  modeType(st.Mode),
	}, nil
}

// modeType maps the file type bits of st_mode to fs.FileMode's, as
// os.Stat does for the types the cache meets.
func modeType(m uint32) fs.FileMode {
	switch m & syscall.S_IFMT {
	case syscall.S_IFDIR:
		return fs.ModeDir
	case syscall.S_IFLNK:
		return fs.ModeSymlink
	case syscall.S_IFIFO:
		return fs.ModeNamedPipe
	case syscall.S_IFSOCK:
		return fs.ModeSocket
	case syscall.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFBLK:
		return fs.ModeDevice
	}
	return 0
}
