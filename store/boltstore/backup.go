package boltstore

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/clutchprotocol/clutch/store"
	berrors "go.etcd.io/bbolt/errors"
)

// BackupInfo describes a backup Backup or BackupFile wrote.
type BackupInfo struct {
	// LastSeq is the seq of the last event the backup holds: every event
	// up to it, and none after. 0 for a store without events.
	LastSeq uint64
	// Bytes is the size of the backup.
	Bytes int64
	// Time is when the backup's read transaction began, by the store's
	// clock (Options.Clock): every append acknowledged before it is in
	// the backup.
	Time time.Time
	// Duration is how long the copy took.
	Duration time.Duration
}

// Backup writes a consistent copy of the store's file to w while the store
// keeps working: bbolt's copy of one read transaction (Tx.WriteTo), so
// appends go on committing meanwhile and the copy holds exactly the events
// committed when it began — every append acknowledged before the call, up
// to BackupInfo.LastSeq. The copy is a store file that Open opens as it
// would the original after a crash (the index entries still in memory are
// rebuilt from the events after the file's watermark; nothing is repaired)
// and that passes Check. It works on a store opened read-only as well.
// ctx cancels the copy (w is then left with part of a file). A store that
// met damage (ErrCorrupt) refuses with that error: a copy of known damage
// is no backup. A store open for writing records the backup's Time in the
// file (Usage.LastBackup).
func (s *Store) Backup(ctx context.Context, w io.Writer) (BackupInfo, error) {
	if err := ctx.Err(); err != nil {
		return BackupInfo{}, err
	}
	if err := s.checkOpen(); err != nil {
		return BackupInfo{}, err
	}
	if err := s.brokenErr(); err != nil {
		return BackupInfo{}, err
	}
	var info BackupInfo
	err := s.guard("backup", func() error {
		info.Time = s.Now()
		start := time.Now()
		s.swap.RLock()
		defer s.swap.RUnlock()
		tx, err := s.db.Begin(false)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if k, _ := tx.Bucket(bucketEvents).Cursor().Last(); k != nil {
			if info.LastSeq, err = parseSeqKey(k); err != nil {
				return err
			}
		}
		info.Bytes, err = tx.WriteTo(&ctxWriter{ctx: ctx, w: w})
		info.Duration = time.Since(start)
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		return err
	})
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return BackupInfo{}, store.ErrClosed
	}
	if err != nil {
		return BackupInfo{}, err
	}
	if !s.opts.ReadOnly && s.brokenErr() == nil {
		// For Usage.LastBackup. A backup whose record fails is still
		// a backup: the error is not the caller's.
		_ = s.guard("backup", func() error { return s.putMetaTime(keyBackedUp, info.Time) })
	}
	return info, nil
}

// BackupFile writes a backup (see Backup) to the file at path, mode 0600:
// to a new file beside it first, synced as it is written (every 8 MiB, so
// that the store's commits never wait for the disk to write the whole
// copy) and at its end, then renamed over path, so path holds either the
// previous file or the whole new backup, never a part.
// The store's own file as path is refused with ErrInvalidOptions.
func (s *Store) BackupFile(ctx context.Context, path string) (info BackupInfo, err error) {
	if same, _ := sameFile(path, s.path); same {
		return BackupInfo{}, invalidOption("the backup's path is the store's own file: " + path)
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".backup-*")
	if err != nil {
		return BackupInfo{}, err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = f.Chmod(0o600); err != nil {
		return BackupInfo{}, err
	}
	if info, err = s.Backup(ctx, &syncWriter{f: f}); err != nil {
		return BackupInfo{}, err
	}
	if err = f.Sync(); err != nil {
		return BackupInfo{}, err
	}
	if err = f.Close(); err != nil {
		return BackupInfo{}, err
	}
	if err = os.Rename(tmp, path); err != nil {
		return BackupInfo{}, err
	}
	syncDir(dir) // the rename survives a power loss; a failure here is not the backup's
	return info, nil
}

// backupSyncEvery is how many bytes of a backup BackupFile writes between
// two fsyncs of it (a variable for tests). Synced only at its end, a
// backup leaves all its pages dirty, and that one fsync writes them all at
// once: the store's commits, whose fsyncs go to the same disk (and, on a
// journaling file system, through the same journal), wait for all of it,
// 150 ms for 80 MB on a disk that writes 550 MB/s. Synced a piece at a
// time, a commit waits for at most one piece (20 ms there); the copy
// pauses while each is written, which costs it 5 to 10% of its speed.
var backupSyncEvery = 8 << 20

// syncWriter writes a backup to f, syncing it every backupSyncEvery bytes.
type syncWriter struct {
	f        *os.File
	unsynced int
}

func (w *syncWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.unsynced += n
	if err == nil && w.unsynced >= backupSyncEvery {
		w.unsynced = 0
		err = w.f.Sync()
	}
	return n, err
}

// sameFile reports whether a and b name the same existing file.
func sameFile(a, b string) (bool, error) {
	fa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	fb, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	return os.SameFile(fa, fb), nil
}

// syncDir fsyncs a directory, so that a rename in it is durable.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// ctxWriter stops a copy when ctx is done: bbolt's copy writes in pieces
// of 32 KiB, each checked.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c *ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}
