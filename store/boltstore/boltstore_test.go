package boltstore_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	bolt "go.etcd.io/bbolt"

	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
	"github.com/clutchprotocol/clutch/store/storetest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if crashChild() || corruptChild() || reopenChild() || beatChild() {
		return
	}
	goleak.VerifyTestMain(m)
}

// opener returns a newStore and a Reopen for storetest with these options.
func opener(opts *boltstore.Options) (func(*testing.T) store.Store, func(*testing.T, store.Store) store.Store) {
	open := func(t *testing.T, path string) store.Store {
		t.Helper()
		s, err := boltstore.Open(path, opts)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	newStore := func(t *testing.T) store.Store {
		return open(t, filepath.Join(t.TempDir(), "events.db"))
	}
	reopen := func(t *testing.T, closed store.Store) store.Store {
		return open(t, closed.(*boltstore.Store).Path())
	}
	return newStore, reopen
}

func TestConformance(t *testing.T) {
	for _, c := range []struct {
		name string
		opts *boltstore.Options
		so   storetest.Options
	}{
		{"defaults", nil, storetest.Options{}},
		// The variants skip fsync to keep the run short; what they vary
		// does not depend on it. Index flushes after every commit, and
		// after every few events: reads cross the file/tail boundary
		// everywhere.
		{"IndexBatch=1", &boltstore.Options{IndexBatch: 1, NoSync: true}, storetest.Options{}},
		{"IndexBatch=7,4KiB pages", &boltstore.Options{IndexBatch: 7, PageSize: 4096, NoSync: true}, storetest.Options{}},
		{"MaxBatch=1", &boltstore.Options{MaxBatch: 1, IndexBatch: 100, NoSync: true}, storetest.Options{}},
		{"small limits", &boltstore.Options{MaxEventSize: 4096, MaxArtifactSize: 2 << 20, IndexBatch: 50, NoSync: true},
			storetest.Options{MaxEventSize: 4096, MaxArtifactSize: 2 << 20}},
	} {
		t.Run(c.name, func(t *testing.T) {
			newStore, reopen := opener(c.opts)
			c.so.Reopen, c.so.Remover, c.so.Conditional = reopen, true, true
			storetest.Run(t, newStore, c.so)
		})
	}
}

func openT(t *testing.T, path string, opts *boltstore.Options) *boltstore.Store {
	t.Helper()
	s, err := boltstore.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// editFile changes the closed store file at path with bbolt directly, in
// one transaction, as another program or damage would.
func editFile(t *testing.T, path string, f func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(f); err != nil {
		t.Fatal(err)
	}
}

func messages(t testing.TB, n int) []*protocol.Message {
	return storetest.BenchMessages(t, n, 1)[0]
}

// A file another process (here: another open) holds gives ErrLocked after
// LockTimeout, not a hang.
func TestLockedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	openT(t, path, nil)
	start := time.Now()
	_, err := boltstore.Open(path, &boltstore.Options{LockTimeout: 100 * time.Millisecond})
	if !errors.Is(err, boltstore.ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("second Open took %v", d)
	}
	if protocol.CodeOf(err) != protocol.CodeConflict {
		t.Fatalf("CodeOf(%v) = %s", err, protocol.CodeOf(err))
	}
}

// A file written by a newer format is refused with a clear error and left
// as it is.
func TestNewerFormatRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	s, err := boltstore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(t.Context(), messages(t, 3)...); err != nil {
		t.Fatal(err)
	}
	s.Close()
	editFile(t, path, func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("format"), []byte{0, 0, 0, 4})
	})
	before, _ := os.ReadFile(path)
	_, err = boltstore.Open(path, nil)
	var fe *boltstore.FormatError
	if !errors.Is(err, boltstore.ErrFormat) || !errors.As(err, &fe) || fe.Version != 4 || fe.Supported != 3 {
		t.Fatalf("Open of a format 4 file: %v, want a FormatError for version 4", err)
	}
	if !strings.Contains(err.Error(), "newer") {
		t.Fatalf("error %q does not say the file is newer", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("Open changed a file it refused")
	}
}

