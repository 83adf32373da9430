package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clutchprotocol/clutch/store"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Compaction (see "Compaction" in the package doc) in three steps:
//
//  1. Under s.swap held exclusively for a moment, the id of the last
//     transaction and the writer's commit count are noted, and index
//     flushes are held back (c.active): from then on, as long as nothing
//     but the writer's group commits writes, the file changes only by
//     new records in the events bucket.
//  2. copyFile copies the file, within one read transaction, into a new
//     bbolt file beside it (<path>.compact), while appends, reads and
//     followers go on with the old one. Each of its transactions is
//     synced at its commit (compactTxSize).
//  3. Under s.swap held exclusively (every transaction on the file holds
//     it shared: reads for a page, a group commit from its first put to
//     its commit), the events appended since the copy's transaction are
//     carried over, the time is recorded, the new file is synced and
//     renamed over the old one, and the Store's handle is switched to it.
//     Appends that arrive meanwhile wait in the writer's queue; reads wait
//     for the swap, then read the new file. Once s.swap is released, the
//     old file's handle is closed and its blocks freed (freeFile).
//
// If anything but group commits wrote meanwhile (an artifact, a backup's
// record, an index flush that began before step 1), bbolt's transaction
// ids moved further than the writer's commits, the copy may miss that
// change, and it is dropped and made again; the last attempt holds s.swap
// for the whole copy, so it cannot be overtaken.

// CompactResult describes what Compact did.
type CompactResult struct {
	// BytesBefore and BytesAfter are the sizes of the file before and of
	// the new file at the swap. The new file is the old one's data with
	// its free pages dropped and its pages filled: BytesAfter is at most
	// BytesBefore, unless many events were appended during the copy.
	BytesBefore, BytesAfter int64
	// LastSeq is the seq of the last event in the new file at the swap.
	LastSeq uint64
	// Carried is how many events were appended while the copy was made
	// and carried over into the new file at the swap.
	Carried uint64
	// Time is when the swap happened, by the store's clock
	// (Options.Clock): the time Usage reports as LastCompaction.
	Time time.Time
	// Duration is how long Compact took; Paused is how long of it
	// appends and reads waited for the swap.
	Duration, Paused time.Duration
}

// compaction is the Store's compaction state.
type compaction struct {
	run    sync.Mutex  // held by a running Compact: one at a time
	active atomic.Bool // a copy is being made: the writer holds index flushes back

	mu      sync.Mutex
	cancel  context.CancelFunc // the running Compact's, nil when none
	closing bool               // Close has begun: no new compaction
}

// keyCompacted is the meta key of the last compaction's time, Unix
// nanoseconds (int64 BE) by the store's clock.
var keyCompacted = []byte("compacted")

// compactTxSize is the most data the copy puts in one transaction of the
// new file (a variable for tests). bbolt keeps a transaction's pages in
// memory until its commit, which writes and syncs them: the store's
// commits, whose fsyncs go to the same disk (and, on a journaling file
// system, through the same journal), wait for at most one piece. Synced
// whole at its end, the copy made a commit wait for all of it, 150 to
// 200 ms for 80 MB on a disk that writes 550 MB/s. Small transactions
// also keep the copy's memory, and its garbage collection, small.
var compactTxSize int64 = 4 << 20

// compactFreePiece is how many bytes of the old file freeFile gives back
// at a time (a variable for tests).
var compactFreePiece int64 = 4 << 20

// afterCopy, when set (by tests), is called between a compaction's copy
// and its swap, with whether s.swap is held.
var afterCopy func(exclusive bool)

// compactAttempts is how many copies Compact makes, the last with the
// store's reads and appends held for the whole copy (see above).
const compactAttempts = 3

