package boltstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"iter"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/driver"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Store is a store.Store in one bbolt file. It is safe for concurrent use.
type Store struct {
	db   *bolt.DB
	path string
	opts Options
	sig  driver.Signal
	hub  *driver.Hub // the one follower of the store, shared by every Follow

	q       queue         // Append's hand-off to the writer
	res     *reserve      // zeros ahead of bbolt's pages; nil: none (reserve.go)
	wdone   chan struct{} // closed when the writer has stopped
	closeMx sync.Mutex
	cdone   bool

	// swap is held shared by every transaction on db, and exclusively
	// by a compaction while it puts a new file (and db) in place of the
	// old (compact.go). A holder never takes it again.
	swap sync.RWMutex
	cmp  compaction

	// mu guards what readers share with the writer.
	mu     sync.RWMutex
	closed bool
	last   uint64                      // seq of the last committed event
	tail   *tail                       // events after the index watermark
	sums   [2]map[string]store.Summary // by runs, threads: those changed since the last flush (summary.go)

	w writer // owned by the writer goroutine

	pres presence // the last beat of each key (presence.go)

	removals atomic.Bool // runs were removed: seqs have gaps (remove.go)

	broken atomic.Pointer[brokenError] // the first corruption found; appends refused since
}

var (
	_ store.Store       = (*Store)(nil)
	_ store.Lister      = (*Store)(nil)
	_ store.Clock       = (*Store)(nil)
	_ store.Conditional = (*Store)(nil)
)

// Open opens the event store in the file at path, creating it if needed.
// opts may be nil. A file another process holds gives ErrLocked after
// Options.LockTimeout; a file of a newer format, or a file that is not an
// event store (not a bbolt file, or a bbolt file of something else), gives
// ErrFormat; a damaged file gives ErrCorrupt (see the package doc). After
// a crash Open rebuilds the in-memory index tail from the events after the
// last index flush; there is no other repair step.
func Open(path string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	o.setDefaults()
	if o.ReadOnly {
		return openReadOnly(path, o)
	}
	s := &Store{
		path:  path,
		opts:  o,
		q:     queue{wake: make(chan struct{}, 1)},
		wdone: make(chan struct{}),
	}
	s.hub = driver.NewHub(&s.sig, s.page, s.LastSeq)
	err := s.guard("open", func() error {
		if err := s.open(); err != nil {
			return err
		}
		if err := s.openSummaries(); err != nil {
			return err
		}
		return s.w.init(s)
	})
	if err != nil {
		if s.db != nil {
			s.db.Close()
		}
		return nil, err
	}
	if !o.NoSync {
		s.startReserve()
	}
	s.pres.timer = time.AfterFunc(beatBound, s.beatsDue) // set by the first beat (presence.go)
	s.pres.timer.Stop()
	go s.w.run()
	return s, nil
}

// startReserve starts the reserve of zeros (reserve.go). Without one the
// store works the same, its commits' fsyncs only take longer: an error
// here is not Open's.
func (s *Store) startReserve() {
	hwm, err := s.hwm()
	if err != nil {
		return
	}
	r, err := newReserve(s.path, hwm, func() bool { return s.brokenErr() != nil })
	if err == nil {
		s.res = r
	}
}

// hwm is bbolt's high-water mark: the bytes of the pages in use. The
// caller holds s.swap, or is Open.
func (s *Store) hwm() (int64, error) {
	var n int64
	err := s.db.View(func(tx *bolt.Tx) error { n = tx.Size(); return nil })
	return n, err
}

// updateIn runs f in a write transaction, which the reserve's zeros keep
// away from (reserve.go).
func (s *Store) updateIn(f func(tx *bolt.Tx) error) error {
	s.swap.RLock()
	defer s.swap.RUnlock()
	var entered bool
	defer func() { // after the commit, the rollback or a panic
		if entered {
			s.leaveReserve()
		}
	}()
	return s.db.Update(func(tx *bolt.Tx) error {
		s.res.enter()
		entered = true
		return f(tx)
	})
}

