package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"iter"
	"slices"
	"time"

	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/driver"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Removal (store.Remover). RemoveRuns is a job of the writer (writer.go),
// run between two groups: it first writes the index tail and the
// summaries held in memory to the file (flush.go), so that every entry of
// the runs' events is in the file, then, in one transaction, deletes the
// events, their entries in every index (ids and idempotency keys, single
// or in blocks; the posting lists by run, thread, task and agent), the
// runs' summaries, and writes the summaries and task states driver.Refold
// gives and a tombstone per run:
//
//	tombstones        run id → tombstone record (appendTombstone)
//	tombstones.last   LastSeq (uint64 BE) ‖ run id → empty: newest first
//	meta "highseq"    the seq of the newest event ever appended
//	meta "removed"    how many events were removed (uint64 BE), for Check
//
// The buckets and the key are made at the first removal, so files of
// earlier versions open unchanged. Since seqs are not reused, the events
// bucket then has gaps; "highseq" keeps LastSeq when the newest events
// are gone. Reads, Open and Check accept gaps in a file with tombstones:
// Check then requires the missing seqs to be as many as the tombstones
// count. The pages the events and entries took go to bbolt's free list,
// for later appends; the file does not shrink.
var (
	bucketTombstones    = []byte("tombstones")
	bucketTombstoneLast = []byte("tombstones.last")
	keyHighSeq          = []byte("highseq")
	keyRemoved          = []byte("removed")
)

var _ store.Remover = (*Store)(nil)

// loadRemovals reads, at Open, whether runs were removed, and LastSeq
// when the newest events were.
func (s *Store) loadRemovals(tx *bolt.Tx) error {
	if tx.Bucket(bucketTombstones) == nil {
		return nil
	}
	s.removals.Store(true)
	if v := tx.Bucket(bucketMeta).Get(keyHighSeq); v != nil {
		high, err := parseSeqKey(v)
		if err != nil {
			return err
		}
		s.last = max(s.last, high)
	}
	return nil
}

// RemoveRuns implements store.Remover. It waits for the appends queued
// before it, and appends queued after it wait for it.
func (s *Store) RemoveRuns(ctx context.Context, runs []string, why store.Removal) ([]store.Tombstone, error) {
	if s.opts.ReadOnly {
		return nil, s.readOnly("remove runs")
	}
	runs, err := store.CheckRemoval(runs)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil || len(runs) == 0 {
		return nil, err
	}
	var out []store.Tombstone
	r := getRequest()
	r.ctx = ctx
	r.job = func() error {
		var err error
		out, err = s.w.remove(runs, why)
		return err
	}
	if !s.q.push(r) {
		r.release()
		return nil, store.ErrClosed
	}
	select {
	case <-r.done:
		err := r.err
		r.release()
		if err != nil {
			return nil, err
		}
		return out, nil
	case <-ctx.Done():
		// The writer may still remove them: the tombstones say.
		return nil, ctx.Err()
	}
}

// runJob runs the job r alone, unless its caller has given up.
func (w *writer) runJob(r *request) {
	if err := r.ctx.Err(); err != nil {
		r.finish(err)
		return
	}
	r.finish(r.job())
}

// remove is RemoveRuns on the writer goroutine.
func (w *writer) remove(runs []string, why store.Removal) ([]store.Tombstone, error) {
	s := w.s
	if err := s.brokenErr(); err != nil {
		return nil, err
	}
	if err := w.flushAll(); err != nil {
		return nil, err
	}
	now := s.opts.Clock().UTC()
	var out []store.Tombstone
	var maxID, maxIdem []byte
	wasRemoved := s.removals.Load()
	s.removals.Store(true) // before the commit: readers meet the gaps as soon as it is done
	err := w.update("remove runs", func(tx *bolt.Tx) error {
		rm := &removal{tx: tx, now: now, why: why}
		var err error
		if out, err = rm.runs(runs, s.last); err != nil {
			return err
		}
		if maxID, err = lastKey(tx.Bucket(bucketIDs), tx.Bucket(bucketIDBlocks)); err != nil {
			return err
		}
		maxIdem, err = lastKey(tx.Bucket(bucketIdem), tx.Bucket(bucketIdemBlocks))
		return err
	})
	if err != nil {
		if !wasRemoved {
			s.removals.Store(s.hasTombstones())
		}
		if errors.Is(err, berrors.ErrDatabaseNotOpen) {
			err = store.ErrClosed
		}
		return nil, err
	}
	w.maxID, w.maxIdem = maxID, maxIdem
	return out, nil
}

