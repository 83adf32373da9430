package boltstore

import (
	"context"
	"encoding/binary"
	"errors"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/driver"
	bolt "go.etcd.io/bbolt"
)

// request is one Append call on its way to the writer. The caller prepares
// everything that does not need the file (validation, encoding, records,
// checksums, keys, the result slice) so that this work runs in parallel
// with the writer's commit of the group before, and the writer only
// deduplicates, puts and commits. Requests are pooled: an Append that
// gets its answer returns its request, buffers and all, for the next one.
type request struct {
	ctx     context.Context // the Append call's; checked before the commit
	entries []driver.Entry
	items   []item
	buf     []byte // the records of items, back to back
	res     []store.AppendResult
	err     error
	done    chan struct{} // one send when res or err is set
	cond    bool          // AppendIfNew: nothing is stored when the first entry is a duplicate
	job     func() error  // not an append: work the writer runs alone, between groups (remove.go)
}

type item struct {
	rec     []byte // the record, time and checksum filled in at commit
	sum     uint32 // the checksum of the record's body (bodySum)
	idemKey string // the idem bucket key, "" without an idempotency key
}

var requests = sync.Pool{New: func() any { return new(request) }}

// maxPooledBuf is the largest record buffer a pooled request keeps.
const maxPooledBuf = 64 << 10

// getRequest returns a request whose entries the caller fills with
// driver.Prepare(r.entries[:0], ...) and then passes to prepare.
//
// Each request gets a new done channel: a pooled one made by an Append
// inside a testing/synctest bubble belongs to that bubble, and the next
// Append outside it would be a fatal error.
func getRequest() *request {
	r := requests.Get().(*request)
	r.done = make(chan struct{}, 1)
	return r
}

// release returns r to the pool. Only the Append call that received r's
// answer may call it: the writer is done with r then.
func (r *request) release() {
	clear(r.entries)
	clear(r.items)
	r.ctx, r.res, r.err, r.job, r.cond = nil, nil, nil, nil, false
	if cap(r.buf) > maxPooledBuf {
		r.buf = nil
	}
	requests.Put(r)
}

// prepare builds the records, their body checksums and idempotency keys of
// entries, and the result slice the writer fills.
func (r *request) prepare(ctx context.Context, entries []driver.Entry) {
	r.ctx, r.entries = ctx, entries
	if cap(r.items) < len(entries) {
		r.items = make([]item, len(entries))
	}
	r.items = r.items[:len(entries)]
	n := 0
	for i := range entries {
		n += recordSize(&entries[i])
	}
	if cap(r.buf) < n {
		r.buf = make([]byte, 0, n)
	}
	buf := r.buf[:0]
	for i := range entries {
		e := &entries[i]
		start := len(buf)
		buf = appendRecord(buf, e)
		it := &r.items[i]
		it.rec = buf[start:len(buf):len(buf)]
		it.sum = bodySum(it.rec)
		if e.IdempotencyKey != "" {
			it.idemKey = idemKeyString(e.RunID, e.IdempotencyKey)
		}
	}
	r.buf = buf
	r.res = make([]store.AppendResult, len(entries))
}

// finish hands r's answer to its caller.
func (r *request) finish(err error) {
	if err != nil {
		r.res, r.err = nil, err
	}
	r.done <- struct{}{}
}