// Compact rewrites the store's file into a new one that holds the same
// data without free pages (those left by overwritten index and summary
// entries, and by removals), and puts it in place of the old one while
// the store stays open: reads, followers and appends go on during the
// copy and wait only for the swap at its end (appends are queued, not
// refused, and acknowledged once they are committed to the new file).
// Every event committed before or during the compaction is in the new
// file, under the same seq. The swap is crash-safe: the new file is
// written and synced beside the old one as <path>.compact and then renamed
// over it; after a crash before the rename, Open removes the leftover and
// opens the old file. The time of the compaction is recorded in the file
// (Usage.LastCompaction).
//
// ctx cancels the copy (within one transaction of the copy, at most 4 MiB
// of data); the store is then left as it was. Compact on a store opened
// read-only fails with ErrReadOnly; on a store that met damage with its
// ErrCorrupt (Check tells where; a copy of known damage is no cure); on a
// closed one, or when Close is called meanwhile, with store.ErrClosed.
func (s *Store) Compact(ctx context.Context) (CompactResult, error) {
	if s.opts.ReadOnly {
		return CompactResult{}, s.readOnly("compact")
	}
	if err := ctx.Err(); err != nil {
		return CompactResult{}, err
	}
	c := &s.cmp
	c.run.Lock()
	defer c.run.Unlock()
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return CompactResult{}, store.ErrClosed
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c.cancel = cancel
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.cancel = nil
		c.mu.Unlock()
	}()

	start := time.Now()
	for attempt := 1; ; attempt++ {
		if err := s.checkOpen(); err != nil {
			return CompactResult{}, err
		}
		if err := s.brokenErr(); err != nil {
			return CompactResult{}, err
		}
		res, again, err := s.compactOnce(ctx, attempt == compactAttempts)
		if err != nil {
			c.mu.Lock()
			closing := c.closing
			c.mu.Unlock()
			if closing {
				return CompactResult{}, store.ErrClosed
			}
			return CompactResult{}, err
		}
		if !again {
			res.Duration = time.Since(start)
			return res, nil
		}
	}
}

// compactPath is where the new file is written before the swap.
func compactPath(path string) string { return path + ".compact" }

// compactOnce makes one copy and swaps it in. It reports again when
// something other than appends wrote to the file during the copy: the
// copy is dropped then. exclusive holds s.swap for the whole copy.
func (s *Store) compactOnce(ctx context.Context, exclusive bool) (res CompactResult, again bool, err error) {
	tmp := compactPath(s.path)
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return res, false, err
	}
	c := &s.cmp

	s.swap.Lock()
	locked := true
	var old *bolt.DB     // the old file's handle, once swapped out
	var oldFile *os.File // the old file, to free its blocks once old is closed
	defer func() {
		if locked {
			s.swap.Unlock()
		}
		// The old file has no name: closing the last handle frees its
		// blocks, which takes a while, not the readers' (see freeFile).
		if old != nil && old.Close() == nil && oldFile != nil {
			freeFile(ctx, oldFile)
		} else if oldFile != nil {
			oldFile.Close()
		}
	}()
	fi, err := os.Stat(s.path)
	if err != nil {
		return res, false, err
	}
	res.BytesBefore = fi.Size()
	pageSize := s.db.Info().PageSize
	startID, err := s.txID()
	if err != nil {
		return res, false, err
	}
	startCommits := s.w.commits.Load()
	c.active.Store(true)
	defer c.active.Store(false)
	if !exclusive {
		s.swap.Unlock()
		locked = false
	}

	dst, err := bolt.Open(tmp, s.opts.FileMode, &bolt.Options{
		NoSync:       false, // each transaction of the copy, see compactTxSize
		FreelistType: bolt.FreelistMapType,
		PageSize:     pageSize,
	})
	if err != nil {
		return res, false, err
	}
	swapped := false
	defer func() {
		if !swapped {
			dst.Close()
			os.Remove(tmp)
		}
	}()
	// Closing the new file is how ctx stops the copy: its next
	// transaction fails.
	stop := context.AfterFunc(ctx, func() { dst.Close() })
	err = s.guard("compact", func() error {
		return s.db.View(func(src *bolt.Tx) error { return copyFile(dst, src) })
	})
	if err == nil && afterCopy != nil {
		afterCopy(exclusive)
	}
	if !stop() {
		return res, false, ctx.Err()
	}
	if err != nil {
		return res, false, err
	}

	// The copy is on the disk: the swap syncs only what it adds, once,
	// and reads and appends wait for that alone.
	dst.NoSync = true
	if f, err := os.OpenFile(s.path, os.O_WRONLY, 0); err == nil {
		oldFile = f
	}

	if !locked {
		s.swap.Lock()
		locked = true
	}
	paused := time.Now()
	endID, err := s.txID()
	if err != nil {
		return res, false, err
	}
	if uint64(endID-startID) != s.w.commits.Load()-startCommits {
		return res, true, nil // not appends only: copy again
	}
	res.Time = s.Now()
	err = s.guard("compact", func() error {
		return dst.Update(func(tx *bolt.Tx) error {
			n, last, err := s.carryOver(tx)
			res.Carried, res.LastSeq = n, last
			if err != nil {
				return err
			}
			return tx.Bucket(bucketMeta).Put(keyCompacted, binary.BigEndian.AppendUint64(nil, uint64(res.Time.UnixNano())))
		})
	})
	if err != nil {
		return res, false, err
	}
	if err := dst.Sync(); err != nil {
		return res, false, err
	}
	if fi, err := os.Stat(tmp); err == nil {
		res.BytesAfter = fi.Size()
	}
	if err := os.Rename(tmp, s.path); err != nil {
		return res, false, err
	}
	swapped = true
	syncDir(filepath.Dir(s.path))

	// The new file is in place: from here nothing fails. The handle
	// still open on the new file keeps its lock; the old one's file has
	// no name any more.
	if s.res != nil {
		s.res.close()
		s.res = nil
	}
	old = s.db
	dst.NoSync = s.opts.NoSync
	s.db = dst
	if !s.opts.NoSync {
		s.startReserve()
	}
	res.Paused = time.Since(paused)
	return res, false, nil
}