// flushAll writes to the file every index entry and summary held in
// memory: the index tail with its summaries (flush.go), and summaries
// folded without a tail (after a crash, see openSummaries).
func (w *writer) flushAll() error {
	if w.plan != nil || len(w.s.tail.entries) > 0 {
		if err := w.flush(); err != nil {
			return err
		}
	}
	if w.sums == nil || w.sums.last == 0 {
		return nil
	}
	err := w.update("write summaries", func(tx *bolt.Tx) error {
		w.sums.tx = tx
		defer func() { w.sums.tx = nil }()
		return w.sums.commit()
	})
	if err != nil {
		return err
	}
	w.sums = nil
	w.s.mu.Lock()
	w.s.sums = [2]map[string]store.Summary{}
	w.s.mu.Unlock()
	return nil
}

// hasTombstones reports whether the file has tombstones.
func (s *Store) hasTombstones() bool {
	has := false
	_ = s.view("read tombstones", func(tx *bolt.Tx) error { has = tx.Bucket(bucketTombstones) != nil; return nil })
	return has
}

// removal is one RemoveRuns transaction.
type removal struct {
	tx  *bolt.Tx
	now time.Time
	why store.Removal
}

func (rm *removal) runs(ids []string, high uint64) ([]store.Tombstone, error) {
	tx := rm.tx
	tombs, err := tx.CreateBucketIfNotExists(bucketTombstones)
	if err != nil {
		return nil, err
	}
	tombLast, err := tx.CreateBucketIfNotExists(bucketTombstoneLast)
	if err != nil {
		return nil, err
	}
	if err := tx.Bucket(bucketMeta).Put(keyHighSeq, seqKey(high)); err != nil {
		return nil, err
	}
	// First every check, so that a refused call removes nothing (the
	// transaction is rolled back anyway).
	seqs := make([][]uint64, len(ids))
	for i, run := range ids {
		err := eachIndexed(tx.Bucket(indexBuckets[driver.RunIndex]), run, 0, func(seq uint64) bool {
			seqs[i] = append(seqs[i], seq)
			return true
		})
		if err != nil {
			return nil, err
		}
		if len(seqs[i]) == 0 {
			if tombs.Get([]byte(run)) == nil {
				return nil, &store.RunNotFoundError{RunID: run}
			}
			continue
		}
		v := tx.Bucket(bucketSumRun).Get([]byte(run))
		if v == nil {
			return nil, corrupt("run %q has events and no summary", clip([]byte(run)))
		}
		sum, err := parseSummary(run, v)
		if err != nil {
			return nil, err
		}
		if err := rm.why.Allows(sum); err != nil {
			return nil, err
		}
	}
	out := make([]store.Tombstone, len(ids))
	var removed []driver.Entry
	unpost := map[driver.Index]map[string][]uint64{}
	var evIDs, idems [][]byte
	events := tx.Bucket(bucketEvents)
	for i, run := range ids {
		if len(seqs[i]) == 0 {
			ts, err := parseTombstone(run, tombs.Get([]byte(run)))
			if err != nil {
				return nil, err
			}
			out[i] = ts
			continue
		}
		ts := store.Tombstone{
			RunID: run, Removed: rm.now, Policy: rm.why.Policy, Note: rm.why.Note, Archive: rm.why.Archive,
			Events: len(seqs[i]), FirstSeq: seqs[i][0], LastSeq: seqs[i][len(seqs[i])-1],
		}
		for _, seq := range seqs[i] {
			r, err := parseRecord(events.Get(seqKey(seq)), tx.Size())
			if err != nil {
				return nil, corrupt("event %d: %v", seq, err)
			}
			ts.Bytes += int64(len(r.raw))
			removed = append(removed, entryOfRecord(&r))
			evIDs = append(evIDs, bytes.Clone(r.id))
			if len(r.idem) > 0 {
				idems = append(idems, idemKey(string(r.run), string(r.idem)))
			}
			for _, ix := range [...]driver.Index{driver.ThreadIndex, driver.TaskIndex, driver.AgentIndex} {
				if unpost[ix] == nil {
					unpost[ix] = map[string][]uint64{}
				}
				a := string(r.attr(ix))
				unpost[ix][a] = append(unpost[ix][a], seq)
			}
			if err := events.Delete(seqKey(seq)); err != nil {
				return nil, err
			}
		}
		if err := dropPostings(tx.Bucket(indexBuckets[driver.RunIndex]), run); err != nil {
			return nil, err
		}
		if v := tombs.Get([]byte(run)); v != nil { // removed before, appended to since
			old, err := parseTombstone(run, v)
			if err != nil {
				return nil, err
			}
			if err := tombLast.Delete(lastKeyOf(old.LastSeq, run)); err != nil {
				return nil, err
			}
		}
		if err := tombs.Put([]byte(run), appendTombstone(nil, &ts)); err != nil {
			return nil, err
		}
		if err := tombLast.Put(lastKeyOf(ts.LastSeq, run), nil); err != nil {
			return nil, err
		}
		if err := putSummary(tx, runs, run, nil); err != nil {
			return nil, err
		}
		out[i] = ts
	}
	if len(removed) > 0 {
		var total uint64
		if v := tx.Bucket(bucketMeta).Get(keyRemoved); v != nil {
			var err error
			if total, err = parseSeqKey(v); err != nil {
				return nil, err
			}
		}
		if err := tx.Bucket(bucketMeta).Put(keyRemoved, seqKey(total+uint64(len(removed)))); err != nil {
			return nil, err
		}
	}
	for ix, byAttr := range unpost {
		for attr, seqs := range byAttr {
			slices.Sort(seqs)
			if err := unpostSeqs(tx.Bucket(indexBuckets[ix]), attr, seqs); err != nil {
				return nil, err
			}
		}
	}
	if err := unkey(tx.Bucket(bucketIDs), tx.Bucket(bucketIDBlocks), evIDs); err != nil {
		return nil, err
	}
	if err := unkey(tx.Bucket(bucketIdem), tx.Bucket(bucketIdemBlocks), idems); err != nil {
		return nil, err
	}
	return out, rm.refold(removed)
}

