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
// mark, synced a chunk at a time, and the commits' fsyncs find their
// blocks allocated: a shorter wait for every group and less kernel work
// per event.
//
// bbolt ignores whatever lies past its high-water mark (it extends the
// file when it needs more, and only if the file is shorter), and Check
// reads the pages below it; the zeros change nothing in the file's
// meaning, and a crash while they are written leaves a longer file.
//
// Nothing bbolt writes is ever overwritten with zeros, whatever bbolt
// does inside a commit: zeros are written only while no write
// transaction is committing, past the high-water mark the last one left,
// a piece at a time so that a commit waits for at most one piece. bbolt
// allocates and writes pages only in Commit, so a transaction may be open
// meanwhile: the group commit's is (Store.commitIn) while it gathers and
// puts its requests, and enters at its commit; the other write
// transactions (Store.updateIn) enter when they open. A damaged file gets
// no more zeros.
type reserve struct {
	f    *os.File
	mu   sync.Mutex
	cond sync.Cond

	hwm     int64 // bbolt's high-water mark after the last write transaction
	zeroEnd int64 // zeros written from somewhere below it up to it
	open    int   // write transactions committing (between enter and leave)
	stopped bool  // Close, or an error: nothing more is written
	kick    chan struct{}
	done    chan struct{}
	broken  func() bool // the store found damage
}

// reserveAhead is how far past the high-water mark the zeros should go,
// reservePiece how much is written at once; the reserve keeps an eighth
// of the file ahead, at least reserveMin (variables for tests).
var (
	reserveAhead int64 = 16 << 20
	reservePiece int64 = 1 << 20
	reserveMin   int64 = 256 << 10
)

// newReserve starts the reserve goroutine for the file at path, whose
// bbolt high-water mark is hwm bytes. It writes nothing until a commit
// has left room for it.
func newReserve(path string, hwm int64, broken func() bool) (*reserve, error) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	r := &reserve{f: f, hwm: hwm, zeroEnd: hwm, kick: make(chan struct{}, 1), done: make(chan struct{}), broken: broken}
	r.cond.L = &r.mu
	go r.run()
	return r, nil
}

// ahead is how far past the high-water mark the zeros should extend. The
// caller holds r.mu.
func (r *reserve) ahead() int64 {
	return min(max(r.hwm/8, reserveMin), reserveAhead)
}

// enter is called for every write transaction before it commits; it
// waits while a piece of zeros is written (the reserve goroutine holds
// r.mu then).
func (r *reserve) enter() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.open++
	r.mu.Unlock()
}

// leave ends what enter began, once the transaction is committed or
// rolled back: hwm is the high-water mark after it, < 0 when it cannot be
// read (then the reserve stops).
func (r *reserve) leave(hwm int64) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.open--
	r.hwm = max(r.hwm, hwm)
	if hwm < 0 {
		r.stopped = true
	}
	if r.open == 0 {
		r.cond.Broadcast()
	}
	if !r.stopped && r.zeroEnd-r.hwm < r.ahead() {
		select {
		case r.kick <- struct{}{}:
		default:
		}
	}
	r.mu.Unlock()
}

func (r *reserve) run() {
	defer close(r.done)
	zeros := make([]byte, reservePiece)
	for range r.kick {
		wrote := false
		for {
			// One piece, while no transaction is open.
			r.mu.Lock()
			for r.open > 0 && !r.stopped {
				r.cond.Wait()
			}
			from := max(r.zeroEnd, r.hwm)
			if r.stopped || r.broken() || r.zeroEnd-r.hwm >= r.ahead() {
				r.mu.Unlock()
				break
			}
			_, err := r.f.WriteAt(zeros, from)
			if err == nil {
				r.zeroEnd = from + int64(len(zeros))
				wrote = true
			} else {
				r.stopped = true // a full disk, say: bbolt reports its own errors
			}
			r.mu.Unlock()
		}
		if wrote && r.f.Sync() != nil {
			r.mu.Lock()
			r.stopped = true
			r.mu.Unlock()
		}
	}
}

// close stops the reserve goroutine after its current piece.
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
