//go:build !unix

package atomicfile

import "os"

// noFollow: no O_NOFOLLOW here; OpenNoFollow checks with Lstat first.
const noFollow = 0

// ownedBySelf cannot tell here: every file counts as the user's own.
func ownedBySelf(os.FileInfo) bool { return true }
