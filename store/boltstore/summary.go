package boltstore

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"iter"
	"math"
	"slices"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/driver"
	bolt "go.etcd.io/bbolt"
)

// Run and thread summaries (store.Summary, counted by driver.Fold). They
// live in their own buckets:
//
//	sum.run, sum.thread             id → summary record (appendSummary)
//	sum.run.last, sum.thread.last   LastSeq (uint64 BE) ‖ id → empty: newest first
//	sum.task                        task id → task state (appendTaskState)
//	meta "summarized"               the seq through which summaries are complete
//
// Like the index entries (tail.go), they are written to the file at the
// index flush, not in every commit: the writer folds each group's events
// into the summaries it holds in memory (those of the runs, threads and
// tasks touched since the last flush, read from the file once each), and
// the flush writes the changed ones and moves "summarized" in the same
// transaction as the index watermark. Listings merge the changed ones
// (Store.sums) with the file. A commit thus costs no summary write, and a
// flush one write per run, thread and task touched, however many events
// touched it. After a crash the file's summaries end at "summarized", and
// Open folds the events after it, as it does for a file written before
// summaries existed (or by a version that did not keep them: no buckets,
// or a "summarized" behind its last event), summarizeBatch events per
// transaction, before it takes appends.
//
//	meta "summarized.bytes"         present: the summaries count Bytes
//
// Summaries written before they counted their events' bytes (record
// versions 1 and 2) are in a file without "summarized.bytes": Open counts
// the bytes of the events through "summarized" for every run and thread,
// reading the records' headers only, and writes them into the summaries
// and the key in one transaction (countSummaryBytes). A read-only handle
// lists those summaries with Bytes 0 (plus the bytes of any events folded
// in memory).
var (
	bucketSumRun        = []byte("sum.run")
	bucketSumRunLast    = []byte("sum.run.last")
	bucketSumThread     = []byte("sum.thread")
	bucketSumThreadLast = []byte("sum.thread.last")
	bucketSumTask       = []byte("sum.task")
	keySummarized       = []byte("summarized")
	keySummaryBytes     = []byte("summarized.bytes")

	sumBuckets = [...][]byte{bucketSumRun, bucketSumRunLast, bucketSumThread, bucketSumThreadLast, bucketSumTask}
)

// summarizeBatch is how many events one transaction of the backfill reads
// (a variable for tests).
var summarizeBatch = 20000

const (
	runs    = 0
	threads = 1
)

// sumBatch folds the events of one write transaction into the summaries:
// each summary and task state it touches is read once, changed in memory
// and written once by commit.
type sumBatch struct {
	tx    *bolt.Tx
	sums  [2]map[string]*sumEntry
	tasks map[string]*taskEntry
	last  uint64
	key   []byte // bbolt copies keys (not values): one buffer serves them all
}

// keyOf returns id as a key in b's buffer, valid until the next call.
func (b *sumBatch) keyOf(id string) []byte {
	b.key = append(b.key[:0], id...)
	return b.key
}

// lastKeyOf is lastKey in b's buffer.
func (b *sumBatch) lastKeyOf(seq uint64, id string) []byte {
	b.key = append(binary.BigEndian.AppendUint64(b.key[:0], seq), id...)
	return b.key
}

type sumEntry struct {
	s     store.Summary
	old   uint64 // the LastSeq in the file's index, 0 for a new summary
	dirty bool   // changed since it was read from the file
}

type taskEntry struct {
	st           driver.TaskState
	known, dirty bool
}

func newSumBatch(tx *bolt.Tx) *sumBatch {
	return &sumBatch{tx: tx}
}

// read is the writer's work on summaries for a new event e of the open
// group, inside its transaction: it reads from the file, once, the
// summaries and task state e will change. They are changed by
// foldSummaries once the group is committed, under Store.mu: the title e
// may give a summary that has none is computed here, before that lock.
func (b *sumBatch) read(e *driver.Entry) error {
	if driver.NeedsTask(e) {
		if _, err := b.task(e.TaskID); err != nil {
			return err
		}
	}
	for kind, id := range [2]string{runs: e.RunID, threads: e.ThreadID} {
		if id != "" {
			se, err := b.summary(kind, id)
			if err != nil {
				return err
			}
			if se.s.Title == "" {
				e.Title()
			}
		}
	}
	return nil
}