// freeFile gives the blocks of f, the old file of a compaction, back to
// the file system compactFreePiece bytes at a time, each synced, and
// closes it. Freed at once by the close of its last handle, an 80 MB file
// made the store's commits wait 70 to 110 ms for the file system's
// journal commit that frees (and, mounted with online discard, discards)
// its blocks; a piece at a time, a commit waits for at most one piece.
// Nothing else of the store has f open (old is closed, the reserve
// stopped), and a file that has a name (a hard link) is not touched; if
// ctx is done the rest is freed at once.
func freeFile(ctx context.Context, f *os.File) {
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !unlinked(fi) {
		return
	}
	for size := fi.Size(); size > 0 && ctx.Err() == nil; {
		size = max(0, size-compactFreePiece)
		if f.Truncate(size) != nil || f.Sync() != nil {
			return
		}
	}
}

// carryOver copies into tx, of the new file, the events of the old file
// after the last one tx holds, and the old file's beats, and returns how
// many events and the last seq.
// The caller holds s.swap: no transaction writes the old file.
func (s *Store) carryOver(tx *bolt.Tx) (n, last uint64, err error) {
	events := tx.Bucket(bucketEvents)
	events.FillPercent = 1.0
	if k, _ := events.Cursor().Last(); k != nil {
		if last, err = parseSeqKey(k); err != nil {
			return 0, 0, err
		}
	}
	err = s.db.View(func(src *bolt.Tx) error {
		cur := src.Bucket(bucketEvents).Cursor()
		for k, v := cur.Seek(seqKey(last + 1)); k != nil; k, v = cur.Next() {
			// bbolt keeps a put's key and value until the commit; these
			// point into the old file's mapping, which this View leaves.
			if err := events.Put(bytes.Clone(k), bytes.Clone(v)); err != nil {
				return err
			}
			seq, err := parseSeqKey(k)
			if err != nil {
				return err
			}
			last = seq
			n++
		}
		// Beats ride the appends' commits (presence.go), so the copy may
		// miss the latest: the presence bucket, one row per key, is taken
		// whole.
		pres := src.Bucket(bucketPresence)
		if pres == nil {
			return nil
		}
		dst, err := tx.CreateBucketIfNotExists(bucketPresence)
		if err != nil {
			return err
		}
		return pres.ForEach(func(k, v []byte) error { return dst.Put(bytes.Clone(k), bytes.Clone(v)) })
	})
	return n, last, err
}