// commitIn commits tx, a write transaction opened with db.Begin, which
// the reserve's zeros keep away from while it writes (reserve.go). Until
// its commit a transaction changes nothing in the file: bbolt allocates
// and writes pages only in Commit.
func (s *Store) commitIn(tx *bolt.Tx) error {
	s.res.enter()
	defer s.leaveReserve() // after the commit or a panic
	return tx.Commit()
}

// leaveReserve ends what s.res.enter began, once the write transaction
// has committed or rolled back, with the high-water mark it left.
func (s *Store) leaveReserve() {
	if s.res == nil {
		return
	}
	hwm, err := s.hwm()
	if err != nil {
		hwm = -1 // closed or failing: no more zeros
	}
	s.res.leave(hwm)
}

// open checks the file (see inspect) and opens it with bbolt. The check
// runs while a read-only bbolt handle holds the file's shared lock, so
// that a writer in another process is waited for (ErrLocked), not
// mistaken for damage.
func (s *Store) open() error {
	o := &s.opts
	if fi, err := os.Stat(s.path); err == nil && fi.Size() > 0 {
		ro, err := bolt.Open(s.path, o.FileMode, &bolt.Options{Timeout: o.LockTimeout, ReadOnly: true})
		if errors.Is(err, berrors.ErrTimeout) {
			return &lockedError{path: s.path, timeout: o.LockTimeout}
		}
		ierr := inspect(s.path)
		if ro != nil {
			ro.Close()
		}
		if ierr != nil {
			return ierr
		}
		if err != nil {
			return corrupt("%s: bbolt: %v", s.path, err)
		}
	}
	for {
		before, _ := os.Stat(s.path)
		db, err := bolt.Open(s.path, o.FileMode, &bolt.Options{
			Timeout:      o.LockTimeout,
			NoSync:       o.NoSync,
			FreelistType: bolt.FreelistMapType,
			PageSize:     o.PageSize,
		})
		if err != nil {
			if errors.Is(err, berrors.ErrTimeout) {
				return &lockedError{path: s.path, timeout: o.LockTimeout}
			}
			if errors.Is(err, berrors.ErrInvalid) || errors.Is(err, berrors.ErrChecksum) || errors.Is(err, berrors.ErrVersionMismatch) {
				return corrupt("%s: bbolt: %v", s.path, err)
			}
			return err
		}
		// A compaction in another process renames its new file over
		// path while that process holds the lock: an Open that waited
		// for the lock meanwhile holds the old file, which has no name
		// any more, and opens path again.
		if after, err := os.Stat(s.path); before != nil && err == nil && !os.SameFile(before, after) {
			db.Close()
			continue
		}
		s.db = db
		break
	}
	// With the lock held, a leftover of a compaction that died before
	// its swap is no other process's: removed (compact.go).
	if err := removeLeftover(s.path); err != nil {
		return err
	}
	return s.load()
}

type lockedError struct {
	path    string
	timeout time.Duration
}

func (e *lockedError) Error() string {
	return ErrLocked.Error() + ": " + e.path + " (waited " + e.timeout.String() + ")"
}

func (e *lockedError) Unwrap() error { return ErrLocked }