// foldSummaries folds the events of the group just committed into the
// summaries summarize read, and shows the changed summaries to listings
// (Store.sums). The caller holds Store.mu for writing.
func (w *writer) foldSummaries(now int64) {
	b, s := w.sums, w.s
	t := time.Unix(0, now).UTC()
	for _, r := range w.live {
		for i := range r.res {
			if !r.res[i].Stored() { // a duplicate, or left out (AppendIfNew)
				continue
			}
			e := &r.entries[i]
			b.add(e, r.res[i].Seq, t) // every entry it needs is read: no error, no file access
			for kind, id := range [2]string{runs: e.RunID, threads: e.ThreadID} {
				if id != "" {
					if s.sums[kind] == nil {
						s.sums[kind] = make(map[string]store.Summary)
					}
					s.sums[kind][id] = b.sums[kind][id].s
				}
			}
		}
	}
}

func (b *sumBatch) add(e *driver.Entry, seq uint64, t time.Time) error {
	var d driver.Delta
	if driver.NeedsTask(e) {
		te, err := b.task(e.TaskID)
		if err != nil {
			return err
		}
		var next driver.TaskState
		var changed bool
		if next, changed, d = driver.TaskStep(e, te.st, te.known); changed {
			te.st, te.known, te.dirty = next, true, true
		}
	}
	for kind, id := range [2]string{runs: e.RunID, threads: e.ThreadID} {
		if id == "" {
			continue
		}
		se, err := b.summary(kind, id)
		if err != nil {
			return err
		}
		driver.Fold(&se.s, id, e, seq, t, d)
		se.dirty = true
	}
	b.last = seq
	return nil
}

func (b *sumBatch) task(id string) (*taskEntry, error) {
	if te, ok := b.tasks[id]; ok {
		return te, nil
	}
	if b.tasks == nil {
		b.tasks = map[string]*taskEntry{}
	}
	te := &taskEntry{}
	if v := b.tx.Bucket(bucketSumTask).Get(b.keyOf(id)); v != nil {
		st, err := parseTaskState(v)
		if err != nil {
			return nil, corrupt("summary of task %q: %v", clip([]byte(id)), err)
		}
		te.st, te.known = st, true
	}
	b.tasks[id] = te
	return te, nil
}

func (b *sumBatch) summary(kind int, id string) (*sumEntry, error) {
	if se, ok := b.sums[kind][id]; ok {
		return se, nil
	}
	if b.sums[kind] == nil {
		b.sums[kind] = map[string]*sumEntry{}
	}
	se := &sumEntry{}
	if v := b.tx.Bucket(sumBuckets[2*kind]).Get(b.keyOf(id)); v != nil {
		s, err := parseSummary(id, v)
		if err != nil {
			return nil, err
		}
		se.s, se.old = s, s.LastSeq
	}
	b.sums[kind][id] = se
	return se, nil
}

