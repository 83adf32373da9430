package boltstore

import (
	"slices"
	"sort"
	"strings"

	"github.com/clutchprotocol/clutch/store"
	bolt "go.etcd.io/bbolt"
)

// The index flush (tail.go) in two steps. Its plan — the keys and
// values of every index entry of the tail, sorted, the ids and
// idempotency keys in blocks, the posting lists encoded — needs no file,
// so a goroutine of its own makes it from the tail's entries (which only
// grow: the entries it reads are never changed) while the writer goes on
// committing groups. The writer then writes the plan in one transaction
// with the summaries and the watermark, between two groups: the groups
// wait for the puts and the commit, not for the sorting and encoding.
// Until that transaction commits, the entries stay in the tail, so reads
// and deduplication see them, and after a crash Open rebuilds them from
// the records as before.

// flushPlan is a prepared index flush of the first n entries of the tail
// whose base is base.
type flushPlan struct {
	base           uint64
	n              int
	puts           [len(planBuckets)][]keyVal // by planBuckets, in key order
	maxID, maxIdem []byte                     // the indexes' largest keys once written
	done           chan struct{}              // closed when the fields above are set
}

type keyVal struct{ key, val []byte }

type keyed struct {
	key string
	val []byte
}

// planBuckets are the buckets a flush writes, in the order of
// flushPlan.puts: the ids and idempotency keys, one key each and in
// blocks (idblocks.go), then the indexes by attribute.
var planBuckets = [...][]byte{
	bucketIDs, bucketIDBlocks, bucketIdem, bucketIdemBlocks,
	indexBuckets[indexes[0]], indexBuckets[indexes[1]], indexBuckets[indexes[2]], indexBuckets[indexes[3]],
}

// startPlan starts preparing the flush of the whole tail as it is now.
func (w *writer) startPlan() {
	t := w.s.tail
	p := &flushPlan{base: t.base, n: len(t.entries), done: make(chan struct{})}
	entries, maxID, maxIdem := t.entries[:p.n:p.n], w.maxID, w.maxIdem
	w.plan = p
	go func() {
		defer close(p.done)
		p.prepare(entries, maxID, maxIdem)
	}()
}

// planReady reports whether the plan being prepared, if any, is ready.
func (w *writer) planReady() bool {
	if w.plan == nil {
		return false
	}
	select {
	case <-w.plan.done:
		return true
	default:
		return false
	}
}

// prepare fills p from entries, the tail's first p.n, given the largest
// keys the indexes by key hold in the file.
func (p *flushPlan) prepare(entries []tailEntry, maxID, maxIdem []byte) {
	seqs := make([]byte, 0, 8*len(entries)) // bbolt keeps values until the commit
	var groups [len(indexBuckets)]map[string][]uint64
	for _, ix := range indexes {
		groups[ix] = make(map[string][]uint64)
	}
	byID := make([]keyed, 0, len(entries))
	var byIdem []keyed
	for i := range entries {
		e := &entries[i]
		seq := p.base + 1 + uint64(i)
		seqs = appendSeq(seqs, seq)
		v := seqs[len(seqs)-8:]
		byID = append(byID, keyed{e.id, v})
		if e.idemKey != "" {
			byIdem = append(byIdem, keyed{e.idemKey, v})
		}
		for _, ix := range indexes {
			attr := e.attr(ix)
			groups[ix][attr] = append(groups[ix][attr], seq)
		}
	}
	// In key order, time-ordered keys each land just after the one
	// before, at the end of their B+tree: no search back and forth, no
	// inserting in the middle of a node.
	for _, kv := range [...][]keyed{byID, byIdem} {
		slices.SortFunc(kv, func(a, b keyed) int { return strings.Compare(a.key, b.key) })
	}
	p.puts[0], p.puts[1], p.maxID = planKeyed(byID, maxID)
	p.puts[2], p.puts[3], p.maxIdem = planKeyed(byIdem, maxIdem)
	for i, ix := range indexes {
		attrs := make([]string, 0, len(groups[ix]))
		for a := range groups[ix] {
			attrs = append(attrs, a)
		}
		slices.Sort(attrs) // in key order: fewer page visits
		puts := make([]keyVal, 0, len(attrs))
		for _, a := range attrs {
			seqs := groups[ix][a]
			for len(seqs) > 0 {
				chunk := seqs[:min(len(seqs), maxPostingLen)]
				seqs = seqs[len(chunk):]
				puts = append(puts, keyVal{postingKey(a, chunk[0]), appendPosting(nil, chunk)})
			}
		}
		p.puts[4+i] = puts
	}
}