// A bbolt file of something else is not taken over.
func TestForeignFileRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "other.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("theirs")); return err })
	db.Close()
	if _, err := boltstore.Open(path, nil); !errors.Is(err, boltstore.ErrFormat) {
		t.Fatalf("Open of a foreign bbolt file: %v, want ErrFormat", err)
	}
	if err := os.WriteFile(path, []byte("not a database at all"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := boltstore.Open(path, &boltstore.Options{LockTimeout: time.Second}); err == nil {
		t.Fatal("Open of a garbage file succeeded")
	}
}

func TestInvalidOptions(t *testing.T) {
	for _, o := range []boltstore.Options{
		{LockTimeout: -1}, {MaxBatch: -1}, {IndexBatch: -1}, {MaxEventSize: -1},
		{MaxArtifactSize: -1}, {PageSize: 1000}, {PageSize: 1 << 20},
	} {
		if _, err := boltstore.Open(filepath.Join(t.TempDir(), "x.db"), &o); !errors.Is(err, boltstore.ErrInvalidOptions) {
			t.Errorf("Open(%+v) = %v, want ErrInvalidOptions", o, err)
		}
	}
}

// Concurrent appends share commits, the in-memory index stays bounded,
// and Check finds the file consistent whether the index is in the file,
// in memory, or split between them.
func TestGroupCommitAndCheck(t *testing.T) {
	for _, ib := range []int{1, 100, 1 << 20} {
		t.Run(fmt.Sprint("IndexBatch=", ib), func(t *testing.T) {
			s := openT(t, filepath.Join(t.TempDir(), "events.db"), &boltstore.Options{IndexBatch: ib})
			work := storetest.BenchMessages(t, 1600, 32)
			var wg sync.WaitGroup
			for _, msgs := range work {
				wg.Go(func() {
					for _, m := range msgs {
						if _, err := s.Append(t.Context(), m); err != nil {
							t.Error(err)
							return
						}
						// The tail: IndexBatch entries, those appended
						// while their flush is prepared, and up to two
						// groups (of a message per caller).
						if n := s.Stats().Unindexed; n >= 2*ib+2*len(work) {
							t.Errorf("%d events unindexed, want fewer than %d", n, 2*ib+2*len(work))
							return
						}
					}
				})
			}
			wg.Wait()
			st := s.Stats()
			if st.Appended != 1600 || st.Commits >= 1600 {
				t.Fatalf("stats %+v: want 1600 events in fewer commits", st)
			}
			t.Logf("%+v", st)
			if err := s.Check(t.Context()); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Append(t.Context(), work[0][0]); err != nil {
				t.Fatal(err)
			}
			if st := s.Stats(); st.Duplicates != 1 {
				t.Fatalf("stats %+v: want 1 duplicate", st)
			}
		})
	}
}

// Close commits what was handed to the writer: every Append either
// succeeded, and its event is there after reopen, or got ErrClosed.
func TestCloseDrainsAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	s, err := boltstore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	work := storetest.BenchMessages(t, 2000, 40)
	var mu sync.Mutex
	var ok []string
	var wg sync.WaitGroup
	// Close once the appenders are well under way (some appends
	// acknowledged, most still to come), so it lands in the middle of them.
	underway := make(chan struct{})
	var closeOnce sync.Once
	for _, msgs := range work {
		wg.Go(func() {
			for _, m := range msgs {
				_, err := s.Append(t.Context(), m)
				if errors.Is(err, store.ErrClosed) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				ok = append(ok, m.ID)
				if len(ok) == 200 {
					closeOnce.Do(func() { close(underway) })
				}
				mu.Unlock()
			}
		})
	}
	go func() { wg.Wait(); closeOnce.Do(func() { close(underway) }) }() // appenders that failed early
	<-underway
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	s = openT(t, path, nil)
	if n, _ := s.LastSeq(t.Context()); n != uint64(len(ok)) {
		t.Fatalf("LastSeq after reopen = %d, %d appends succeeded", n, len(ok))
	}
	for _, id := range ok {
		if _, err := s.Get(t.Context(), id); err != nil {
			t.Fatalf("Get(%s) after reopen: %v", id, err)
		}
	}
	if err := s.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Unindexed != 0 {
		t.Fatalf("after a clean Close %d events were left unindexed", st.Unindexed)
	}
}