// commit writes what the batch changed, in key order.
func (b *sumBatch) commit() error {
	if b.last == 0 {
		return nil
	}
	for kind, m := range b.sums {
		sums, idx := b.tx.Bucket(sumBuckets[2*kind]), b.tx.Bucket(sumBuckets[2*kind+1])
		for _, id := range sortedKeys(m) {
			se := m[id]
			if !se.dirty {
				continue
			}
			if se.old != 0 {
				if err := idx.Delete(b.lastKeyOf(se.old, id)); err != nil {
					return err
				}
			}
			if err := idx.Put(b.lastKeyOf(se.s.LastSeq, id), nil); err != nil {
				return err
			}
			// bbolt keeps values until the commit: a new one each time.
			if err := sums.Put(b.keyOf(id), appendSummary(make([]byte, 0, summarySize(&se.s)), &se.s)); err != nil {
				return err
			}
		}
	}
	tasks := b.tx.Bucket(bucketSumTask)
	for _, id := range sortedKeys(b.tasks) {
		if te := b.tasks[id]; te.dirty {
			if err := tasks.Put(b.keyOf(id), appendTaskState(make([]byte, 0, 1+binary.MaxVarintLen64), te.st)); err != nil {
				return err
			}
		}
	}
	return b.tx.Bucket(bucketMeta).Put(keySummarized, seqKey(b.last))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// openSummaries creates the summary buckets of a file that has none and
// brings the summaries up to the last event. Open calls it before the
// writer starts. A read-only handle is not written to: it folds the
// events after "summarized" in memory when they are few (after a crash),
// and otherwise lists what the file holds.
func (s *Store) openSummaries() error {
	readOnly := s.db.IsReadOnly()
	var through uint64
	build, uncounted := false, false
	// A View first: a write transaction that changes nothing still writes
	// a meta page, and a file that is fine is not written to by Open.
	err := s.db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		have := 0
		for _, name := range sumBuckets {
			if tx.Bucket(name) != nil {
				have++
			}
		}
		v := meta.Get(keySummarized)
		switch {
		case v != nil && have == len(sumBuckets):
			var err error
			through, err = parseSeqKey(v)
			uncounted = meta.Get(keySummaryBytes) == nil
			return err
		case v != nil || have > 0:
			// Some of them: not a file of an older version, a damaged one.
			return corrupt("summaries: %d of %d buckets, watermark present: %v", have, len(sumBuckets), v != nil)
		}
		build = true // a file of a version without summaries
		return nil
	})
	if err == nil && build && readOnly {
		return nil
	}
	if err == nil && build {
		err = s.db.Update(func(tx *bolt.Tx) error {
			for _, name := range sumBuckets {
				if _, err := tx.CreateBucket(name); err != nil {
					return err
				}
			}
			if err := tx.Bucket(bucketMeta).Put(keySummaryBytes, []byte{1}); err != nil {
				return err
			}
			return tx.Bucket(bucketMeta).Put(keySummarized, seqKey(0))
		})
	}
	if err != nil {
		return err
	}
	if through > s.last {
		return corrupt("summaries are complete through event %d, past the last event %d", through, s.last)
	}
	if uncounted && !readOnly {
		if err := s.db.Update(func(tx *bolt.Tx) error { return countSummaryBytes(tx, through) }); err != nil {
			return err
		}
	}
	if !build && through < s.last && s.last-through <= uint64(4*max(s.opts.IndexBatch, s.opts.MaxBatch)) {
		// After a crash: the events after the last flush are folded in
		// memory, as the writer would have, and written by the next
		// flush; Open writes nothing (a file opened from its older meta
		// page may be damaged elsewhere, and is not written to by Open).
		// A longer gap (a file written with a larger IndexBatch) is
		// written in batches below, so that memory stays bounded.
		return s.db.View(func(tx *bolt.Tx) error {
			b := newSumBatch(tx)
			defer func() { b.tx = nil }()
			c := tx.Bucket(bucketEvents).Cursor()
			want := through + 1
			for k, v := c.Seek(seqKey(want)); want <= s.last; k, v = c.Next() {
				if k == nil {
					return corrupt("events after %d are missing", want-1)
				}
				seq, err := parseSeqKey(k)
				if err != nil {
					return err
				}
				if seq != want {
					return corrupt("event %d follows event %d", seq, want-1)
				}
				r, err := parseRecord(v, tx.Size())
				if err != nil {
					return corrupt("event %d: %v", seq, err)
				}
				e := entryOfRecord(&r)
				if err := b.add(&e, seq, time.Unix(0, r.time).UTC()); err != nil {
					return err
				}
				for kind, id := range [2]string{runs: e.RunID, threads: e.ThreadID} {
					if id != "" {
						if s.sums[kind] == nil {
							s.sums[kind] = make(map[string]store.Summary)
						}
						s.sums[kind][id] = b.sums[kind][id].s
					}
				}
				want = seq + 1
			}
			s.w.sums = b
			return nil
		})
	}
	for !readOnly && through < s.last {
		err := s.db.Update(func(tx *bolt.Tx) error {
			b := newSumBatch(tx)
			c := tx.Bucket(bucketEvents).Cursor()
			n := 0
			for k, v := c.Seek(seqKey(through + 1)); k != nil && n < summarizeBatch; k, v = c.Next() {
				seq, err := parseSeqKey(k)
				if err != nil {
					return err
				}
				r, err := parseRecord(v, tx.Size())
				if err != nil {
					return corrupt("event %d: %v", seq, err)
				}
				e := entryOfRecord(&r)
				if err := b.add(&e, seq, time.Unix(0, r.time).UTC()); err != nil {
					return err
				}
				through = seq
				n++
			}
			if n == 0 {
				return corrupt("events after %d are missing", through)
			}
			return b.commit()
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// countSummaryBytes sets the Bytes of every summary of a file whose
// summaries do not count them (see the summary buckets above) from the
// events through seq through, which the summaries fold, and marks the file
// as counting them: one pass over the events that reads no message.
func countSummaryBytes(tx *bolt.Tx, through uint64) error {
	var sizes [2]map[string]int64
	sizes[runs], sizes[threads] = map[string]int64{}, map[string]int64{}
	c := tx.Bucket(bucketEvents).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		seq, err := parseSeqKey(k)
		if err != nil {
			return err
		}
		if seq > through {
			break
		}
		r, err := parseRecord(v, tx.Size())
		if err != nil {
			return corrupt("event %d: %v", seq, err)
		}
		sizes[runs][string(r.run)] += int64(len(r.raw))
		sizes[threads][string(r.thread)] += int64(len(r.raw))
	}
	for kind := range sizes {
		b := tx.Bucket(sumBuckets[2*kind])
		recs := map[string][]byte{}
		err := b.ForEach(func(k, v []byte) error {
			sum, err := parseSummary(string(k), v)
			if err != nil {
				return err
			}
			sum.Bytes = sizes[kind][string(k)]
			recs[string(k)] = appendSummary(make([]byte, 0, summarySize(&sum)), &sum)
			return nil
		})
		if err != nil {
			return err
		}
		for _, id := range sortedKeys(recs) { // not during ForEach, which a Put disturbs
			if err := b.Put([]byte(id), recs[id]); err != nil {
				return err
			}
		}
	}
	return tx.Bucket(bucketMeta).Put(keySummaryBytes, []byte{1})
}

// entryOfRecord returns the entry of a stored event. The record's header
// has the indexed fields; attempt, channel and whether it ends its task
// come from the message. A message that does not decode (the store
// validated it; a later decoder may be stricter) counts as an event of
// attempt 1 without a channel. The entry's Raw is the record's message
// bytes (their length counts in Summary.Bytes): it points into the file's
// mapping, valid until the transaction ends.
func entryOfRecord(r *record) driver.Entry {
	if m, err := (store.Event{Raw: r.raw}).Message(); err == nil {
		return driver.EntryOf(m, r.raw)
	}
	return driver.Entry{
		Raw: r.raw, ID: string(r.id), RunID: string(r.run), ThreadID: string(r.thread), TaskID: string(r.task),
		AgentID: string(r.agent), Type: protocol.Type(r.typ), Attempt: 1,
	}
}

// Runs implements store.Lister.
func (s *Store) Runs(ctx context.Context, q store.ListQuery) iter.Seq2[store.Summary, error] {
	return s.list(ctx, q, runs)
}

// Threads implements store.Lister.
func (s *Store) Threads(ctx context.Context, q store.ListQuery) iter.Seq2[store.Summary, error] {
	return s.list(ctx, q, threads)
}

// list yields the summaries of kind newest first, a page at a time, each
// page read in its own short read transaction.
func (s *Store) list(ctx context.Context, q store.ListQuery, kind int) iter.Seq2[store.Summary, error] {
	return func(yield func(store.Summary, error) bool) {
		if err := q.Validate(); err != nil {
			yield(store.Summary{}, err)
			return
		}
		before, left := q.Before, q.Limit
		for {
			n := driver.PageSize
			if left > 0 && left < n {
				n = left
			}
			page, err := s.sumPage(ctx, kind, before, n)
			for _, sum := range page {
				driver.Listed(&sum)
				if !yield(sum, nil) {
					return
				}
			}
			if err != nil {
				yield(store.Summary{}, err)
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

func (s *Store) sumPage(ctx context.Context, kind int, before uint64, n int) ([]store.Summary, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The summaries changed since the last flush, newest first: their
	// LastSeq is past every summary in the file, whose entries for them
	// are older and skipped.
	s.mu.RLock()
	closed := s.closed
	var pend []store.Summary
	var skip map[string]store.Summary
	if m := s.sums[kind]; len(m) > 0 {
		skip = make(map[string]store.Summary, len(m))
		for id, sum := range m {
			skip[id] = sum
			if before == 0 || sum.LastSeq < before {
				pend = append(pend, sum)
			}
		}
	}
	s.mu.RUnlock()
	if closed {
		return nil, store.ErrClosed
	}
	slices.SortFunc(pend, func(a, b store.Summary) int { return cmp.Compare(b.LastSeq, a.LastSeq) })
	out := pend[:min(len(pend), n)]
	if len(out) == n {
		return out, nil
	}
	err := s.view("list summaries", func(tx *bolt.Tx) error {
		sums, idx := tx.Bucket(sumBuckets[2*kind]), tx.Bucket(sumBuckets[2*kind+1])
		if sums == nil || idx == nil {
			return ErrNoSummaries
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
				return corrupt("summary index key of %d bytes", len(k))
			}
			seq, id := binary.BigEndian.Uint64(k), k[8:]
			if _, ok := skip[string(id)]; ok {
				continue
			}
			v := sums.Get(id)
			if v == nil {
				return corrupt("summary index names %q, which has no summary", clip(id))
			}
			sum, err := parseSummary(string(id), v)
			if err != nil {
				return err
			}
			if sum.LastSeq != seq {
				return corrupt("summary of %q ends at %d, its index entry at %d", clip(id), sum.LastSeq, seq)
			}
			out = append(out, sum)
		}
		return nil
	})
	return out, err
}

// A summary record:
//
//	[0]   summaryVersion (1, 2 or 3)
//	then  uvarint FirstSeq, LastSeq; varint Created, Updated (Unix ns);
//	      uvarint Events, Tasks, Ended; one byte: the index of Status in
//	      statuses; str RunID, Channel, Owner
//	then, in versions 2 and 3:
//	      str Title; uvarint Waiting; uvarint n ‖ n × str: Agents (all
//	      that the fold keeps: up to 64); one byte 0 (no Failure) or 1,
//	      then str TaskID, AgentID, Code, Message
//	then, in version 3 only:
//	      uvarint Bytes
//
// str is uvarint(len) ‖ bytes. A version 1 record (written before titles,
// agents, failures and waiting tasks were summarized) reads as a summary
// without them, and one of version 1 or 2 as one of 0 bytes; the next
// flush that touches it writes version 3. Open counts the bytes of the
// summaries of a file written before version 3 (countSummaryBytes).
const summaryVersion = 3

var statuses = [...]string{store.StatusActive, store.StatusRunning, store.StatusCompleted, store.StatusFailed, store.StatusCancelled, store.StatusTimedOut}

// summarySize is the most bytes appendSummary appends for s.
func summarySize(s *store.Summary) int {
	n := 3 + 15*binary.MaxVarintLen64 + len(s.RunID) + len(s.Channel) + len(s.Owner) + len(s.Title)
	for _, a := range s.Agents {
		n += binary.MaxVarintLen64 + len(a)
	}
	if f := s.Failure; f != nil {
		n += 4*binary.MaxVarintLen64 + len(f.TaskID) + len(f.AgentID) + len(f.Code) + len(f.Message)
	}
	return n
}

func appendStr(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendSummary(b []byte, s *store.Summary) []byte {
	b = append(b, summaryVersion)
	b = binary.AppendUvarint(b, s.FirstSeq)
	b = binary.AppendUvarint(b, s.LastSeq)
	b = binary.AppendVarint(b, s.Created.UnixNano())
	b = binary.AppendVarint(b, s.Updated.UnixNano())
	b = binary.AppendUvarint(b, uint64(s.Events))
	b = binary.AppendUvarint(b, uint64(s.Tasks))
	b = binary.AppendUvarint(b, uint64(s.Ended))
	b = append(b, byte(max(slices.Index(statuses[:], s.Status), 0)))
	b = appendStr(b, s.RunID)
	b = appendStr(b, s.Channel)
	b = appendStr(b, s.Owner)
	b = appendStr(b, s.Title)
	b = binary.AppendUvarint(b, uint64(s.Waiting))
	b = binary.AppendUvarint(b, uint64(len(s.Agents)))
	for _, a := range s.Agents {
		b = appendStr(b, a)
	}
	if f := s.Failure; f == nil {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		b = appendStr(b, f.TaskID)
		b = appendStr(b, f.AgentID)
		b = appendStr(b, string(f.Code))
		b = appendStr(b, f.Message)
	}
	return binary.AppendUvarint(b, uint64(s.Bytes))
}

// parseSummary reads a summary record as the fold keeps it (all its
// agents); listings pass it through driver.Listed.
func parseSummary(id string, v []byte) (store.Summary, error) {
	bad := func(what string) (store.Summary, error) {
		return store.Summary{}, corrupt("summary of %q: %s", clip([]byte(id)), what)
	}
	if len(v) == 0 || v[0] < 1 || v[0] > summaryVersion {
		return bad("unknown version")
	}
	version := v[0]
	p := v[1:]
	u := func() uint64 {
		x, n := binary.Uvarint(p)
		if n <= 0 {
			p = nil
			return 0
		}
		p = p[n:]
		return x
	}
	i := func() int64 {
		x, n := binary.Varint(p)
		if n <= 0 {
			p = nil
			return 0
		}
		p = p[n:]
		return x
	}
	s := store.Summary{ID: id}
	s.FirstSeq, s.LastSeq = u(), u()
	s.Created, s.Updated = time.Unix(0, i()).UTC(), time.Unix(0, i()).UTC()
	s.Events, s.Tasks, s.Ended = int(u()), int(u()), int(u())
	if len(p) == 0 || int(p[0]) >= len(statuses) {
		return bad("bad status")
	}
	s.Status = statuses[p[0]]
	p = p[1:]
	ok := true
	str := func() string {
		n := u()
		if p == nil || n > uint64(len(p)) {
			ok = false
			return ""
		}
		x := string(p[:n])
		p = p[n:]
		return x
	}
	s.RunID, s.Channel, s.Owner = str(), str(), str()
	if version >= 2 && ok {
		s.Title = str()
		s.Waiting = int(u())
		n := u()
		if p == nil || n > uint64(len(p)) {
			return bad("malformed record")
		}
		for range n {
			s.Agents = append(s.Agents, str())
		}
		switch {
		case len(p) == 0:
			ok = false
		case p[0] == 1:
			p = p[1:]
			f := &store.Failure{TaskID: str(), AgentID: str()}
			f.Code, f.Message = protocol.Code(str()), str()
			s.Failure = f
		case p[0] == 0:
			p = p[1:]
		default:
			ok = false
		}
	}
	if version >= 3 && ok {
		n := u()
		if n > math.MaxInt64 {
			return bad("malformed record")
		}
		s.Bytes = int64(n)
	}
	if !ok || p == nil || len(p) != 0 || s.FirstSeq == 0 || s.LastSeq < s.FirstSeq {
		return bad("malformed record")
	}
	return s, nil
}

// A task state: one byte of flags (1: ended, 2: waiting, never both),
// then uvarint attempt. Files written before questions were summarized
// have only flags 0 and 1.
func appendTaskState(b []byte, st driver.TaskState) []byte {
	var f byte
	if st.Ended {
		f = 1
	}
	if st.Waiting {
		f |= 2
	}
	return binary.AppendUvarint(append(b, f), uint64(st.Attempt))
}

func parseTaskState(v []byte) (driver.TaskState, error) {
	if len(v) < 2 || v[0] > 2 {
		return driver.TaskState{}, errors.New("malformed task state")
	}
	a, n := binary.Uvarint(v[1:])
	if n <= 0 || n != len(v)-1 || a > math.MaxInt32 {
		return driver.TaskState{}, errors.New("malformed task state")
	}
	return driver.TaskState{Ended: v[0] == 1, Waiting: v[0] == 2, Attempt: int(a)}, nil
}
