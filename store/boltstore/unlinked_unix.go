//go:build unix

package boltstore

import (
	"os"
	"syscall"
)

// unlinked reports whether the open file fi describes has no name left.
func unlinked(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Nlink == 0
}
