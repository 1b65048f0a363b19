package atomicfile

import (
	"io/fs"
	"os"
)

// Modes of the outputs of a run: those holding its secrets (launch.SecretOutputs says which)
// are private unless the user shares them (--share-outputs); the others are readable by all.
const (
	PrivateFile os.FileMode = 0o600
	SharedFile  os.FileMode = 0o644
	PrivateDir  os.FileMode = 0o700
	SharedDir   os.FileMode = 0o755
)

// Mode is the mode of an output file: PrivateFile when it holds secrets and is not shared.
func Mode(secret, share bool) os.FileMode {
	if secret && !share {
		return PrivateFile
	}
	return SharedFile
}

// DirMode is the mode of a folder of outputs holding secrets (OUT/procs, OUT/figures).
func DirMode(share bool) os.FileMode {
	if share {
		return SharedDir
	}
	return PrivateDir
}

// MkdirOutputs creates dir (and its parents) and gives dir itself DirMode(share), also when it
// existed: a folder an earlier, shared run made becomes private again. A link at dir is left
// to the caller (dpsim removes it before: cleanOutputs).
func MkdirOutputs(dir string, share bool) error {
	if err := os.MkdirAll(dir, DirMode(share)); err != nil {
		return err
	}
	if fi, err := os.Lstat(dir); err != nil || fi.Mode()&fs.ModeSymlink != 0 {
		return err
	}
	return os.Chmod(dir, DirMode(share))
}

// Shared reports whether dir is open to group or others: a process writing into a folder the
// launcher made (OUT/procs) takes its privacy from it (MkdirOutputs), so the launcher's
// --share-outputs reaches every process without a flag of theirs.
func Shared(dir string) bool {
	fi, err := os.Stat(dir)
	return err == nil && fi.Mode().Perm()&0o077 != 0
}