// load checks the format, creates the buckets of a new file and rebuilds
// the in-memory state: the last seq and the index tail.
func (s *Store) load() error {
	var fresh bool
	err := s.db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			empty := true
			tx.ForEach(func([]byte, *bolt.Bucket) error { empty = false; return nil })
			if !empty {
				return &FormatError{Path: s.path, Supported: formatVersion, Detail: "a bbolt file without a clutch event store in it"}
			}
			// A new bbolt file has 4 pages (2 meta pages, a free list, an
			// empty root). An empty root in a longer file is damage, or
			// a file emptied by something else: not taken over.
			if n := tx.Size() / int64(s.db.Info().PageSize); n > 4 {
				return corrupt("%s: no buckets in a file of %d pages", s.path, n)
			}
			fresh = true
			return nil
		}
		v := meta.Get(keyFormat)
		if len(v) != 4 {
			return &FormatError{Path: s.path, Supported: formatVersion, Detail: "no format version"}
		}
		if ver := binary.BigEndian.Uint32(v); ver != formatVersion {
			return &FormatError{Path: s.path, Version: ver, Supported: formatVersion,
				Detail: "format " + strconv.FormatUint(uint64(ver), 10) + " is not supported; this version reads format " + strconv.Itoa(formatVersion)}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if fresh && s.opts.ReadOnly {
		return &FormatError{Path: s.path, Supported: formatVersion, Detail: "an empty bbolt file: no event store in it yet"}
	}
	if fresh {
		err := s.db.Update(func(tx *bolt.Tx) error {
			for _, name := range allBuckets() {
				if _, err := tx.CreateBucket(name); err != nil {
					return err
				}
			}
			meta := tx.Bucket(bucketMeta)
			if err := meta.Put(keyFormat, binary.BigEndian.AppendUint32(nil, formatVersion)); err != nil {
				return err
			}
			return meta.Put(keyIndexed, seqKey(0))
		})
		if err != nil {
			return err
		}
	}
	err = s.db.View(func(tx *bolt.Tx) error {
		for _, name := range allBuckets() {
			if tx.Bucket(name) == nil {
				return corrupt("bucket %q is missing", name)
			}
		}
		indexed, err := parseSeqKey(tx.Bucket(bucketMeta).Get(keyIndexed))
		if err != nil {
			return err
		}
		if k, _ := tx.Bucket(bucketEvents).Cursor().Last(); k != nil {
			if s.last, err = parseSeqKey(k); err != nil {
				return err
			}
		}
		if err := s.loadRemovals(tx); err != nil { // remove.go
			return err
		}
		if indexed > s.last {
			return corrupt("index watermark %d is past the last event %d", indexed, s.last)
		}
		// The watermark is where the index entries in the file end: the
		// event at it is in the ids index, the one after it is not. A
		// damaged watermark would hide events from reads and dedup.
		ids, blocks := tx.Bucket(bucketIDs), tx.Bucket(bucketIDBlocks)
		for _, seq := range [...]uint64{indexed, indexed + 1} {
			if seq == 0 || seq > s.last {
				continue
			}
			v := tx.Bucket(bucketEvents).Get(seqKey(seq))
			if v == nil && s.removals.Load() {
				continue // removed with its run
			}
			r, err := parseRecord(v, tx.Size())
			if err != nil {
				return corrupt("event %d: %v", seq, err)
			}
			got, found, err := lookupKey(ids, blocks, r.id)
			if err != nil {
				return err
			}
			if (seq == indexed && (!found || got != seq)) || (seq > indexed && found) {
				return corrupt("index watermark %d does not match the ids index (event %d maps to %d)", indexed, seq, got)
			}
		}
		s.tail = newTail(indexed, int(s.last-indexed))
		c := tx.Bucket(bucketEvents).Cursor()
		want := indexed + 1
		for k, v := c.Seek(seqKey(want)); k != nil; k, v = c.Next() {
			seq, err := parseSeqKey(k)
			if err != nil {
				return err
			}
			if seq != want {
				return corrupt("event %d follows event %d", seq, want-1)
			}
			r, err := parseRecord(v, tx.Size())
			if err != nil {
				return err
			}
			s.tail.add(tailEntryOf(&r), seq)
			want++
		}
		return nil
	})
	return err
}

func allBuckets() [][]byte {
	b := [][]byte{bucketMeta, bucketEvents, bucketIDs, bucketIDBlocks, bucketIdem, bucketIdemBlocks, bucketArtifacts}
	for _, ix := range indexes {
		b = append(b, indexBuckets[ix])
	}
	return b
}

// Path returns the file's path.
func (s *Store) Path() string { return s.path }

// Append implements store.Store. Concurrent calls are group-committed: the
// writer takes every call waiting at that moment into one transaction and
// one fsync, then acknowledges each caller.
func (s *Store) Append(ctx context.Context, msgs ...*protocol.Message) ([]store.AppendResult, error) {
	return s.append(ctx, msgs, false)
}

// AppendIfNew implements store.Conditional: Append, storing nothing of
// the call when its first message is a duplicate. The check is made by
// the writer, in the group's transaction, so the calls of a group are
// dropped or stored each on its own, and a dropped one costs the others
// nothing.
func (s *Store) AppendIfNew(ctx context.Context, msgs ...*protocol.Message) ([]store.AppendResult, error) {
	return s.append(ctx, msgs, true)
}

