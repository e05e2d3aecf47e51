package cache

import "io/fs"

// fileID is what revalidation compares: a file version is the same while
// all of these are. ino, dev and ctime are filled where the platform
// reports them (see fileid_linux.go), so a rename over the file (a new
// inode) or a rewrite that restores size and mtime (a new ctime) is seen.
type fileID struct {
	size  int64
	mtime int64 // ns since the Unix epoch
	ctime int64 // ns; 0 where unknown
	ino   uint64
	dev   uint64
	mode  fs.FileMode // type bits only
}

func fileIDOf(fi fs.FileInfo) fileID {
	id := fileID{
		size:  fi.Size(),
		mtime: fi.ModTime().UnixNano(),
		mode:  fi.Mode().Type(),
	}
	sysFileID(fi, &id)
	return id
}
