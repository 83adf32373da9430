package boltstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
)

// The child side of TestCompactCrash: crashChild with compactions.
const compactChildEnv = "CLUTCH_BOLTSTORE_COMPACT_CHILD"

// A compaction while appenders, a reader and a follower keep working loses
// nothing: the appends acknowledged during the copy are carried over, every
// acknowledged event is in the new file under its seq, the follower sees
// every seq once and in order, and the file passes Check, also reopened.
func TestCompactUnderLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "events.db")
	// A small IndexBatch: index flushes are due during the copy (and
	// held back) and the new file has index entries past its watermark.
	s := openT(t, path, &boltstore.Options{IndexBatch: 97})
	ctx := context.Background()

	// The follower: every event from seq 1 up to the sentinel, once.
	sentinel := messages(t, 1)[0]
	followed := make(chan []uint64, 1)
	fctx, fcancel := context.WithTimeout(ctx, time.Minute)
	defer fcancel()
	go func() {
		var seqs []uint64
		for ev, err := range s.Follow(fctx, store.Query{}) {
			if err != nil {
				t.Error("follow:", err)
				break
			}
			seqs = append(seqs, ev.Seq)
			if m, _ := ev.Message(); m != nil && m.ID == sentinel.ID {
				break
			}
		}
		followed <- seqs
	}()

	stop := make(chan struct{})
	count := make(chan struct{})
	var acked sync.Map
	wait := appendLoad(t, s, 8, stop, &acked, count, nil)
	for range 500 {
		<-count
	}

	// The reader reads the whole log, again and again, and says when it
	// has read it once during the copy.
	readDuring := make(chan struct{})
	reading := make(chan bool)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		var during bool
		for {
			select {
			case <-stop:
				return
			case during = <-reading:
			default:
			}
			want := uint64(1)
			for ev, err := range s.Read(ctx, store.Query{}) {
				if err != nil {
					t.Error("read:", err)
					return
				}
				if ev.Seq != want {
					t.Errorf("read: seq %d follows %d", ev.Seq, want-1)
					return
				}
				want++
			}
			if during {
				close(readDuring)
				during = false
			}
		}
	}()

	var copies int
	var exclusiveCopy bool
	boltstore.SetAfterCopy(t, func(exclusive bool) {
		copies++
		exclusiveCopy = exclusive
		if exclusive {
			return
		}
		// Appends go on while the copy waits for its swap, and, on the
		// first copy, a whole read.
		for range 300 {
			<-count
		}
		if copies == 1 {
			reading <- true
			<-readDuring
		}
	})
	res, err := s.Compact(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 200 {
		<-count // appends after the swap
	}
	close(stop)
	wait()
	<-readerDone
	if _, err := s.Append(ctx, sentinel); err != nil {
		t.Fatal(err)
	}
	t.Logf("compaction: %+v", res)
	// An index flush that had begun when the copy began writes the old
	// file and makes the compaction copy again (doc.go); appends alone
	// never do, and the third copy holds everything.
	if copies < 1 || copies > 3 {
		t.Errorf("%d copies, want 1 to 3", copies)
	}
	if (!exclusiveCopy && res.Carried < 300) || res.LastSeq < 800 || res.BytesBefore <= 0 || res.BytesAfter <= 0 || res.Time.IsZero() {
		t.Errorf("result %+v: want at least 300 events carried over, 800 in the new file", res)
	}
	if _, err := os.Stat(path + ".compact"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the new file's temporary name is left: %v", err)
	}

	last, err := s.LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seqs := <-followed
	if uint64(len(seqs)) != last {
		t.Errorf("the follower saw %d events, the log holds %d", len(seqs), last)
	}
	for i, seq := range seqs {
		if seq != uint64(i+1) {
			t.Fatalf("the follower saw seq %d at position %d: a gap or a repeat", seq, i+1)
		}
	}
	checkAcked := func(s *boltstore.Store) {
		t.Helper()
		n := 0
		acked.Range(func(k, v any) bool {
			n++
			ev, err := s.Get(ctx, v.(string))
			if err != nil || ev.Seq != k.(uint64) {
				t.Errorf("acknowledged event %d (%s): seq %d, %v", k, v, ev.Seq, err)
				return false
			}
			return true
		})
		if got, err := drain(s.Read(ctx, store.Query{})); err != nil || uint64(got) != last {
			t.Errorf("read %d events (%v), want %d", got, err, last)
		}
		if err := s.Check(ctx); err != nil {
			t.Errorf("Check: %v", err)
		}
		if n < 1000 {
			t.Errorf("only %d appends acknowledged", n)
		}
	}
	checkAcked(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r := openT(t, path, nil)
	checkAcked(r)
}

// Compact copies the file in many transactions (pieces of 64 KiB here)
// and gives the old file's blocks back before it returns: a handle on the
// old file that is not the store's (a copy with cp, say) finds it empty
// then. An old file that still has a name, a hard link, is left whole,
// and opens as the store it was.
func TestCompactFreesOldFile(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the old file is freed by its close there")
	}
	boltstore.SetCompactPieces(t, 64<<10)
	dir := t.TempDir()
	path := filepath.Join(dir, "events.db")
	s := openT(t, path, nil)
	ctx := context.Background()
	if _, err := s.Append(ctx, messages(t, 1000)...); err != nil {
		t.Fatal(err)
	}
	held, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	res, err := s.Compact(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := held.Stat(); err != nil || fi.Size() != 0 || res.BytesBefore < 4*64<<10 {
		t.Fatalf("old file after Compact: %v, %v; want it emptied (%d bytes before)", fi.Size(), err, res.BytesBefore)
	}
	if n, err := drain(s.Read(ctx, store.Query{})); err != nil || n != 1000 {
		t.Fatalf("read %d events after Compact (%v), want 1000", n, err)
	}
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}

	link := filepath.Join(dir, "linked.db")
	if err := os.Link(path, link); err != nil {
		t.Skip("no hard links here:", err)
	}
	if _, err := s.Append(ctx, messages(t, 1)...); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r := openT(t, link, &boltstore.Options{ReadOnly: true})
	if n, err := drain(r.Read(ctx, store.Query{})); err != nil || n != 1001 {
		t.Fatalf("read %d events from the hard link of the old file (%v), want 1001", n, err)
	}
	if err := r.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// A write other than an append during the copy (an artifact here) makes
// Compact copy again, the third time with reads and appends held for the
// whole copy, so that it cannot be overtaken; the artifact is in the new
// file.
func TestCompactCopiesAgain(t *testing.T) {
	s := openT(t, filepath.Join(t.TempDir(), "events.db"), nil)
	ctx := context.Background()
	if _, err := s.Append(ctx, messages(t, 50)...); err != nil {
		t.Fatal(err)
	}
	var calls []bool
	var refs []string
	boltstore.SetAfterCopy(t, func(exclusive bool) {
		calls = append(calls, exclusive)
		if exclusive {
			return
		}
		ref, err := s.PutArtifact(ctx, "text/plain", []byte("during copy "+string(rune('a'+len(calls)))))
		if err != nil {
			t.Error(err)
		}
		refs = append(refs, ref)
	})
	if _, err := s.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 3 || calls[0] || calls[1] || !calls[2] {
		t.Fatalf("copies (exclusive?) %v, want [false false true]", calls)
	}
	for _, ref := range refs {
		if _, err := s.GetArtifact(ctx, ref); err != nil {
			t.Errorf("artifact put during a copy: %v", err)
		}
	}
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// Compaction drops the free pages that index flushes leave behind (each
// rewrites index and summary pages): the new file is no larger, holds the
// same events byte for byte, and passes Check.
func TestCompactReclaims(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	// NoSync: no zeros past the pages, so that file sizes compare pages.
	s := openT(t, path, &boltstore.Options{IndexBatch: 1, NoSync: true})
	ctx := context.Background()
	all := messages(t, 3000)
	for len(all) > 0 {
		n := min(len(all), 10)
		if _, err := s.Append(ctx, all[:n]...); err != nil {
			t.Fatal(err)
		}
		all = all[n:]
	}
	ref, err := s.PutArtifact(ctx, "application/octet-stream", bytes.Repeat([]byte("x"), 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	before := readAll(t, s)
	u0, err := s.Usage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Compact(ctx)
	if err != nil {
		t.Fatal(err)
	}
	u1, err := s.Usage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d bytes before (%d free), %d after (%d free)", res.BytesBefore, u0.Free, res.BytesAfter, u1.Free)
	if res.BytesAfter > res.BytesBefore {
		t.Errorf("the compacted file is larger: %d bytes, %d before", res.BytesAfter, res.BytesBefore)
	}
	if u0.Free == 0 || u1.Free >= u0.Free {
		t.Errorf("free bytes %d before, %d after: nothing reclaimed", u0.Free, u1.Free)
	}
	if !u0.LastCompaction.IsZero() || !u1.LastCompaction.Equal(res.Time) {
		t.Errorf("LastCompaction %v before, %v after; the compaction was at %v", u0.LastCompaction, u1.LastCompaction, res.Time)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != res.BytesAfter {
		t.Errorf("file size after: %v, %v; result says %d", fi, err, res.BytesAfter)
	}
	if after := readAll(t, s); len(after) != len(before) {
		t.Fatalf("%d events after, %d before", len(after), len(before))
	} else {
		for i := range after {
			if after[i].Seq != before[i].Seq || !bytes.Equal(after[i].Raw, before[i].Raw) || !after[i].Time.Equal(before[i].Time) {
				t.Fatalf("event %d differs after the compaction", before[i].Seq)
			}
		}
	}
	if _, err := s.GetArtifact(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
	// The store goes on: appends, dedup of an event of before.
	m, _ := before[17].Message()
	if res, err := s.Append(ctx, m); err != nil || !res[0].Duplicate || res[0].Seq != before[17].Seq {
		t.Fatalf("re-append after compaction: %+v %v", res, err)
	}
	if res, err := s.Append(ctx, messages(t, 1)...); err != nil || res[0].Seq != uint64(len(before)+1) {
		t.Fatalf("append after compaction: %+v %v", res, err)
	}
}

func readAll(t *testing.T, s store.Store) []store.Event {
	t.Helper()
	var evs []store.Event
	for ev, err := range s.Read(context.Background(), store.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// Compact refuses a read-only store and a closed one; a cancelled one
// leaves the store as it was, without the new file; Close during a
// compaction ends it, and the file opens and passes Check; Open removes
// the new file of a compaction that died before its swap.
func TestCompactEdges(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "events.db")
	ctx := context.Background()
	s := openT(t, path, nil)
	if _, err := s.Append(ctx, messages(t, 20)...); err != nil {
		t.Fatal(err)
	}

	cctx, cancel := context.WithCancel(ctx)
	boltstore.SetAfterCopy(t, func(bool) { cancel() })
	if _, err := s.Compact(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Compact: %v, want context.Canceled", err)
	}
	if _, err := os.Stat(path + ".compact"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a cancelled compaction left its file: %v", err)
	}
	if n, err := drain(s.Read(ctx, store.Query{})); n != 20 || err != nil {
		t.Fatalf("after a cancelled compaction: %d events, %v", n, err)
	}

	// Close while a copy waits for its swap: Compact ends with
	// ErrClosed, or finished first; the file is sound either way.
	inCopy, release := make(chan struct{}), make(chan struct{})
	boltstore.SetAfterCopy(t, func(bool) { close(inCopy); <-release })
	done := make(chan error, 1)
	go func() { _, err := s.Compact(ctx); done <- err }()
	<-inCopy
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	close(release)
	if err := <-done; err != nil && !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Compact during Close: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if _, err := s.Compact(ctx); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Compact of a closed store: %v, want ErrClosed", err)
	}
	boltstore.SetAfterCopy(t, nil)

	ro := openT(t, path, &boltstore.Options{ReadOnly: true})
	if _, err := ro.Compact(ctx); !errors.Is(err, boltstore.ErrReadOnly) {
		t.Fatalf("Compact of a read-only store: %v, want ErrReadOnly", err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}

	// A leftover of a compaction that died before its swap.
	if err := os.WriteFile(path+".compact", []byte("half a file"), 0o600); err != nil {
		t.Fatal(err)
	}
	s = openT(t, path, nil)
	if _, err := os.Stat(path + ".compact"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open left the leftover: %v", err)
	}
	if n, err := drain(s.Read(ctx, store.Query{})); n != 20 || err != nil {
		t.Fatalf("after the leftover: %d events, %v", n, err)
	}
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestCompactCrash kills a process that appends from 64 goroutines and
// compacts its file again and again with SIGKILL at a random moment
// (mostly during a copy, which takes most of its time), and checks that
// the file it leaves opens with no repair step, passes Check and holds
// every acknowledged append.
func TestCompactCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	rounds := 3
	if longRun() {
		rounds = 20
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d (kill points are drawn from it)", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	var acked []string
	for round := range rounds {
		got, compactions := crashOnce(t, compactChildEnv, path, rng)
		_, err := os.Stat(path + ".compact")
		t.Logf("round %d: killed after %d compactions, during a copy: %v", round, compactions, err == nil)
		acked = append(acked, got...)
		checkAfterCrash(t, path, round, len(got), acked)
		if _, err := os.Stat(path + ".compact"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("round %d: the new file of the killed compaction is left after Open: %v", round, err)
		}
	}
}

func ExampleStore_Compact() {
	dir, err := os.MkdirTemp("", "clutch")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	s, err := boltstore.Open(filepath.Join(dir, "events.db"), nil)
	if err != nil {
		panic(err)
	}
	defer s.Close()
	ids := protocol.NewIDs(nil)
	for range 3 {
		if _, err := s.Append(ctx, ids.NewMessage(protocol.TypeTaskRequest, "agent:orchestrator")); err != nil {
			panic(err)
		}
	}

	// On a timer, say, while the store keeps working.
	res, err := s.Compact(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("events up to seq", res.LastSeq, "no larger:", res.BytesAfter <= res.BytesBefore)

	u, err := store.UsageOf(ctx, s)
	if err != nil {
		panic(err)
	}
	fmt.Println("events:", u.Events, "compacted:", u.LastCompaction.Equal(res.Time))
	fmt.Println("check:", s.Check(ctx))
	// Output:
	// events up to seq 3 no larger: true
	// events: 3 compacted: true
	// check: <nil>
}

// A beat recorded with an append during the copy is in the new file: the
// presence bucket is carried over with the events, and the beat survives a
// reopen.
func TestCompactKeepsBeats(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	s := openT(t, path, nil)
	ctx := context.Background()
	if _, err := s.Append(ctx, messages(t, 20)...); err != nil {
		t.Fatal(err)
	}
	boltstore.SetAfterCopy(t, func(exclusive bool) {
		if _, _, err := s.Beat(ctx, "node:during", []byte("1")); err != nil {
			t.Error(err)
		}
		// The beat rides this append's commit (the writer waits for the
		// swap only after it).
		go func() {
			if _, err := s.Append(ctx, messages(t, 1)...); err != nil {
				t.Error(err)
			}
		}()
	})
	if _, err := s.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, path, nil)
	defer s.Close()
	var keys []string
	for b, err := range s.Beats(ctx, "node:") {
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, b.Key)
	}
	if len(keys) != 1 || keys[0] != "node:during" {
		t.Fatalf("beats after the compaction and a reopen: %v", keys)
	}
}

// A compaction while the file outgrows bbolt's memory map and readers
// keep starting ends: a commit that must grow the map waits for the
// copy's read transaction, and readers that start meanwhile wait behind
// that commit, so the copy must never need a second read transaction of
// the store's file to end (it did: a hang). The copy is slow here (pieces
// of 4 KiB, each synced) and the appends large, so that the map grows
// while it runs.
func TestCompactWhileTheMapGrows(t *testing.T) {
	boltstore.SetCompactPieces(t, 4<<10)
	s := openT(t, filepath.Join(t.TempDir(), "events.db"), nil)
	ctx := context.Background()
	if _, err := s.Append(ctx, messages(t, 200)...); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var acked sync.Map
	wait := appendLoad(t, s, 4, stop, &acked, nil, json.RawMessage(`{"text":"`+strings.Repeat("x", 32<<10)+`"}`))
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := drain(s.Read(ctx, store.Query{Limit: 5})); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.Compact(ctx)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(2 * time.Minute):
		// The store's Close would wait for the hang too: say so and end
		// the test binary here.
		buf := make([]byte, 1<<20)
		fmt.Fprintf(os.Stderr, "TestCompactWhileTheMapGrows: Compact did not end in 2 minutes (a deadlock with the growing map); goroutines:\n%s\n", buf[:runtime.Stack(buf, true)])
		os.Exit(1)
	}
	close(stop)
	wg.Wait()
	wait()
	n := 0
	acked.Range(func(k, v any) bool {
		n++
		if ev, err := s.Get(ctx, v.(string)); err != nil || ev.Seq != k.(uint64) {
			t.Errorf("acknowledged event %d (%s): seq %d, %v", k, v, ev.Seq, err)
			return false
		}
		return true
	})
	if n == 0 {
		t.Fatal("no append acknowledged")
	}
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d large appends beside the compaction", n)
}
