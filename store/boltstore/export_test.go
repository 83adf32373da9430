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
