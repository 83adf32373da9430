package boltstore

import (
	"context"
	"encoding/binary"
	"os"
	"time"

	"github.com/clutchprotocol/clutch/store"
	bolt "go.etcd.io/bbolt"
)

var _ store.UsageReporter = (*Store)(nil)

// keyBackedUp is the meta key of the last backup's time (BackupInfo.Time),
// Unix nanoseconds (int64 BE).
var keyBackedUp = []byte("backed_up")

// Usage implements store.UsageReporter from the file's size, bbolt's
// free-page count, the first key of the events bucket and two meta keys:
// its cost does not grow with the log. Bytes is the file's size on disk
// (with fsync on, it includes the zeros kept ahead of the pages; see the
// package doc); Free is the bytes of bbolt's free pages, which Compact
// gives back; LastCompaction and LastBackup are the times of the last
// Compact and of the last Backup or BackupFile of a store open for writing
// (a read-only open records nothing), zero before the first.
func (s *Store) Usage(ctx context.Context) (store.Usage, error) {
	if err := ctx.Err(); err != nil {
		return store.Usage{}, err
	}
	s.mu.RLock()
	closed, last := s.closed, s.last
	s.mu.RUnlock()
	if closed {
		return store.Usage{}, store.ErrClosed
	}
	u := store.Usage{LastSeq: last}
	err := s.view("usage", func(tx *bolt.Tx) error {
		// Under the view the file is the one db maps (compact.go).
		fi, err := os.Stat(s.path)
		if err != nil {
			return err
		}
		u.Bytes = fi.Size()
		u.Free = int64(s.db.Stats().FreeAlloc)
		if k, v := tx.Bucket(bucketEvents).Cursor().First(); k != nil {
			if u.OldestSeq, err = parseSeqKey(k); err != nil {
				return err
			}
			r, err := parseRecord(v, tx.Size())
			if err != nil {
				return corrupt("event %d: %v", u.OldestSeq, err)
			}
			u.OldestTime = time.Unix(0, r.time).UTC()
		}
		meta := tx.Bucket(bucketMeta)
		u.LastCompaction = metaTime(meta, keyCompacted)
		u.LastBackup = metaTime(meta, keyBackedUp)
		u.Events = last - min(last, removedEvents(tx))
		return nil
	})
	if err != nil {
		return store.Usage{}, err
	}
	return u, nil
}

// removedEvents is how many events the file no longer holds: the count
// RemoveRuns keeps in meta (remove.go), read without a scan.
func removedEvents(tx *bolt.Tx) uint64 {
	n, _ := parseSeqKey(tx.Bucket(bucketMeta).Get(keyRemoved))
	return n
}

// metaTime reads a time the meta bucket keeps under key; zero when it
// keeps none (or a value of the wrong size).
func metaTime(meta *bolt.Bucket, key []byte) time.Time {
	v := meta.Get(key)
	if len(v) != 8 {
		return time.Time{}
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(v))).UTC()
}

// putMetaTime records t under key in the meta bucket.
func (s *Store) putMetaTime(key []byte, t time.Time) error {
	return s.updateIn(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(key, binary.BigEndian.AppendUint64(nil, uint64(t.UnixNano())))
	})
}