// A damaged record gives ErrCorrupt to readers and to Check, never a panic.
func TestCorruptRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	s, err := boltstore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	msgs := messages(t, 5)
	if _, err := s.Append(t.Context(), msgs...); err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("events")).Put([]byte{0, 0, 0, 0, 0, 0, 0, 3}, []byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 200})
	})
	db.Close()
	s = openT(t, path, nil)
	if _, err := s.Get(t.Context(), msgs[2].ID); !errors.Is(err, boltstore.ErrCorrupt) {
		t.Fatalf("Get of a damaged event: %v, want ErrCorrupt", err)
	}
	if _, err := s.Get(t.Context(), msgs[1].ID); err != nil {
		t.Fatalf("Get of an intact event: %v", err)
	}
	n, err := drain(s.Read(t.Context(), store.Query{}))
	if n != 2 || !errors.Is(err, boltstore.ErrCorrupt) {
		t.Fatalf("Read over a damaged event: %d events, %v", n, err)
	}
	if err := s.Check(t.Context()); !errors.Is(err, boltstore.ErrCorrupt) {
		t.Fatalf("Check: %v, want ErrCorrupt", err)
	}
	// Once damage is found, the file is not written to: appends and
	// artifacts are refused, and Close leaves it as it was.
	before, _ := os.ReadFile(path)
	if _, err := s.Append(t.Context(), messages(t, 1)...); !errors.Is(err, boltstore.ErrCorrupt) {
		t.Fatalf("Append to a damaged store: %v, want ErrCorrupt", err)
	}
	if _, err := s.PutArtifact(t.Context(), "text/plain", []byte("x")); !errors.Is(err, boltstore.ErrCorrupt) {
		t.Fatalf("PutArtifact to a damaged store: %v, want ErrCorrupt", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("a store that found damage wrote to its file")
	}
}

// A damaged artifact gives ErrCorrupt to GetArtifact and to Check, not
// data that does not match its address.
func TestCorruptArtifact(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	s, err := boltstore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := s.PutArtifact(t.Context(), "text/plain", []byte("the artifact's bytes"))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("artifacts"))
		k, v := b.Cursor().First()
		v = bytes.Clone(v)
		v[len(v)-1] ^= 1
		return b.Put(bytes.Clone(k), v)
	})
	db.Close()
	s = openT(t, path, nil)
	if _, err := s.GetArtifact(t.Context(), ref); !errors.Is(err, boltstore.ErrCorrupt) {
		t.Fatalf("GetArtifact of a damaged artifact: %v, want ErrCorrupt", err)
	}
	if err := s.Check(t.Context()); !errors.Is(err, boltstore.ErrCorrupt) {
		t.Fatalf("Check: %v, want ErrCorrupt", err)
	}
}

// A file of an older format (1 or 2; nothing was released before 3) is
// refused, for writing and read-only, with a FormatError that names both
// versions, and left as it is.
func TestOlderFormatRefused(t *testing.T) {
	for _, ver := range []byte{1, 2} {
		path := filepath.Join(t.TempDir(), "events.db")
		s, err := boltstore.Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Append(t.Context(), messages(t, 3)...); err != nil {
			t.Fatal(err)
		}
		s.Close()
		editFile(t, path, func(tx *bolt.Tx) error {
			return tx.Bucket([]byte("meta")).Put([]byte("format"), []byte{0, 0, 0, ver})
		})
		before, _ := os.ReadFile(path)
		for _, opts := range []*boltstore.Options{nil, {ReadOnly: true}} {
			_, err = boltstore.Open(path, opts)
			var fe *boltstore.FormatError
			if !errors.Is(err, boltstore.ErrFormat) || !errors.As(err, &fe) || fe.Version != uint32(ver) || fe.Supported != 3 {
				t.Fatalf("Open(%+v) of a format %d file: %v, want a FormatError for version %d", opts, ver, err, ver)
			}
			want := fmt.Sprintf("format %d is not supported; this version reads format 3", ver)
			if fe.Detail != want || !strings.Contains(err.Error(), want) {
				t.Fatalf("Open of a format %d file: %q, want it to say %q", ver, err, want)
			}
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
			t.Fatalf("Open changed a format %d file it refused", ver)
		}
	}
}

// viewFile reads the closed store file at path with bbolt directly.
func viewFile(t *testing.T, path string, f func(tx *bolt.Tx)) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(tx *bolt.Tx) error { f(tx); return nil })
}

func drain(seq func(func(store.Event, error) bool)) (n int, err error) {
	for _, e := range seq {
		if e != nil {
			return n, e
		}
		n++
	}
	return n, nil
}

