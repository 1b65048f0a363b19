package atomicfile

import (
	"fmt"
	"io/fs"
	"os"
)

// OpenNoFollow is os.OpenFile, except that a symbolic link at path is never followed: opening
// one fails (O_NOFOLLOW; where there is none, an Lstat first). Only a regular file is returned:
// what dpsim writes or reads back in its output directory is never a link, a device or a FIFO
// that someone else put there.
func OpenNoFollow(path string, flag int, perm os.FileMode) (*os.File, error) {
	if noFollow == 0 {
		if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("open %s: is a symbolic link (not followed)", path)
		}
	}
	f, err := os.OpenFile(path, flag|noFollow, perm)
	if err != nil {
		if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("open %s: is a symbolic link (not followed)", path)
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("open %s: not a regular file (%v)", path, fi.Mode().Type())
	}
	return f, nil
}

// CheckPrivate refuses a file that someone else could have written or read: it must be owned by
// this process's user (on Unix) and have no permission bits for group or others.
func CheckPrivate(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !ownedBySelf(fi) {
		return fmt.Errorf("%s is not owned by this user", f.Name())
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s has mode %v: want no access for group and others (0600)", f.Name(), fi.Mode().Perm())
	}
	return nil
}