// append is Append, or AppendIfNew when cond is set.
func (s *Store) append(ctx context.Context, msgs []*protocol.Message, cond bool) ([]store.AppendResult, error) {
	if s.opts.ReadOnly {
		return nil, s.readOnly("append")
	}
	r := getRequest()
	entries, err := driver.Prepare(r.entries[:0], msgs, s.opts.MaxEventSize)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		r.release()
		return nil, err
	}
	if len(entries) == 0 {
		r.release()
		return nil, s.checkOpen()
	}
	r.prepare(ctx, entries)
	r.cond = cond
	if !s.q.push(r) {
		r.release()
		return nil, store.ErrClosed
	}
	select {
	case <-r.done:
		res, err := r.res, r.err
		r.release()
		return res, err
	case <-ctx.Done():
		// The writer may still commit it; dedup makes a retry safe. It
		// still holds r, which is left to the collector.
		return nil, ctx.Err()
	}
}

func (s *Store) checkOpen() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.ErrClosed
	}
	return nil
}

// view runs f in a read transaction under guard, mapping a closed
// database to store.ErrClosed.
func (s *Store) view(op string, f func(tx *bolt.Tx) error) error {
	err := s.guard(op, func() error {
		s.swap.RLock()
		defer s.swap.RUnlock()
		return s.db.View(f)
	})
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return store.ErrClosed
	}
	return err
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, id string) (store.Event, error) {
	if err := ctx.Err(); err != nil {
		return store.Event{}, err
	}
	s.mu.RLock()
	closed := s.closed
	seq, inTail := s.tail.ids[id]
	s.mu.RUnlock()
	if closed {
		return store.Event{}, store.ErrClosed
	}
	var ev store.Event
	err := s.view("get", func(tx *bolt.Tx) error {
		if !inTail {
			var found bool
			var err error
			if seq, found, err = lookupKey(tx.Bucket(bucketIDs), tx.Bucket(bucketIDBlocks), []byte(id)); err != nil {
				return err
			} else if !found {
				return store.ErrNotFound
			}
		}
		v := tx.Bucket(bucketEvents).Get(seqKey(seq))
		if v == nil {
			return corrupt("id %q points at missing event %d", id, seq)
		}
		r, err := parseRecord(v, tx.Size())
		if err != nil {
			return corrupt("event %d: %v", seq, err)
		}
		if string(r.id) != id {
			return corrupt("id %q points at event %d, whose id is %q", id, seq, clip(r.id))
		}
		ev = eventOf(seq, &r)
		return nil
	})
	return ev, err
}

func eventOf(seq uint64, r *record) store.Event {
	return store.Event{Seq: seq, Time: time.Unix(0, r.time).UTC(), Raw: bytes.Clone(r.raw)}
}

// Now implements store.Clock: a reading of Options.Clock, in UTC.
func (s *Store) Now() time.Time { return s.opts.Clock().UTC() }

// LastSeq implements store.Store.
func (s *Store) LastSeq(ctx context.Context) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, store.ErrClosed
	}
	return s.last, nil
}

// Read implements store.Store. Each page of events is read in its own
// short read transaction and copied out, so no transaction is open while
// the loop body runs.
func (s *Store) Read(ctx context.Context, q store.Query) iter.Seq2[store.Event, error] {
	return driver.GoneRead(q, s.gone, driver.Read(ctx, q, s.LastSeq, s.page))
}

// Follow implements store.Store.
func (s *Store) Follow(ctx context.Context, q store.Query) iter.Seq2[store.Event, error] {
	return driver.Gone(q, s.gone, s.hub.Follow(ctx, q))
}