// A run with more events than a posting chunk holds reads back whole from
// any seq, before and after reopen, and the file checks clean.
func TestLongPostings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	s, err := boltstore.Open(path, &boltstore.Options{IndexBatch: 3000, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	msgs := messages(t, 2500) // one run, thread and agent
	for i := 0; i < len(msgs); i += 250 {
		if _, err := s.Append(t.Context(), msgs[i:i+250]...); err != nil {
			t.Fatal(err)
		}
	}
	check := func(s *boltstore.Store) {
		t.Helper()
		for _, after := range []uint64{0, 1, 1023, 1024, 1025, 2047, 2048, 2049, 2499, 2500} {
			for _, q := range []store.Query{{RunID: msgs[0].RunID}, {AgentID: msgs[0].From.AgentID}, {ThreadID: msgs[0].ThreadID}} {
				q.AfterSeq = after
				want := after
				for ev, err := range s.Read(t.Context(), q) {
					if err != nil {
						t.Fatal(err)
					}
					if want++; ev.Seq != want {
						t.Fatalf("Read(%+v): seq %d, want %d", q, ev.Seq, want)
					}
				}
				if want != 2500 {
					t.Fatalf("Read(%+v) ended at %d", q, want)
				}
			}
		}
		if err := s.Check(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	check(s) // all in the tail
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, path, nil)
	if st := s.Stats(); st.Unindexed != 0 {
		t.Fatalf("%d events unindexed after Close", st.Unindexed)
	}
	check(s) // all in the file, in chunks of at most 1024
}

// AppendIfNew drops a caller's batch whose first message is a duplicate
// as a whole, in the group it shares with other callers' appends, which
// are stored as usual; the left-out messages are not counted as
// duplicates, and the file checks and reopens with contiguous seqs.
func TestConditionalInGroup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	s := openT(t, path, &boltstore.Options{IndexBatch: 5})
	work := storetest.BenchMessages(t, 1+3*3*8, 1)[0]
	first := work[0]
	first.IdempotencyKey = "once"
	first.Reset()
	if _, err := s.Append(t.Context(), first); err != nil {
		t.Fatal(err)
	}
	work = work[1:]
	const callers = 8
	batches := make([][]*protocol.Message, 3*callers)
	for i := range batches {
		batches[i] = work[3*i : 3*i+3]
	}
	for _, b := range batches[:callers] { // first a duplicate by key
		b[0].RunID, b[0].IdempotencyKey = first.RunID, "once"
		b[0].Reset()
	}
	start := make(chan struct{})
	results := make([][]store.AppendResult, len(batches))
	var wg sync.WaitGroup
	for i, b := range batches {
		wg.Go(func() {
			<-start
			var err error
			if i < 2*callers {
				results[i], err = s.AppendIfNew(t.Context(), b...)
			} else {
				results[i], err = s.Append(t.Context(), b...)
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
	var left []string
	for i, res := range results {
		switch {
		case i < callers:
			if want := (store.AppendResult{Seq: 1, Duplicate: true, DuplicateBy: store.DedupByIdempotencyKey}); res[0] != want || res[1] != (store.AppendResult{}) || res[2] != (store.AppendResult{}) {
				t.Fatalf("batch %d, first a duplicate: %+v", i, res)
			}
			left = append(left, batches[i][1].ID, batches[i][2].ID)
		default:
			for j, r := range res {
				if !r.Stored() || (j > 0 && r.Seq != res[0].Seq+uint64(j)) {
					t.Fatalf("batch %d: %+v, want three consecutive new events", i, res)
				}
			}
		}
	}
	if st := s.Stats(); st.Appended != 1+2*callers*3 || st.Duplicates != callers {
		t.Fatalf("stats %+v: want %d appended, %d duplicates", st, 1+2*callers*3, callers)
	}
	if err := s.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, path, nil)
	n := 0
	for ev, err := range s.Read(t.Context(), store.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; ev.Seq != uint64(n) {
			t.Fatalf("event %d has seq %d", n, ev.Seq)
		}
	}
	if n != 1+2*callers*3 {
		t.Fatalf("reopened: %d events, want %d", n, 1+2*callers*3)
	}
	for _, id := range left {
		if _, err := s.Get(t.Context(), id); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get of a message left out: %v, want ErrNotFound", err)
		}
	}
	// Left out, not remembered: a plain append stores them.
	res, err := s.Append(t.Context(), batches[0][1], batches[0][2])
	if err != nil || !res[0].Stored() || res[1].Seq != uint64(n+2) {
		t.Fatalf("appending the left-out messages: %+v, %v", res, err)
	}
}
