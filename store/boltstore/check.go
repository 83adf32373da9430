package boltstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"os"

	"github.com/clutchprotocol/clutch/store"
	berrors "go.etcd.io/bbolt/errors"

	bolt "go.etcd.io/bbolt"
)

// Check reads the whole file in one transaction and reports the first
// inconsistency as an error matching ErrCorrupt, naming what is wrong: the
// page structure (meta pages, free list, every page reachable from the
// root is a sound branch or leaf page reached once, keys in order, every
// page reachable or free), read with plain file reads and never through
// bbolt's mapping; every record decodes and its checksum matches; seqs run
// from 1 without a gap (but the gaps of removed runs, as many seqs as
// were removed); every tombstone decodes; every event up to the index watermark is found
// through its id, its idempotency key and each of the four indexes, under
// its own values, and the indexes hold nothing else; every artifact's data
// matches its digest. Check never writes: it is how to tell whether a
// file that gave ErrCorrupt is damaged, and where. It is a maintenance and
// test tool: it costs a pass over the file, and appends wait while it
// runs. ctx cancels it.
func (s *Store) Check(ctx context.Context) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	return s.guard("check", func() error {
		// A write transaction, rolled back: the writer cannot commit
		// while the file is read, so the pages read with plain reads are
		// the ones bbolt serves.
		// A read-only store has no writer to hold off: a read
		// transaction sees the file as it stays.
		s.swap.RLock()
		defer s.swap.RUnlock()
		tx, err := s.db.Begin(!s.opts.ReadOnly)
		if err != nil {
			if errors.Is(err, berrors.ErrDatabaseNotOpen) {
				return store.ErrClosed
			}
			return err
		}
		defer tx.Rollback()
		return s.check(ctx, tx)
	})
}

func (s *Store) check(ctx context.Context, tx *bolt.Tx) error {
	f, err := os.Open(s.path)
	if err != nil {
		return err
	}
	defer f.Close()
	m, err := inspectFile(s.path, f)
	if err != nil {
		return err
	}
	inUse := uint64(tx.ID()) // a read transaction's id is the meta page's
	if tx.Writable() {
		inUse--
	}
	if m.txid != inUse {
		return corrupt("%s: the meta page in use is of tx %d, the file's newest valid one of tx %d", s.path, inUse, m.txid)
	}
	if err := walk(ctx, f, m); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return corrupt("%s: page structure: %v", s.path, err)
	}
	indexed, err := parseSeqKey(tx.Bucket(bucketMeta).Get(keyIndexed))
	if err != nil {
		return err
	}
	events := tx.Bucket(bucketEvents)
	ids, blocks := tx.Bucket(bucketIDs), tx.Bucket(bucketIDBlocks)
	idem, idemBlocks := tx.Bucket(bucketIdem), tx.Bucket(bucketIdemBlocks)
	removed, err := checkRemovals(tx) // remove.go: 0 when no run was removed
	if err != nil {
		return err
	}
	var want, keyed, missing uint64
	c := events.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if want%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		want++
		seq, err := parseSeqKey(k)
		if err != nil {
			return err
		}
		if seq > want && removed > 0 {
			missing += seq - want // removed with their runs
			want = seq
		}
		if seq != want {
			return corrupt("event %d follows event %d", seq, want-1)
		}
		r, err := parseRecord(v, tx.Size())
		if err != nil {
			return corrupt("event %d: %v", seq, err)
		}
		if seq > indexed {
			continue
		}
		if got, found, err := lookupKey(ids, blocks, r.id); err != nil {
			return err
		} else if !found || got != seq {
			return corrupt("event %d: id %q maps to %d (found: %v)", seq, r.id, got, found)
		}
		if len(r.idem) > 0 {
			keyed++
			if got, found, err := lookupKey(idem, idemBlocks, idemKey(string(r.run), string(r.idem))); err != nil {
				return err
			} else if !found || got != seq {
				return corrupt("event %d: idempotency key %q maps to %d (found: %v)", seq, r.idem, got, found)
			}
		}
	}
	if removed > 0 {
		high, err := parseSeqKey(tx.Bucket(bucketMeta).Get(keyHighSeq))
		if err != nil {
			return corrupt("removed runs, and no highest seq: %v", err)
		}
		if high > want {
			missing += high - want
			want = high
		}
	}
	if missing != removed {
		return corrupt("%d seqs are missing, and %d events were removed", missing, removed)
	}
	if indexed > want {
		return corrupt("index watermark %d is past the last event %d", indexed, want)
	}
	inBlocks, err := checkIDBlocks(ctx, blocks)
	if err != nil {
		return err
	}
	if n := uint64(ids.Stats().KeyN) + inBlocks; n != indexed-removed {
		return corrupt("the ids index holds %d entries for %d indexed events", n, indexed-removed)
	}
	if inBlocks, err = checkIDBlocks(ctx, idemBlocks); err != nil {
		return err
	}
	if n := uint64(idem.Stats().KeyN) + inBlocks; n != keyed {
		return corrupt("the idempotency index holds %d entries for %d keyed events", n, keyed)
	}
	for _, ix := range indexes {
		if err := checkIndex(ctx, tx.Bucket(indexBuckets[ix]), events, indexed, removed, func(r *record) []byte { return r.attr(ix) }); err != nil {
			return corrupt("index %s: %v", indexBuckets[ix], err)
		}
	}
	// Artifacts are content-addressed: each one's data hashes to its key.
	c = tx.Bucket(bucketArtifacts).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		_, data, err := parseArtifact(v)
		if err != nil {
			return corrupt("artifact %x: %v", clip(k), err)
		}
		if sum := sha256.Sum256(data); len(k) != len(sum) || !bytes.Equal(k, sum[:]) {
			return corrupt("artifact %x: its data does not match its digest", clip(k))
		}
	}
	return nil
}

