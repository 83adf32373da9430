package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"iter"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/clutchprotocol/clutch/store"
	bolt "go.etcd.io/bbolt"
)

// Presence (store.Presence): the last beat of each key, in memory and in
// the bucket "presence" (key → 8 bytes of big-endian unix nanoseconds,
// then the data). A beat costs a map write, no transaction of its own:
// the beats changed since the last commit ride the writer's next group
// commit (put in its transaction, so they cost no fsync of their own).
// When no group commits them within beatBound of the oldest one, the
// writer commits them alone (writeBeats, a job between two groups), so a
// beat is in the file within beatBound whether or not appends flow; Close
// writes the rest. One timer per store does it: Beat sets it when it
// finds no beat waiting (armed), it fires once per beatBound at most, and
// a commit of beats alone happens only for a beat that waited the whole
// bound, so a busy store never has one. A crash loses the beats of the
// last beatBound at most; liveness lost that way is learned again at the
// next beat, and no event depends on it. The bucket is made at the first
// write, so files of earlier versions open unchanged.

// beatBound is the longest a beat stays in memory only (docs/protocol.md
// §2.4). A registry reopened after a crash takes an agent's last beat in
// the file for its last sign of life: with beats every third of the TTL
// (a team node's default) the lapse it then sees stays under the TTL while
// the bound and the restart together stay under a third of it. The
// shortest TTL in use is a few seconds (3 s in examples/distributed; the
// registry's default is 30 s): 250 ms is a twelfth of that, and costs an
// idle store at most four commits a second while agents beat.
const beatBound = 250 * time.Millisecond

var bucketPresence = []byte("presence")

var _ store.Presence = (*Store)(nil)

type presence struct {
	mu     sync.Mutex
	loaded bool                // beats holds the file's beats
	final  bool                // Close wrote the beats: no more are taken
	beats  map[string]beatVal  // key → last beat
	dirty  map[string]struct{} // keys beaten since the last commit that wrote them
	since  time.Time           // when dirty last became non-empty: its oldest beat is no older
	putAt  time.Time           // when putBeats last read dirty
	armed  bool                // timer is set or its job queued; true while dirty is non-empty
	timer  *time.Timer         // runs beatsDue; made by Open (not for read-only), stopped at Close
}

type beatVal struct {
	at   int64 // unix nanoseconds
	data []byte
}

// loadBeatsLocked reads the file's beats once; p.mu is held.
func (s *Store) loadBeatsLocked() error {
	p := &s.pres
	if p.loaded {
		return nil
	}
	s.mu.RLock() // Close sets closed under mu before it closes the file
	defer s.mu.RUnlock()
	if s.closed {
		return store.ErrClosed
	}
	beats := map[string]beatVal{}
	err := s.guard("read beats", func() error {
		return s.db.View(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketPresence)
			if b == nil {
				return nil
			}
			return b.ForEach(func(k, v []byte) error {
				if len(v) < 8 {
					return corrupt("presence %q: a beat of %d bytes", k, len(v))
				}
				beats[string(k)] = beatVal{at: int64(binary.BigEndian.Uint64(v)), data: bytes.Clone(v[8:])}
				return nil
			})
		})
	})
	if err != nil {
		return err
	}
	p.beats, p.dirty, p.loaded = beats, map[string]struct{}{}, true
	return nil
}

// Beat implements store.Presence. The beat is in memory at once and in
// the file with the next commit, within beatBound (see above).
func (s *Store) Beat(ctx context.Context, key string, data []byte) (at time.Time, prev store.Beat, err error) {
	if err := store.CheckBeat(key, data); err != nil {
		return time.Time{}, store.Beat{}, err
	}
	if err := ctx.Err(); err != nil {
		return time.Time{}, store.Beat{}, err
	}
	if s.opts.ReadOnly {
		return time.Time{}, store.Beat{}, s.readOnly("beat")
	}
	now := s.opts.Clock().UnixNano()
	p := &s.pres
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.final {
		return time.Time{}, store.Beat{}, store.ErrClosed
	}
	if err := s.loadBeatsLocked(); err != nil {
		return time.Time{}, store.Beat{}, err
	}
	if old, ok := p.beats[key]; ok {
		prev = store.Beat{Key: key, Time: time.Unix(0, old.at).UTC(), Data: old.data}
	}
	p.beats[key] = beatVal{at: now, data: bytes.Clone(data)}
	if len(p.dirty) == 0 {
		p.since = time.Now()
	}
	p.dirty[key] = struct{}{}
	if !p.armed {
		p.armed = true
		p.timer.Reset(beatBound)
	}
	return time.Unix(0, now).UTC(), prev, nil
}