// writer is the single goroutine that commits appends, a group at a
// time: one bbolt transaction, one commit and its fsync per group. It
// opens the group's transaction as soon as a first request is queued and
// puts each request as it arrives (deduplication, the event records, the
// summaries' reads), while the callers of the last group are still
// building their next messages; when the group is complete (see
// queue.wait and gatherFor) it commits and acknowledges every request.
// Unlike bbolt's DB.Batch it never waits for a lone append: an idle
// writer commits one at once.
type writer struct {
	s        *Store
	batch    []*request        // the group's requests, as taken from the queue
	live     []*request        // those put in the transaction (not given up)
	pendIDs  map[string]uint64 // this group's new events
	pendIdem map[string]uint64
	added    []tailEntry
	dropped  int        // this group's entries left out by AppendIfNew (not duplicates)
	sums     *sumBatch  // the summaries changed since the last flush (summary.go)
	key      [8]byte    // bbolt copies keys: one buffer serves every Put
	plan     *flushPlan // the index flush being prepared (flush.go), or nil
	maxID    []byte     // the largest id in the file's ids index: larger ids are not in it
	maxIdem  []byte     // the same for the idempotency index
	closeErr error      // the final flush's

	// The open group: its transaction, buckets, time and last seq.
	tx               *bolt.Tx
	events           *bolt.Bucket
	ids, idBlocks    *bolt.Bucket
	idem, idemBlocks *bolt.Bucket
	now              int64
	seq              uint64

	lastGroup int           // requests in the last group
	lastTook  time.Duration // how long it took, from its first request to its acknowledgements

	// commits counts every commit of the writer that adds events or
	// beats only (a compaction compares it with the file's transactions,
	// compact.go): groups of appends (groups) and commits of beats alone
	// (beatCommits, presence.go).
	commits, groups, beatCommits  atomic.Uint64
	appended, duplicates, flushes atomic.Uint64
}

func (w *writer) init(s *Store) error {
	w.s = s
	w.pendIDs = make(map[string]uint64)
	w.pendIdem = make(map[string]uint64)
	return s.db.View(func(tx *bolt.Tx) error {
		var err error
		if w.maxID, err = lastKey(tx.Bucket(bucketIDs), tx.Bucket(bucketIDBlocks)); err != nil {
			return err
		}
		w.maxIdem, err = lastKey(tx.Bucket(bucketIdem), tx.Bucket(bucketIdemBlocks))
		return err
	})
}

func (w *writer) run() {
	defer close(w.s.wdone)
	// The writer reads the mapping in every commit: a fault on a damaged
	// page must become a panic that guard recovers, not a fatal error.
	// The setting is this goroutine's, for its whole life.
	debug.SetPanicOnFault(true)
	batch := w.s.opts.IndexBatch
	for {
		// While a compaction copies the file, index flushes wait: the
		// file then changes only by appends, which the swap carries
		// over (compact.go).
		compacting := w.s.cmp.active.Load()
		if w.plan != nil && !compacting && w.s.q.waitOr(w.plan.done) {
			// Nothing to commit: the plan is written as soon as it is
			// ready, not when the next append comes.
			_ = w.writePlan()
		}
		if !w.group() {
			break
		}
		// A flush is planned once the tail holds IndexBatch entries, and
		// written after the first group that finds the plan ready (the
		// groups between stay in the tail), or at once when the tail
		// reaches twice IndexBatch: memory stays bounded however slow
		// the plan. On failure the tail stays in memory and the next
		// plan retries. A damaged file is not written to: no plan.
		if w.plan != nil && !w.s.cmp.active.Load() && (w.planReady() || len(w.s.tail.entries) >= 2*batch) {
			_ = w.writePlan()
		}
		if w.plan == nil && len(w.s.tail.entries) >= batch && w.s.brokenErr() == nil {
			w.startPlan()
		}
	}
	w.closeErr = errors.Join(w.flush(), w.closeBeats())
}

// gatherFor is how long a group may wait, from its first request, for
// the callers the last commit acknowledged to come back (see group):
// half the last group's duration, at most maxGather, and nothing after a
// group of one, so that a lone appender never waits. Without the wait,
// synchronous appenders settle into two cohorts that alternate, each
// group holding half of them, and every event pays twice the share of a
// commit it would pay in one group; the wait costs no processor time (the
// writer puts each request as it comes).
func (w *writer) gatherFor() time.Duration {
	if w.lastGroup <= 1 {
		return 0
	}
	return min(w.lastTook/2, maxGather)
}

// maxGather caps the gathering wait, so that a slow commit (a loaded
// machine, a slow disk) does not hold a group back long.
const maxGather = time.Millisecond

// gatherStep is how many requests the writer lets queue before it wakes
// to put them while it gathers a group: one wake-up per request would
// cost more than the puts it overlaps.
const gatherStep = 16