// checkIndex checks that b posts each event up to indexed exactly once,
// under the value attr gives for its record; removed of those seqs were
// removed.
func checkIndex(ctx context.Context, b, events *bolt.Bucket, indexed, removed uint64, attr func(*record) []byte) error {
	seen := make([]bool, indexed+1)
	var n uint64
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		l, m := binary.Uvarint(k)
		if m <= 0 || uint64(len(k)) != uint64(m)+l+8 {
			return corrupt("malformed key %x", clip(k))
		}
		value, first := k[m:m+int(l)], binary.BigEndian.Uint64(k[m+int(l):])
		var ierr error
		err := eachPosted(first, v, func(seq uint64) bool {
			if seq == 0 || seq > indexed || seen[seq] {
				ierr = corrupt("seq %d posted under %q is out of range or twice", seq, clip(value))
				return false
			}
			seen[seq] = true
			n++
			r, err := parseRecord(events.Get(seqKey(seq)), events.Tx().Size())
			if err != nil {
				ierr = err
				return false
			}
			if !bytes.Equal(attr(&r), value) {
				ierr = corrupt("event %d is posted under %q but has %q", seq, clip(value), clip(attr(&r)))
				return false
			}
			return true
		})
		if err == nil {
			err = ierr
		}
		if err != nil {
			return err
		}
	}
	if n != indexed-removed {
		return corrupt("%d events posted, %d indexed", n, indexed-removed)
	}
	return nil
}

// checkIDBlocks checks that each block of an index by key (ids,
// idempotency keys) decodes and that their ranges increase without
// overlapping, and returns how many keys they hold.
func checkIDBlocks(ctx context.Context, blocks *bolt.Bucket) (uint64, error) {
	var n uint64
	var end []byte // the last id of the block before
	c := blocks.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if end != nil && bytes.Compare(k, end) <= 0 {
			return 0, corrupt("ids block %q starts before the end of the one before, %q", clip(k), clip(end))
		}
		err := eachInBlock(k, v, func(id []byte, _ uint64) bool {
			end = append(end[:0], id...)
			n++
			return true
		})
		if err != nil {
			return 0, err
		}
	}
	return n, nil
}
