package boltstore

// SetAfterCopy makes Compact call f between its copy and its swap (with
// whether the store's reads and appends are held), until the test ends.
func SetAfterCopy(t interface{ Cleanup(func()) }, f func(exclusive bool)) {
	afterCopy = f
	t.Cleanup(func() { afterCopy = nil })
}

// SetBackupSyncEvery makes BackupFile sync its copy every n bytes, until
// the test ends.
func SetBackupSyncEvery(t interface{ Cleanup(func()) }, n int) {
	old := backupSyncEvery
	backupSyncEvery = n
	t.Cleanup(func() { backupSyncEvery = old })
}

// SetCompactPieces makes Compact commit (and sync) its copy every n bytes
// of data and free the old file n bytes at a time, until the test ends.
func SetCompactPieces(t interface{ Cleanup(func()) }, n int64) {
	oldTx, oldFree := compactTxSize, compactFreePiece
	compactTxSize, compactFreePiece = n, n
	t.Cleanup(func() { compactTxSize, compactFreePiece = oldTx, oldFree })
}
