package boltstore_test

import (
	"encoding/binary"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	bolt "go.etcd.io/bbolt"
)

// BenchmarkDurableFloor is the floor under BenchmarkDurable's Append: the
// same 64 appenders, each building and encoding (validating) the same
// kind of message and then waiting for its fsync, with nothing but bbolt
// behind them. A plain group commit gathers every waiting message (all
// 64 callers, or what came within a millisecond), puts each one's bytes
// under its seq in one transaction, commits it with fsync and answers the
// callers: no deduplication, no index, no summaries, no checksums, no
// records. Store.Append can only be slower; the gap between the two is
// what the store itself costs.
func BenchmarkDurableFloor(b *testing.B) {
	db, err := bolt.Open(filepath.Join(b.TempDir(), "floor.db"), 0o600, &bolt.Options{FreelistType: bolt.FreelistMapType, PageSize: 16 << 10})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	bucket := []byte("events")
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket(bucket); return err }); err != nil {
		b.Fatal(err)
	}

	type call struct {
		raw  []byte
		done chan error
	}
	var (
		mu      sync.Mutex
		queued  []*call
		wake    = make(chan struct{}, 1)
		stop    = make(chan struct{})
		stopped = make(chan struct{})
		commits atomic.Int64
		want    int // wake the writer when this many are queued (0: on the first)
	)
	go func() { // the group commit
		defer close(stopped)
		var seq uint64
		var key [8]byte
		var group []*call
		for {
			select {
			case <-wake:
			case <-stop:
				return
			}
			// Gather: every caller, or what came within a millisecond.
			timer := time.NewTimer(time.Millisecond)
			mu.Lock()
		gather:
			for len(queued) < durableAppenders {
				want = durableAppenders
				mu.Unlock()
				select {
				case <-wake:
					mu.Lock()
				case <-timer.C:
					mu.Lock()
					break gather // the millisecond is over
				}
			}
			timer.Stop()
			want = 0
			group = append(group[:0], queued...)
			clear(queued)
			queued = queued[:0]
			mu.Unlock()
			if len(group) == 0 {
				continue
			}
			err := db.Update(func(tx *bolt.Tx) error {
				bk := tx.Bucket(bucket)
				bk.FillPercent = 1
				for _, c := range group {
					seq++
					binary.BigEndian.PutUint64(key[:], seq)
					if err := bk.Put(key[:], c.raw); err != nil {
						return err
					}
				}
				return nil
			})
			commits.Add(1)
			for _, c := range group {
				c.done <- err
			}
		}
	}()

	runAppenders(b, func() func(*protocol.Message) error {
		c := &call{done: make(chan error, 1)}
		return func(m *protocol.Message) error {
			raw, err := protocol.Encode(m)
			if err != nil {
				return err
			}
			c.raw = raw
			mu.Lock()
			queued = append(queued, c)
			if len(queued) == 1 || len(queued) >= want && want > 0 {
				select {
				case wake <- struct{}{}:
				default:
				}
			}
			mu.Unlock()
			return <-c.done
		}
	})
	close(stop)
	<-stopped
	b.ReportMetric(float64(b.N)/float64(max(commits.Load(), 1)), "events/commit")
}