// txID returns the id of the file's last committed transaction. The
// caller holds s.swap.
func (s *Store) txID() (int, error) {
	tx, err := s.db.Begin(false)
	if err != nil {
		if errors.Is(err, berrors.ErrDatabaseNotOpen) {
			return 0, store.ErrClosed
		}
		return 0, err
	}
	defer tx.Rollback()
	return tx.ID(), nil
}

// stopCompaction cancels a running Compact and waits for it to end; no
// Compact starts after it. Close calls it first.
func (s *Store) stopCompaction() {
	c := &s.cmp
	c.mu.Lock()
	c.closing = true
	cancel := c.cancel
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	c.run.Lock()
	c.run.Unlock() //nolint:staticcheck // waiting for the running one is the point
}

// removeLeftover removes the new file of a compaction that did not reach
// its swap (the process died during the copy). Open calls it once it
// holds the file's lock, so that it never removes the new file of a
// compaction another process is making.
func removeLeftover(path string) error {
	err := os.Remove(compactPath(path))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// copyFile copies every bucket of src, with its sequence, into the empty
// dst, in transactions of at most compactTxSize bytes of keys and values,
// its pages filled.
//
// It is bbolt.Compact, save one thing: the whole copy, its last commit
// included, happens inside src, one read transaction. A value put in a
// transaction of dst points into the old file's memory map until that
// transaction commits, and bbolt.Compact commits its last one after its
// read transaction ended, so the map had to be held in place with a
// second read transaction. A commit of the store that must grow the map
// waits for every read transaction; a reader that starts meanwhile holds
// bbolt's meta lock while it waits behind that commit; and ending the
// first read transaction needs the meta lock: the store hung. With one
// read transaction, ending it lets the commit, then the reader, go on.
func copyFile(dst *bolt.DB, src *bolt.Tx) (err error) {
	c := copier{dst: dst}
	if c.tx, err = dst.Begin(true); err != nil {
		return err
	}
	defer func() {
		if c.tx != nil {
			c.tx.Rollback()
		}
	}()
	err = src.ForEach(func(name []byte, b *bolt.Bucket) error { return c.bucket(nil, name, b) })
	if err != nil {
		return err
	}
	err = c.tx.Commit()
	c.tx = nil
	return err
}

// copier is copyFile's state: the open transaction of the new file and
// the bytes put in it.
type copier struct {
	dst  *bolt.DB
	tx   *bolt.Tx
	size int64
}

// bucket copies the bucket b of src, named name under the buckets path
// (none for a top-level one), into the new file.
func (c *copier) bucket(path [][]byte, name []byte, b *bolt.Bucket) error {
	parent := c.open(path)
	var nb *bolt.Bucket
	var err error
	if parent == nil {
		nb, err = c.tx.CreateBucket(name)
	} else {
		nb, err = parent.CreateBucket(name)
	}
	if err != nil {
		return err
	}
	if err := nb.SetSequence(b.Sequence()); err != nil {
		return err
	}
	nb.FillPercent = 1.0
	path = append(path[:len(path):len(path)], name)
	cur := b.Cursor()
	for k, v := cur.First(); k != nil; k, v = cur.Next() {
		if v == nil { // a nested bucket
			if err := c.bucket(path, k, b.Bucket(k)); err != nil {
				return err
			}
			nb = c.open(path) // its transaction may have been committed
			continue
		}
		sz := int64(len(k) + len(v))
		if c.size+sz > compactTxSize && c.size > 0 {
			if err := c.tx.Commit(); err != nil {
				c.tx = nil
				return err
			}
			if c.tx, err = c.dst.Begin(true); err != nil {
				return err
			}
			c.size = 0
			nb = c.open(path)
		}
		c.size += sz
		if err := nb.Put(k, v); err != nil {
			return err
		}
	}
	return nil
}

// open returns the bucket at path in the open transaction, its pages to
// be filled; nil for the empty path.
func (c *copier) open(path [][]byte) *bolt.Bucket {
	if len(path) == 0 {
		return nil
	}
	b := c.tx.Bucket(path[0])
	for _, k := range path[1:] {
		b = b.Bucket(k)
	}
	b.FillPercent = 1.0
	return b
}