// group forms, puts and commits the next group, and acknowledges its
// requests. It reports false when the queue is closed and empty.
//
// The group is the callers the last group acknowledged and those already
// queued: waiting for only as many as the last group held would leave the
// ones that queued during its commit a cycle behind for good, each group
// a fraction of the callers, and more commits per event. It is complete
// when that many requests are taken, when Options.MaxBatch events are, or
// after gatherFor.
func (w *writer) group() bool {
	q := &w.s.q
	want := w.lastGroup + q.len()
	if !q.wait(1, nil) {
		return false
	}
	start := time.Now()
	gather := w.gatherFor()
	maxEvents := w.s.opts.MaxBatch
	var events int
	w.batch, events = q.take(w.batch[:0], 0, maxEvents)
	if r := w.batch[0]; r.job != nil { // taken alone (queue.take)
		w.runJob(r)
		clear(w.batch)
		return true
	}
	err := w.add(w.batch, w.begin())
	if err == nil && gather > 0 && len(w.batch) < want && events < maxEvents {
		timeout := q.timer(gather)
		for err == nil && len(w.batch) < want && events < maxEvents {
			timedOut := !q.wait(min(gatherStep, want-len(w.batch)), timeout)
			n := len(w.batch)
			w.batch, events = q.take(w.batch, events, maxEvents)
			err = w.add(w.batch[n:], nil)
			if timedOut || q.isClosed() || len(w.batch) == n { // n: a job or a large call is next
				break
			}
		}
		q.stopTimer()
	}
	w.lastGroup = len(w.batch)
	w.end(err)
	w.live = w.live[:0]
	w.lastTook = time.Since(start)
	clear(w.batch)
	return true
}

// queue is the hand-off from Append to the writer: a slice under a
// mutex, and a wake-up the writer asks for only when it waits, for the
// first request or for the next few of the group it gathers. A caller
// pays a lock and an append; the writer wakes a few times per group, not
// once per request.
type queue struct {
	mu     sync.Mutex
	reqs   []*request
	want   int  // wake the writer when len(reqs) reaches it; 0: it is not waiting
	closed bool // Close was called: no more requests
	wake   chan struct{}
	t      *time.Timer
}

// push queues r for the writer, or returns false after close.
func (q *queue) push(r *request) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	q.reqs = append(q.reqs, r)
	if q.want > 0 && len(q.reqs) >= q.want {
		q.want = 0
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
	q.mu.Unlock()
	return true
}

// close stops push; the writer takes what is queued and then stops.
func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.want = 0
	select {
	case q.wake <- struct{}{}:
	default:
	}
	q.mu.Unlock()
}

func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.reqs)
}

func (q *queue) isClosed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.closed
}

// wait blocks until n requests are queued or the queue is closed, and
// reports true then; it reports false when the queue is closed and
// empty, or when timeout fires first (a nil timeout never does).
func (q *queue) wait(n int, timeout <-chan time.Time) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.reqs) < n && !q.closed {
		q.want = n
		q.mu.Unlock()
		select {
		case <-q.wake:
			q.mu.Lock()
		case <-timeout:
			q.mu.Lock()
			q.want = 0
			// A wake-up sent meanwhile is stale now.
			select {
			case <-q.wake:
			default:
			}
			return false
		}
	}
	q.want = 0
	return len(q.reqs) > 0 || !q.closed
}

// take appends queued requests to dst, which holds events events, while
// they fit in maxEvents (the first request of a group is taken whatever
// its size: a call is never split), and returns dst and its events. A
// job is taken alone: only into an empty dst, and nothing after it.
func (q *queue) take(dst []*request, events, maxEvents int) ([]*request, int) {
	q.mu.Lock()
	i := 0
	for i < len(q.reqs) && (events == 0 || events+len(q.reqs[i].entries) <= maxEvents) {
		if q.reqs[i].job != nil {
			if i == 0 && len(dst) == 0 {
				i = 1 // a job is taken alone
			}
			break
		}
		events += len(q.reqs[i].entries)
		i++
	}
	dst = append(dst, q.reqs[:i]...)
	rest := copy(q.reqs, q.reqs[i:])
	clear(q.reqs[rest:])
	q.reqs = q.reqs[:rest]
	q.mu.Unlock()
	return dst, events
}