// Beats implements store.Presence: the beats in memory, which are those of
// the file and every one taken since.
func (s *Store) Beats(ctx context.Context, prefix string) iter.Seq2[store.Beat, error] {
	return func(yield func(store.Beat, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(store.Beat{}, err)
			return
		}
		s.mu.RLock()
		closed := s.closed
		s.mu.RUnlock()
		if closed {
			yield(store.Beat{}, store.ErrClosed)
			return
		}
		p := &s.pres
		p.mu.Lock()
		err := s.loadBeatsLocked()
		var out []store.Beat
		for k, v := range p.beats {
			if strings.HasPrefix(k, prefix) {
				out = append(out, store.Beat{Key: k, Time: time.Unix(0, v.at).UTC(), Data: v.data})
			}
		}
		p.mu.Unlock()
		if err != nil {
			yield(store.Beat{}, err)
			return
		}
		slices.SortFunc(out, func(a, b store.Beat) int { return strings.Compare(a.Key, b.Key) })
		for _, b := range out {
			if !yield(b, nil) {
				return
			}
		}
	}
}

// putBeats puts the beats taken since the last commit in tx, the writer's
// transaction, and returns them; after the commit, wroteBeats forgets
// those that were not beaten again meanwhile. It costs a lock when no
// beat is waiting.
func (s *Store) putBeats(tx *bolt.Tx) (map[string]int64, error) {
	p := &s.pres
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.dirty) == 0 {
		return nil, nil
	}
	b, err := tx.CreateBucketIfNotExists(bucketPresence)
	if err != nil {
		return nil, err
	}
	p.putAt = time.Now()
	put := make(map[string]int64, len(p.dirty))
	for k := range p.dirty {
		v := p.beats[k]
		val := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(v.data)), uint64(v.at))
		if err := b.Put([]byte(k), append(val, v.data...)); err != nil {
			return nil, err
		}
		put[k] = v.at
	}
	return put, nil
}

// wroteBeats marks the beats putBeats returned as in the file.
func (s *Store) wroteBeats(put map[string]int64) {
	if len(put) == 0 {
		return
	}
	p := &s.pres
	p.mu.Lock()
	for k, at := range put {
		if p.beats[k].at == at {
			delete(p.dirty, k)
		}
	}
	if len(p.dirty) > 0 { // beaten during the commit, so after putAt
		p.since = p.putAt
	}
	p.mu.Unlock()
}

// beatsDue runs when the timer fires: it hands the beats to the writer if
// the oldest has waited beatBound, sets the timer again if not, and
// disarms it when no beat waits (a commit of appends took them).
func (s *Store) beatsDue() {
	p := &s.pres
	p.mu.Lock()
	if p.final || len(p.dirty) == 0 {
		p.armed = false
		p.mu.Unlock()
		return
	}
	if wait := beatBound - time.Since(p.since); wait > 0 {
		p.timer.Reset(wait)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	// armed stays set until the job has run. After Close, the writer's
	// last act writes them instead.
	r := &request{ctx: context.Background(), done: make(chan struct{}, 1), job: s.w.writeBeats}
	s.q.push(r)
}

// writeBeats commits the beats no group took, in a transaction of their
// own (synced as any commit, unless Options.NoSync), and sets the timer
// again for the beats taken meanwhile: a job of the writer (beatsDue).
// The commit counts among the writer's commits, which a compaction
// compares with the file's transactions: like a group commit it changes
// nothing a compaction's swap does not carry over (compact.go takes the
// presence bucket whole).
func (w *writer) writeBeats() error {
	s := w.s
	if s.brokenErr() != nil {
		return nil // armed stays set: a damaged file is not written to
	}
	err := w.commitBeats()
	p := &s.pres
	p.mu.Lock()
	switch {
	case p.final || s.brokenErr() != nil:
	case len(p.dirty) > 0: // beaten meanwhile, or the commit failed: again a bound later
		p.timer.Reset(max(0, beatBound-time.Since(p.since)))
	default:
		p.armed = false
	}
	p.mu.Unlock()
	return err
}

// commitBeats commits the waiting beats alone, if any.
func (w *writer) commitBeats() error {
	s := w.s
	s.swap.RLock() // as a group commit holds it: a compaction's swap waits
	defer s.swap.RUnlock()
	return w.guard("write beats", func() error {
		tx, err := s.db.Begin(true)
		if err != nil {
			return err
		}
		put, err := s.putBeats(tx)
		if err != nil || len(put) == 0 {
			return errors.Join(err, tx.Rollback())
		}
		if err := s.commitIn(tx); err != nil {
			return err
		}
		s.wroteBeats(put)
		w.beatCommits.Add(1)
		w.commits.Add(1) // before s.swap is released (compact.go)
		return nil
	})
}

// closeBeats writes the beats no commit took, in a transaction of their
// own, and refuses beats from then on: the writer's last act at Close.
func (w *writer) closeBeats() error {
	s := w.s
	p := &s.pres
	p.mu.Lock()
	p.final = true
	p.timer.Stop()
	n := len(p.dirty)
	p.mu.Unlock()
	if n == 0 || s.brokenErr() != nil {
		return nil
	}
	return w.update("write beats", func(tx *bolt.Tx) error {
		put, err := s.putBeats(tx)
		if err == nil {
			defer s.wroteBeats(put) // the commit follows; on failure they are lost with the process
		}
		return err
	})
}
