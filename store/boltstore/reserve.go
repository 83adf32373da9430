package boltstore

import (
	"os"
	"sync"
)

// The reserve: zeros written, and synced, past the pages bbolt uses.
//
// bbolt grows the file by extending it (a hole) and writes each commit's
// new pages into it. The fsync of a commit that writes into a hole must
// also allocate the blocks and commit the file system's journal; an fsync
// of blocks that were written before only writes them. So a background
// goroutine keeps some MiB of written zeros ahead of bbolt's high-water
// mark, in large chunks synced once each, and the commits' fsyncs find
// their blocks allocated: a shorter wait for every group and less kernel
// work per event.
//
// bbolt ignores whatever lies past its high-water mark (it extends the
// file when it needs more, and only if the file is shorter), and Check
// reads the pages below it; the zeros change nothing in the file's
// meaning, and a crash while they are written leaves a longer file.
//
// Nothing bbolt may write is ever overwritten with zeros: every write
// transaction first says how far past the high-water mark its commit can
// reach (enter). One that stays below the reserved zeros goes on while the
// reserve goroutine writes further on; one that may reach past them waits
// until no chunk is being written and holds the reserve goroutine back
// until its commit is done (leave). The reserve goroutine starts each
// chunk past every reach entered so far. A damaged file gets no more
// zeros.
type reserve struct {
	f    *os.File
	page int64 // bbolt's page size
	mu   sync.Mutex
	cond sync.Cond

	zeroEnd  int64 // the end of the last chunk written and synced
	reach    int64 // the furthest any commit may have written to
	busy     bool  // a chunk is being written, from busyFrom on
	busyFrom int64
	growing  int  // transactions that may write past zeroEnd, not yet done
	stopped  bool // Close, or an error: nothing more is written
	kick     chan struct{}
	done     chan struct{}
	broken   func() bool // the store found damage
}

// reserveChunk bounds one chunk of zeros, reserveAhead how far past the
// furthest reach the zeros should go; both shrink for a small file
// (variables for tests, which make them tiny to make the reserve busy).
var (
	reserveChunk int64 = 4 << 20
	reserveAhead int64 = 16 << 20
	reserveMin   int64 = 256 << 10
)

// newReserve starts the reserve goroutine for the file at path, whose
// bbolt high-water mark is hwm bytes. It writes nothing until a commit
// asks for room.
func newReserve(path string, page, hwm int64, broken func() bool) (*reserve, error) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	r := &reserve{f: f, page: page, zeroEnd: hwm, reach: hwm, kick: make(chan struct{}, 1), done: make(chan struct{}), broken: broken}
	r.cond.L = &r.mu
	go r.run()
	return r, nil
}

// ahead is how far past the furthest reach the zeros should extend: an
// eighth of the file, at least reserveMin and at most reserveAhead. The
// caller holds r.mu.
func (r *reserve) ahead() int64 {
	return min(max(r.reach/8, reserveMin), reserveAhead)
}

// enter is called inside a write transaction before it changes anything:
// hwm is the transaction's high-water mark (Tx.Size) and payload the
// bytes of keys and values it is about to put at the end of the events
// bucket, or anywhere as one key; payload < 0 says the transaction may
// rewrite pages anywhere (the index flush), and always takes the
// exclusive path. enter waits while a chunk of zeros is written where the
// commit may reach. Its result goes to leave, after the commit.
func (r *reserve) enter(hwm, payload int64) (grow bool) {
	if r == nil {
		return false
	}
	// What such a commit may add past the high-water mark: its keys and
	// values in pages half full at worst, the pages on the way from the
	// root to the ones it changes and the branches it splits, and a
	// free list naming every page.
	reach := hwm + 2*payload + 256*r.page + 8*(hwm/r.page+1)
	r.mu.Lock()
	defer r.mu.Unlock()
	if payload >= 0 {
		r.reach = max(r.reach, reach)
	}
	for r.busy && (payload < 0 || reach > r.busyFrom) {
		r.cond.Wait()
	}
	if payload < 0 || reach > r.zeroEnd {
		r.growing++
		grow = true
	}
	if !r.stopped && r.zeroEnd-reach < r.ahead() {
		select {
		case r.kick <- struct{}{}:
		default:
		}
	}
	return grow
}

// leave ends what enter began, once the commit is done (or failed); hwm
// is the high-water mark after it, < 0 when it cannot be read (then the
// reserve stops).
func (r *reserve) leave(grow bool, hwm int64) {
	if r == nil || !grow {
		return
	}
	r.mu.Lock()
	r.reach = max(r.reach, hwm)
	if hwm < 0 {
		r.stopped = true
	}
	r.growing--
	r.cond.Broadcast()
	r.mu.Unlock()
}

func (r *reserve) run() {
	defer close(r.done)
	zeros := make([]byte, 256<<10)
	for range r.kick {
		r.mu.Lock()
		for r.growing > 0 && !r.stopped {
			r.cond.Wait()
		}
		from := (max(r.zeroEnd, r.reach) + r.page - 1) / r.page * r.page
		size := min(r.ahead(), reserveChunk)
		if r.stopped || r.broken() || r.zeroEnd-r.reach >= r.ahead() {
			r.mu.Unlock()
			continue
		}
		r.busy, r.busyFrom = true, from
		r.mu.Unlock()

		var err error
		for off := int64(0); off < size && err == nil; off += int64(len(zeros)) {
			_, err = r.f.WriteAt(zeros[:min(int64(len(zeros)), size-off)], from+off)
		}
		if err == nil {
			err = r.f.Sync()
		}

		r.mu.Lock()
		r.busy = false
		if err != nil {
			r.stopped = true // a full disk, say: bbolt reports its own errors
		} else {
			r.zeroEnd = from + size
		}
		r.cond.Broadcast()
		r.mu.Unlock()
	}
}

// close stops the reserve goroutine after its current chunk.
func (r *reserve) close() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	r.stopped = true
	r.cond.Broadcast()
	r.mu.Unlock()
	close(r.kick)
	<-r.done
	return r.f.Close()
}