// page is the driver.PageFunc of the store. Events up to the index
// watermark are found through the posting lists in the file, later ones
// through the in-memory tail; a query without an index field scans the
// events bucket.
func (s *Store) page(ctx context.Context, q store.Query, after, upTo uint64, limit int) ([]store.Event, uint64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	s.mu.RLock()
	closed, last, t := s.closed, s.last, s.tail
	base, entries := t.base, t.entries
	s.mu.RUnlock()
	if closed {
		return nil, 0, store.ErrClosed
	}
	upTo = min(upTo, last)
	if after >= upTo {
		return nil, after, nil
	}
	var f fetcher
	through := upTo
	err := s.view("read", func(tx *bolt.Tx) error {
		f = fetcher{c: tx.Bucket(bucketEvents).Cursor(), q: q, max: limit, size: tx.Size()}
		full := func(seq uint64) bool {
			if len(f.evs) == limit {
				through = seq
				return true
			}
			return false
		}
		ix, attr := driver.IndexOf(q)
		if ix == driver.NoIndex {
			want := after + 1
			gaps := s.removals.Load()
			for k, v := f.c.Seek(seqKey(want)); want <= upTo; k, v = f.c.Next() {
				if k == nil {
					if gaps {
						break // the newest events were removed
					}
					return corrupt("events %d to %d are missing", want, upTo)
				}
				seq, err := parseSeqKey(k)
				if err != nil {
					return err
				}
				if seq != want && !(gaps && seq > want) {
					// Seqs are dense but where runs were removed: a gap
					// or a step back is damage.
					return corrupt("event %d follows event %d", seq, want-1)
				}
				if seq > upTo {
					break
				}
				want = seq + 1
				if err := f.add(seq, v, true); err != nil {
					return err
				}
				if full(seq) {
					break
				}
			}
			return nil
		}
		if after < base {
			hi := min(base, upTo)
			var ferr error
			err := eachIndexed(tx.Bucket(indexBuckets[ix]), attr, after, func(seq uint64) bool {
				if seq > hi {
					return false
				}
				if ferr = f.fetch(seq, true); ferr != nil {
					return false
				}
				return !full(seq)
			})
			if err == nil {
				err = ferr
			}
			if err != nil || len(f.evs) == limit {
				return err
			}
		}
		for seq := max(after, base) + 1; seq <= upTo; seq++ {
			e := &entries[seq-base-1]
			if !q.Match(e.run, e.thread, e.task, e.agent, e.typ) {
				continue
			}
			if err := f.fetch(seq, false); err != nil {
				return err
			}
			if full(seq) {
				break
			}
		}
		return nil
	})
	if err != nil {
		return f.evs, 0, err
	}
	return f.evs, through, nil
}

// eachIndexed calls f with the seqs after after that the index bucket b
// holds for attr, in order, until f returns false.
func eachIndexed(b *bolt.Bucket, attr string, after uint64, f func(seq uint64) bool) error {
	prefix := attrPrefix(attr)
	c := b.Cursor()
	start := binary.BigEndian.AppendUint64(bytes.Clone(prefix), after+1)
	// The chunk that starts at or before after may hold later seqs too.
	var v []byte
	k, _ := c.Seek(start)
	if k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	if _, ok := postingFirst(k, prefix); !ok {
		k, v = c.Seek(start)
	}
	for ; k != nil; k, v = c.Next() {
		first, ok := postingFirst(k, prefix)
		if !ok {
			return nil
		}
		more := true
		err := eachPosted(first, v, func(seq uint64) bool {
			if seq <= after {
				return true
			}
			more = f(seq)
			return more
		})
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// fetcher copies events out of the events bucket, stepping its cursor
// forward instead of seeking when the next wanted seq is close.
type fetcher struct {
	c    *bolt.Cursor
	q    store.Query
	at   uint64 // seq under the cursor, 0 when unknown
	max  int    // the page's limit
	size int64  // the file's size as of the transaction: no value is longer
	evs  []store.Event
}

func (f *fetcher) fetch(seq uint64, check bool) error {
	var k, v []byte
	if f.at != 0 && seq > f.at && seq-f.at <= 4 {
		// Step by the keys: seqs have gaps where runs were removed.
		for f.at < seq {
			if k, v = f.c.Next(); k == nil || len(k) != 8 {
				break
			}
			f.at = binary.BigEndian.Uint64(k)
		}
	} else {
		k, v = f.c.Seek(seqKey(seq))
		f.at = seq
	}
	if k == nil || binary.BigEndian.Uint64(k) != seq || len(k) != 8 {
		f.at = 0
		return corrupt("indexed event %d is missing", seq)
	}
	return f.add(seq, v, check)
}

func (f *fetcher) add(seq uint64, v []byte, check bool) error {
	r, err := parseRecord(v, f.size)
	if err != nil {
		return err
	}
	if check && !f.q.Match(string(r.run), string(r.thread), string(r.task), string(r.agent), protocol.Type(r.typ)) {
		return nil
	}
	if f.evs == nil {
		f.evs = make([]store.Event, 0, min(f.max, 64))
	}
	f.evs = append(f.evs, eventOf(seq, &r))
	return nil
}

// PutArtifact implements store.Store. The artifact is committed (and
// synced) before PutArtifact returns.
func (s *Store) PutArtifact(ctx context.Context, mediaType string, data []byte) (string, error) {
	if s.opts.ReadOnly {
		return "", s.readOnly("put artifact")
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	mt, err := store.CheckMediaType(mediaType)
	if err != nil {
		return "", err
	}
	if len(data) > s.opts.MaxArtifactSize {
		return "", &store.TooLargeError{What: "artifact", Index: -1, Size: len(data), Limit: s.opts.MaxArtifactSize}
	}
	if err := s.checkOpen(); err != nil {
		return "", err
	}
	if err := s.brokenErr(); err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	err = s.guard("put artifact", func() error {
		return s.updateIn(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketArtifacts)
			if b.Get(sum[:]) != nil {
				return nil
			}
			return b.Put(sum[:], appendArtifact(make([]byte, 0, len(mt)+len(data)+2), mt, data))
		})
	})
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return "", store.ErrClosed
	}
	if err != nil {
		return "", err
	}
	return store.ArtifactRefFromDigest(sum), nil
}

