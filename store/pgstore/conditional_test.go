package pgstore_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/pgstore"
)

// Two processes' stores on one database: of conditional batches whose
// first messages share a run and idempotency key, sent through both at
// once among plain appends, exactly one is stored, whole; the others
// store nothing, count one duplicate each (not the messages left out),
// and the log's seqs stay contiguous.
func TestConditionalAcrossStores(t *testing.T) {
	a := openStore(t, nil)
	b, err := pgstore.Open(t.Context(), a.DSN(), &pgstore.Options{Schema: a.Schema()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	const callers = 8
	run := msgs(1)[0].RunID
	batches := make([][]*protocol.Message, 2*callers)
	for i := range batches {
		batches[i] = msgs(3)
		for _, m := range batches[i] {
			m.RunID = run
		}
		if i < callers {
			batches[i][0].IdempotencyKey = "once"
		}
		batches[i][1].IdempotencyKey = fmt.Sprint("rest-", i)
	}
	results := make([][]store.AppendResult, len(batches))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, batch := range batches {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			<-start
			var err error
			if i < callers {
				results[i], err = s.AppendIfNew(t.Context(), batch...)
			} else {
				results[i], err = s.Append(t.Context(), batch...)
			}
			if err != nil {
				t.Error(err)
			}
		})
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		return
	}
	stored := 0
	for i, res := range results {
		if i >= callers || res[0].Stored() {
			stored++
			for j, r := range res {
				if !r.Stored() || r.Seq != res[0].Seq+uint64(j) {
					t.Fatalf("batch %d: %+v, want three consecutive new events", i, res)
				}
			}
			continue
		}
		if res[0].DuplicateBy != store.DedupByIdempotencyKey || res[1] != (store.AppendResult{}) || res[2] != (store.AppendResult{}) {
			t.Fatalf("batch %d, first a duplicate: %+v", i, res)
		}
	}
	if stored != callers+1 {
		t.Fatalf("%d batches stored, want %d", stored, callers+1)
	}
	sa, sb := a.Stats(), b.Stats()
	if n := sa.Appended + sb.Appended; n != 3*(callers+1) {
		t.Errorf("appended %d, want %d", n, 3*(callers+1))
	}
	if n := sa.Duplicates + sb.Duplicates; n != callers-1 {
		t.Errorf("duplicates %d, want %d (one per dropped batch)", n, callers-1)
	}
	n := uint64(0)
	for ev, err := range a.Read(t.Context(), store.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; ev.Seq != n {
			t.Fatalf("event %d has seq %d", n, ev.Seq)
		}
	}
	if n != 3*(callers+1) {
		t.Fatalf("the log holds %d events, want %d", n, 3*(callers+1))
	}
}
