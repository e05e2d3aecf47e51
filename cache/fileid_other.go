//go:build !linux

package cache

import (
	"io/fs"
	"os"
)

// sysFileID leaves inode, device and change time unknown: revalidation
// compares size, mtime and type only.
func sysFileID(fi fs.FileInfo, id *fileID) {}

// statID is fileIDOf(f.Stat()).
func statID(f *os.File) (fileID, error) {
	fi, err := f.Stat()
	if err != nil {
		return fileID{}, err
	}
	return fileIDOf(fi), nil
}