// GetArtifact implements store.Store. The returned Data is a copy.
func (s *Store) GetArtifact(ctx context.Context, ref string) (store.Artifact, error) {
	if err := ctx.Err(); err != nil {
		return store.Artifact{}, err
	}
	sum, err := store.ParseArtifactRef(ref)
	if err != nil {
		return store.Artifact{}, err
	}
	if err := s.checkOpen(); err != nil {
		return store.Artifact{}, err
	}
	var a store.Artifact
	err = s.view("get artifact", func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketArtifacts).Get(sum[:])
		if v == nil {
			return store.ErrNotFound
		}
		if int64(len(v)) > tx.Size() {
			return corrupt("artifact %s: a value of %d bytes in a file of %d", ref, len(v), tx.Size())
		}
		mt, data, err := parseArtifact(v)
		if err != nil {
			return err
		}
		if sha256.Sum256(data) != sum {
			return corrupt("artifact %s: its data does not match its digest", ref)
		}
		a = store.Artifact{Ref: ref, MediaType: string(mt), Data: bytes.Clone(data)}
		if a.Data == nil {
			a.Data = []byte{}
		}
		return nil
	})
	return a, err
}

// Stats counts what a Store did since Open.
type Stats struct {
	Commits      uint64 // group commits of appends (transactions, fsyncs)
	BeatCommits  uint64 // commits of beats alone, on a store no append commits (see "Presence" in the package doc)
	Appended     uint64 // events appended
	Duplicates   uint64 // messages not appended because they were duplicates
	IndexFlushes uint64 // index tail flushes (see Options.IndexBatch)
	Unindexed    int    // events whose index entries are only in memory now
}

// Stats returns the store's counters. Appended/Commits is the mean group
// size.
func (s *Store) Stats() Stats {
	s.mu.RLock()
	n := len(s.tail.entries)
	s.mu.RUnlock()
	return Stats{
		Commits: s.w.groups.Load(), BeatCommits: s.w.beatCommits.Load(), Appended: s.w.appended.Load(), Duplicates: s.w.duplicates.Load(),
		IndexFlushes: s.w.flushes.Load(), Unindexed: n,
	}
}

// Close implements store.Store: it stops taking appends, lets the writer
// commit those already handed to it, writes the index tail to the file
// (so the next Open has nothing to rebuild), ends followers with
// store.ErrClosed and closes the file. Calling Close again returns nil.
func (s *Store) Close() error {
	s.closeMx.Lock()
	defer s.closeMx.Unlock()
	if s.cdone {
		return nil
	}
	s.cdone = true
	s.stopCompaction()
	s.q.close()
	<-s.wdone
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.sig.Notify()
	err := errors.Join(s.w.closeErr, s.res.close(), s.db.Close())
	return err
}
