//go:build !unix

package boltstore

import "os"

// unlinked reports whether the open file fi describes has no name left:
// not known here, so the old file of a compaction is freed by its close.
func unlinked(os.FileInfo) bool { return false }