// planKeyed plans kv, sorted by key, for an index by key whose largest key
// is max: the keys past max in blocks, the others one key each. It
// returns the puts in the single keys' bucket and in the blocks', and the
// index's new largest key.
func planKeyed(kv []keyed, max []byte) (single, blocks []keyVal, newMax []byte) {
	past := sort.Search(len(kv), func(i int) bool { return max == nil || kv[i].key > string(max) })
	single = make([]keyVal, 0, past)
	for _, e := range kv[:past] {
		single = append(single, keyVal{[]byte(e.key), e.val})
	}
	rest := kv[past:]
	blocks = make([]keyVal, 0, (len(rest)+idBlockLen-1)/idBlockLen)
	for len(rest) > 0 {
		n := min(len(rest), idBlockLen)
		blocks = append(blocks, keyVal{[]byte(rest[0].key), appendIDBlock(nil, rest[:n])})
		rest = rest[n:]
	}
	if past < len(kv) {
		return single, blocks, []byte(kv[len(kv)-1].key)
	}
	return single, blocks, max
}

// fillPages sets the buckets a flush writes to fill their pages before
// splitting them. Their keys mostly land at the end of their B+tree
// (time-ordered ids, seqs, new runs and tasks), where bbolt's default
// (split a full page in half) leaves every page behind half empty: twice
// the pages to write, to sync and to keep. A key inserted in the middle
// still splits its page, into a full one and the rest.
func fillPages(tx *bolt.Tx) {
	for _, name := range planBuckets {
		tx.Bucket(name).FillPercent = 1.0
	}
	for _, name := range sumBuckets {
		if b := tx.Bucket(name); b != nil {
			b.FillPercent = 1.0
		}
	}
}

// writePlan waits for the plan being prepared and writes it, with the
// summaries changed since the last flush, in one transaction that moves
// the watermark past its entries; the tail keeps the entries after them.
// On failure the plan is dropped and the tail stays whole: the next plan
// retries (the events themselves are committed).
func (w *writer) writePlan() error {
	s, p := w.s, w.plan
	<-p.done
	w.plan = nil
	t := s.tail
	if s.brokenErr() != nil {
		// A damaged file keeps its index entries in memory: the next
		// Open rebuilds them, and the file is not written to.
		return nil
	}
	last := p.base + uint64(p.n)
	err := w.update("index flush", func(tx *bolt.Tx) error {
		fillPages(tx)
		for i, puts := range p.puts {
			b := tx.Bucket(planBuckets[i])
			for _, e := range puts {
				if err := b.Put(e.key, e.val); err != nil {
					return err
				}
			}
		}
		if err := tx.Bucket(bucketMeta).Put(keyIndexed, seqKey(last)); err != nil {
			return err
		}
		if w.sums != nil {
			// The summaries changed since the last flush (of events up
			// to the last group, past the plan's too), and the
			// "summarized" watermark past them.
			w.sums.tx = tx
			err := w.sums.commit()
			w.sums.tx = nil
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	w.maxID, w.maxIdem = p.maxID, p.maxIdem
	w.flushes.Add(1)
	// Readers may hold the old tail's entries: the new tail gets its own.
	rest := t.entries[p.n:]
	nt := &tail{base: last, entries: append(make([]tailEntry, 0, max(cap(t.entries), len(rest))), rest...), ids: t.ids, idem: t.idem}
	w.sums = nil
	s.mu.Lock()
	clear(nt.ids) // no reader keeps the maps past its lock
	clear(nt.idem)
	for i := range nt.entries {
		e := &nt.entries[i]
		nt.ids[e.id] = last + 1 + uint64(i)
		if e.idemKey != "" {
			nt.idem[e.idemKey] = last + 1 + uint64(i)
		}
	}
	s.tail = nt
	s.sums = [2]map[string]store.Summary{}
	s.mu.Unlock()
	return nil
}

// flush writes the whole tail to the file: the plan being prepared, if
// any, and then the entries after it.
func (w *writer) flush() error {
	for len(w.s.tail.entries) > 0 && w.s.brokenErr() == nil {
		if w.plan == nil {
			w.startPlan()
		}
		if err := w.writePlan(); err != nil {
			return err
		}
	}
	return nil
}