// waitOr blocks until a request is queued, the queue is closed or done
// is closed, and reports whether it returned for done alone.
func (q *queue) waitOr(done <-chan struct{}) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.reqs) == 0 && !q.closed {
		q.want = 1
		q.mu.Unlock()
		select {
		case <-q.wake:
			q.mu.Lock()
		case <-done:
			q.mu.Lock()
			q.want = 0
			// A wake-up sent meanwhile is stale now.
			select {
			case <-q.wake:
			default:
			}
			return len(q.reqs) == 0 && !q.closed
		}
	}
	q.want = 0
	return false
}

// timer starts the writer's gathering timer; only the writer uses it.
func (q *queue) timer(d time.Duration) <-chan time.Time {
	if q.t == nil {
		q.t = time.NewTimer(d)
	} else {
		q.t.Reset(d)
	}
	return q.t.C
}

func (q *queue) stopTimer() { q.t.Stop() }

// guard runs f, which uses bbolt, turning a panic (or memory fault) in
// bbolt on a damaged page into a CorruptError that stops further writes.
func (w *writer) guard(op string, f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = corrupt("%s: %s: bbolt failed on a damaged page: %v", w.s.path, op, r)
			w.s.setBroken(err)
		}
	}()
	err = f()
	if errors.Is(err, ErrCorrupt) {
		w.s.setBroken(err)
	}
	return err
}

// update runs f in a write transaction under guard.
func (w *writer) update(op string, f func(tx *bolt.Tx) error) error {
	return w.guard(op, func() error { return w.s.updateIn(f) })
}

// begin opens the group's write transaction. On a damaged file it opens
// none and fails: a damaged file is not written to (see the package doc).
func (w *writer) begin() error {
	s := w.s
	clear(w.pendIDs)
	clear(w.pendIdem)
	w.added = w.added[:0]
	w.dropped = 0
	if err := s.brokenErr(); err != nil {
		return err
	}
	// Held until end, after the commit: a compaction's swap waits for
	// the group (compact.go).
	s.swap.RLock()
	defer func() {
		if w.tx == nil {
			s.swap.RUnlock()
		}
	}()
	return w.guard("append", func() error {
		tx, err := s.db.Begin(true)
		if err != nil {
			return err
		}
		w.tx = tx
		if w.sums == nil {
			w.sums = newSumBatch(nil)
		}
		w.sums.tx = tx
		w.events = tx.Bucket(bucketEvents)
		w.ids, w.idBlocks = tx.Bucket(bucketIDs), tx.Bucket(bucketIDBlocks)
		w.idem, w.idemBlocks = tx.Bucket(bucketIdem), tx.Bucket(bucketIdemBlocks)
		w.events.FillPercent = 1.0 // append-only: full pages
		w.now = s.opts.Clock().UnixNano()
		w.seq = s.last
		return nil
	})
}

// add takes reqs into the group and puts them in its transaction, unless
// err (the group's failure so far) is set: a request whose caller has
// given up is answered at once and not stored; every other one is
// answered by end, with the group's outcome.
func (w *writer) add(reqs []*request, err error) error {
	n := len(w.live)
	for _, r := range reqs {
		if cerr := r.ctx.Err(); cerr != nil {
			r.finish(cerr) // given up before its commit: not stored
			continue
		}
		w.live = append(w.live, r)
	}
	if err != nil {
		return err
	}
	return w.guard("append", func() error {
		for _, r := range w.live[n:] {
			if err := w.put(r); err != nil {
				return err
			}
		}
		return nil
	})
}