// refold writes the summaries and task states the removal changes.
func (rm *removal) refold(removed []driver.Entry) error {
	if len(removed) == 0 {
		return nil
	}
	tx := rm.tx
	events := tx.Bucket(bucketEvents)
	ch, err := driver.Refold(removed, func(ix driver.Index, value string) ([]driver.Stored, error) {
		var out []driver.Stored
		var ferr error
		err := eachIndexed(tx.Bucket(indexBuckets[ix]), value, 0, func(seq uint64) bool {
			r, err := parseRecord(events.Get(seqKey(seq)), tx.Size())
			if err != nil {
				ferr = corrupt("event %d: %v", seq, err)
				return false
			}
			out = append(out, driver.Stored{Seq: seq, Time: time.Unix(0, r.time).UTC(), Entry: entryOfRecord(&r)})
			return true
		})
		return out, errors.Join(err, ferr)
	})
	if err != nil {
		return err
	}
	for kind, m := range [2]map[string]*store.Summary{runs: ch.Runs, threads: ch.Threads} {
		for _, id := range sortedKeys(m) {
			if err := putSummary(tx, kind, id, m[id]); err != nil {
				return err
			}
		}
	}
	tasks := tx.Bucket(bucketSumTask)
	for _, id := range sortedKeys(ch.Tasks) {
		var err error
		if st := ch.Tasks[id]; st == nil {
			err = tasks.Delete([]byte(id))
		} else {
			err = tasks.Put([]byte(id), appendTaskState(nil, *st))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// putSummary replaces the summary of id (kind runs or threads) with sum,
// or deletes it when sum is nil, with its entry in the newest-first index.
func putSummary(tx *bolt.Tx, kind int, id string, sum *store.Summary) error {
	sums, idx := tx.Bucket(sumBuckets[2*kind]), tx.Bucket(sumBuckets[2*kind+1])
	if v := sums.Get([]byte(id)); v != nil {
		old, err := parseSummary(id, v)
		if err != nil {
			return err
		}
		if err := idx.Delete(lastKeyOf(old.LastSeq, id)); err != nil {
			return err
		}
	}
	if sum == nil {
		return sums.Delete([]byte(id))
	}
	if err := idx.Put(lastKeyOf(sum.LastSeq, id), nil); err != nil {
		return err
	}
	return sums.Put([]byte(id), appendSummary(make([]byte, 0, summarySize(sum)), sum))
}

func lastKeyOf(seq uint64, id string) []byte {
	return append(binary.BigEndian.AppendUint64(nil, seq), id...)
}

// dropPostings deletes every posting list of attr in the index b.
func dropPostings(b *bolt.Bucket, attr string) error {
	prefix := attrPrefix(attr)
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil; k, _ = c.Next() {
		if _, ok := postingFirst(k, prefix); !ok {
			break
		}
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// unpostSeqs takes seqs (sorted) out of the posting lists of attr in the
// index b: each list that holds some is rewritten without them, under the
// key of its new first seq, or deleted when none stay.
func unpostSeqs(b *bolt.Bucket, attr string, seqs []uint64) error {
	prefix := attrPrefix(attr)
	missing := func() error {
		return corrupt("event %d is not posted under %q", seqs[0], clip([]byte(attr)))
	}
	for len(seqs) > 0 {
		c := b.Cursor()
		want := postingKey(attr, seqs[0])
		k, v := c.Seek(want)
		if k == nil {
			k, v = c.Last()
		} else if !bytes.Equal(k, want) {
			k, v = c.Prev()
		}
		first, ok := postingFirst(k, prefix)
		if !ok {
			return missing()
		}
		var posted []uint64
		if err := eachPosted(first, v, func(seq uint64) bool { posted = append(posted, seq); return true }); err != nil {
			return err
		}
		// The list holds seqs from first to its last: each of seqs in
		// that range must be in it.
		keep := posted[:0:0]
		for _, seq := range posted {
			if len(seqs) > 0 && seqs[0] == seq {
				seqs = seqs[1:]
			} else {
				keep = append(keep, seq)
			}
			if len(seqs) > 0 && seqs[0] < seq {
				return missing()
			}
		}
		if len(keep) == len(posted) {
			return missing()
		}
		if err := b.Delete(bytes.Clone(k)); err != nil {
			return err
		}
		if len(keep) > 0 {
			if err := b.Put(postingKey(attr, keep[0]), appendPosting(nil, keep)); err != nil {
				return err
			}
		}
	}
	return nil
}

// unkey deletes keys from an index by key (single keys and blocks): a
// single key is deleted, a block that holds some is rewritten without
// them, under its new first key, or deleted when none stay.
func unkey(single, blocks *bolt.Bucket, keys [][]byte) error {
	byBlock := map[string]map[string]bool{}
	for _, k := range keys {
		if single.Get(k) != nil {
			if err := single.Delete(k); err != nil {
				return err
			}
			continue
		}
		c := blocks.Cursor()
		bk, _ := c.Seek(k)
		if bk == nil {
			bk, _ = c.Last()
		} else if !bytes.Equal(bk, k) {
			bk, _ = c.Prev()
		}
		if bk == nil {
			return corrupt("key %q is in no block of its index", clip(k))
		}
		if byBlock[string(bk)] == nil {
			byBlock[string(bk)] = map[string]bool{}
		}
		byBlock[string(bk)][string(k)] = true
	}
	for _, bk := range sortedKeys(byBlock) {
		drop := byBlock[bk]
		var keep []keyed
		err := eachInBlock([]byte(bk), blocks.Get([]byte(bk)), func(id []byte, seq uint64) bool {
			if drop[string(id)] {
				delete(drop, string(id))
			} else {
				keep = append(keep, keyed{string(id), seqKey(seq)})
			}
			return true
		})
		if err != nil {
			return err
		}
		if len(drop) > 0 {
			return corrupt("block %q does not hold the keys it should", clip([]byte(bk)))
		}
		if err := blocks.Delete([]byte(bk)); err != nil {
			return err
		}
		if len(keep) > 0 {
			if err := blocks.Put([]byte(keep[0].key), appendIDBlock(nil, keep)); err != nil {
				return err
			}
		}
	}
	return nil
}

// gone is driver.Gone's lookup: the tombstone of run, and whether it has
// no events (none in the file's run index, none in the tail).
func (s *Store) gone(run string) (store.Tombstone, bool, error) {
	if !s.removals.Load() {
		return store.Tombstone{}, false, nil
	}
	ts, found, err := s.tombstone(run)
	if err != nil || !found {
		return ts, false, err
	}
	s.mu.RLock()
	for i := range s.tail.entries {
		if s.tail.entries[i].run == run {
			s.mu.RUnlock()
			return ts, false, nil
		}
	}
	s.mu.RUnlock()
	empty := true
	err = s.view("read", func(tx *bolt.Tx) error {
		return eachIndexed(tx.Bucket(indexBuckets[driver.RunIndex]), run, 0, func(uint64) bool { empty = false; return false })
	})
	return ts, empty, err
}

func (s *Store) tombstone(run string) (store.Tombstone, bool, error) {
	if err := s.checkOpen(); err != nil {
		return store.Tombstone{}, false, err
	}
	var ts store.Tombstone
	found := false
	err := s.view("read tombstone", func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketTombstones)
		if b == nil {
			return nil
		}
		v := b.Get([]byte(run))
		if v == nil {
			return nil
		}
		var err error
		ts, err = parseTombstone(run, v)
		found = err == nil
		return err
	})
	return ts, found, err
}

// Tombstone implements store.Remover.
func (s *Store) Tombstone(ctx context.Context, runID string) (store.Tombstone, error) {
	if err := ctx.Err(); err != nil {
		return store.Tombstone{}, err
	}
	ts, found, err := s.tombstone(runID)
	if err == nil && !found {
		err = &store.RunNotFoundError{RunID: runID}
	}
	return ts, err
}

// Tombstones implements store.Remover, a page at a time, each page read in
// its own read transaction.
func (s *Store) Tombstones(ctx context.Context, q store.ListQuery) iter.Seq2[store.Tombstone, error] {
	return func(yield func(store.Tombstone, error) bool) {
		if err := q.Validate(); err != nil {
			yield(store.Tombstone{}, err)
			return
		}
		before, left := q.Before, q.Limit
		for {
			n := driver.PageSize
			if left > 0 && left < n {
				n = left
			}
			page, err := s.tombPage(ctx, before, n)
			for _, ts := range page {
				if !yield(ts, nil) {
					return
				}
			}
			if err != nil {
				yield(store.Tombstone{}, err)
				return
			}
			if left > 0 {
				if left -= len(page); left == 0 {
					return
				}
			}
			if len(page) < n {
				return
			}
			before = page[len(page)-1].LastSeq
		}
	}
}

func (s *Store) tombPage(ctx context.Context, before uint64, n int) ([]store.Tombstone, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	var out []store.Tombstone
	err := s.view("list tombstones", func(tx *bolt.Tx) error {
		tombs, idx := tx.Bucket(bucketTombstones), tx.Bucket(bucketTombstoneLast)
		if tombs == nil || idx == nil {
			return nil
		}
		c := idx.Cursor()
		var k []byte
		if before == 0 {
			k, _ = c.Last()
		} else if k, _ = c.Seek(seqKey(before)); k == nil {
			k, _ = c.Last()
		} else {
			k, _ = c.Prev()
		}
		for ; k != nil && len(out) < n; k, _ = c.Prev() {
			if len(k) < 8 {
				return corrupt("tombstone index key of %d bytes", len(k))
			}
			run := string(k[8:])
			v := tombs.Get(k[8:])
			if v == nil {
				return corrupt("tombstone index names %q, which has no tombstone", clip(k[8:]))
			}
			ts, err := parseTombstone(run, v)
			if err != nil {
				return err
			}
			out = append(out, ts)
		}
		return nil
	})
	return out, err
}

// A tombstone record: [0] version 1; varint Removed (Unix ns); str
// Policy, Note, Archive; uvarint Events, FirstSeq, LastSeq, Bytes.
func appendTombstone(b []byte, ts *store.Tombstone) []byte {
	b = append(b, 1)
	b = binary.AppendVarint(b, ts.Removed.UnixNano())
	b = appendStr(b, ts.Policy)
	b = appendStr(b, ts.Note)
	b = appendStr(b, ts.Archive)
	b = binary.AppendUvarint(b, uint64(ts.Events))
	b = binary.AppendUvarint(b, ts.FirstSeq)
	b = binary.AppendUvarint(b, ts.LastSeq)
	return binary.AppendUvarint(b, uint64(ts.Bytes))
}

func parseTombstone(run string, v []byte) (store.Tombstone, error) {
	bad := func() (store.Tombstone, error) {
		return store.Tombstone{}, corrupt("tombstone of %q: malformed record", clip([]byte(run)))
	}
	if len(v) == 0 || v[0] != 1 {
		return bad()
	}
	p := v[1:]
	ok := true
	u := func() uint64 {
		x, n := binary.Uvarint(p)
		if n <= 0 {
			ok = false
			return 0
		}
		p = p[n:]
		return x
	}
	str := func() string {
		n := u()
		if !ok || n > uint64(len(p)) {
			ok = false
			return ""
		}
		x := string(p[:n])
		p = p[n:]
		return x
	}
	removed, n := binary.Varint(p)
	if n <= 0 {
		return bad()
	}
	p = p[n:]
	ts := store.Tombstone{RunID: run, Removed: time.Unix(0, removed).UTC()}
	ts.Policy, ts.Note, ts.Archive = str(), str(), str()
	ts.Events, ts.FirstSeq, ts.LastSeq, ts.Bytes = int(u()), u(), u(), int64(u())
	if !ok || len(p) != 0 || ts.Events <= 0 || ts.FirstSeq == 0 || ts.LastSeq < ts.FirstSeq {
		return bad()
	}
	return ts, nil
}

// checkRemovals checks the tombstones and their index, and returns how
// many events were removed (meta "removed"), for Check.
func checkRemovals(tx *bolt.Tx) (uint64, error) {
	tombs, idx := tx.Bucket(bucketTombstones), tx.Bucket(bucketTombstoneLast)
	if tombs == nil {
		return 0, nil
	}
	if idx == nil {
		return 0, corrupt("bucket %q is missing", bucketTombstoneLast)
	}
	n := 0
	err := tombs.ForEach(func(k, v []byte) error {
		ts, err := parseTombstone(string(k), v)
		if err != nil {
			return err
		}
		if idx.Get(lastKeyOf(ts.LastSeq, ts.RunID)) == nil {
			return corrupt("tombstone of %q is not in its index", clip(k))
		}
		n++
		return nil
	})
	if err != nil {
		return 0, err
	}
	if m := idx.Stats().KeyN; m != n {
		return 0, corrupt("the tombstone index holds %d entries for %d tombstones", m, n)
	}
	v := tx.Bucket(bucketMeta).Get(keyRemoved)
	if v == nil {
		return 0, nil
	}
	return parseSeqKey(v)
}