// end commits the group (err nil) or rolls it back, and answers its
// requests: a group of duplicates only is rolled back, and costs no
// write and no fsync.
func (w *writer) end(err error) {
	s := w.s
	if w.tx != nil {
		defer s.swap.RUnlock() // taken by begin
		tx := w.tx
		w.tx, w.events, w.ids, w.idBlocks, w.idem, w.idemBlocks = nil, nil, nil, nil, nil, nil
		w.sums.tx = nil
		if err != nil || len(w.added) == 0 {
			_ = w.guard("append", tx.Rollback)
		} else {
			err = w.guard("append", func() error {
				beats, err := s.putBeats(tx) // presence.go: beats ride the commit
				if err == nil {
					if err = s.commitIn(tx); err == nil {
						s.wroteBeats(beats)
					}
				}
				return err
			})
		}
	}
	if err != nil {
		for _, r := range w.live {
			r.finish(err)
		}
		clear(w.live)
		return
	}
	total := 0
	for _, r := range w.live {
		total += len(r.entries)
	}
	if len(w.added) > 0 {
		w.groups.Add(1)
		w.commits.Add(1)
	}
	w.appended.Add(uint64(len(w.added)))
	w.duplicates.Add(uint64(total - len(w.added) - w.dropped))
	if len(w.added) > 0 {
		s.mu.Lock()
		for i, e := range w.added {
			s.tail.add(e, s.last+1+uint64(i))
		}
		s.last = w.seq
		w.foldSummaries(w.now)
		s.mu.Unlock()
		s.sig.Notify()
	}
	for _, r := range w.live {
		r.finish(nil)
	}
	clear(w.live)
}

// put deduplicates r's messages, puts its new events in the events
// bucket, and reads the summaries they will change. r's results are set,
// and w.added lists the new events' tail entries. A request of
// AppendIfNew whose first message is a duplicate puts nothing: its other
// results stay zero (store.Conditional).
func (w *writer) put(r *request) error {
	for i := range r.entries {
		e := &r.entries[i]
		// Dedup, docs/protocol.md §5.2: the id first, then (run_id,
		// idempotency_key); this group, the tail, then the file.
		if dup, ok, err := w.findID(e.ID); err != nil {
			return err
		} else if ok {
			r.res[i] = store.AppendResult{Seq: dup, Duplicate: true, DuplicateBy: store.DedupByID}
			if i == 0 && r.cond {
				w.dropped += len(r.entries) - 1
				return nil
			}
			continue
		}
		it := &r.items[i]
		if it.idemKey != "" {
			if dup, ok, err := w.findIdem(it.idemKey); err != nil {
				return err
			} else if ok {
				r.res[i] = store.AppendResult{Seq: dup, Duplicate: true, DuplicateBy: store.DedupByIdempotencyKey}
				if i == 0 && r.cond {
					w.dropped += len(r.entries) - 1
					return nil
				}
				continue
			}
		}
		w.seq++
		sealRecord(it.rec, it.sum, w.now)
		binary.BigEndian.PutUint64(w.key[:], w.seq)
		if err := w.events.Put(w.key[:], it.rec); err != nil {
			return err
		}
		w.pendIDs[e.ID] = w.seq
		if it.idemKey != "" {
			w.pendIdem[it.idemKey] = w.seq
		}
		w.added = append(w.added, tailEntry{
			id: e.ID, run: e.RunID, thread: e.ThreadID, task: e.TaskID,
			agent: e.AgentID, idemKey: it.idemKey, typ: e.Type,
		})
		r.res[i] = store.AppendResult{Seq: w.seq}
		if err := w.sums.read(e); err != nil {
			return err
		}
	}
	return nil
}

func appendSeq(b []byte, seq uint64) []byte {
	return append(b, byte(seq>>56), byte(seq>>48), byte(seq>>40), byte(seq>>32), byte(seq>>24), byte(seq>>16), byte(seq>>8), byte(seq))
}

// findID looks an id up in this group, the tail and the file. The writer
// reads the tail's maps without the lock: it is their only writer.
func (w *writer) findID(id string) (uint64, bool, error) {
	if seq, ok := w.pendIDs[id]; ok {
		return seq, true, nil
	}
	if seq, ok := w.s.tail.ids[id]; ok {
		return seq, true, nil
	}
	if w.maxID == nil || id > string(w.maxID) {
		return 0, false, nil // past the last id: time-ordered ids never cost a lookup
	}
	return lookupKey(w.ids, w.idBlocks, []byte(id))
}

func (w *writer) findIdem(key string) (uint64, bool, error) {
	if seq, ok := w.pendIdem[key]; ok {
		return seq, true, nil
	}
	if seq, ok := w.s.tail.idem[key]; ok {
		return seq, true, nil
	}
	if w.maxIdem == nil || key > string(w.maxIdem) {
		return 0, false, nil
	}
	return lookupKey(w.idem, w.idemBlocks, []byte(key))
}
