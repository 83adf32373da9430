package boltstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
)

// loadMessage is one message of appender g's i-th append.
func loadMessage(ids *protocol.IDs, run, thread string, g, i int) *protocol.Message {
	m := ids.NewMessage(protocol.TypeTaskProgress, "agent:w"+strconv.Itoa(g))
	m.RunID, m.ThreadID = run, thread
	m.IdempotencyKey = "k" + strconv.Itoa(i)
	m.Payload = json.RawMessage(`{"g":` + strconv.Itoa(g) + `,"i":` + strconv.Itoa(i) + `}`)
	return m
}

// appendLoad appends from n goroutines until stop is closed, and records
// each acknowledged event's id by seq in acked. Each event has payload, or
// loadMessage's small one when payload is nil. It returns a wait for the
// appenders.
func appendLoad(t *testing.T, s *boltstore.Store, n int, stop <-chan struct{}, acked *sync.Map, count chan<- struct{}, payload json.RawMessage) func() {
	ids := protocol.NewIDs(nil)
	var wg sync.WaitGroup
	for g := range n {
		wg.Go(func() {
			run, thread := ids.RunID(), ids.ThreadID()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				m := loadMessage(ids, run, thread, g, i)
				if payload != nil {
					m.Payload = payload
				}
				res, err := s.Append(context.Background(), m)
				if err != nil {
					t.Error(err)
					return
				}
				acked.Store(res[0].Seq, m.ID)
				select {
				case count <- struct{}{}:
				default:
				}
			}
		})
	}
	return wg.Wait
}

// A backup taken while appenders keep appending holds every event
// acknowledged before it began, opens as a store (its index tail rebuilt
// as after a crash), passes Check, and serves reads, appends and follows
// from where it ended. BackupFile syncs it in pieces of 64 KiB here, so
// that the copy is synced many times while it is written.
func TestBackupUnderLoad(t *testing.T) {
	boltstore.SetBackupSyncEvery(t, 64<<10)
	dir := t.TempDir()
	// A small IndexBatch, so that the backup's file has index entries
	// after its watermark (rebuilt when it opens) and flushes happen
	// while it is copied.
	s := openT(t, filepath.Join(dir, "events.db"), &boltstore.Options{IndexBatch: 97})
	stop := make(chan struct{})
	count := make(chan struct{})
	var acked sync.Map
	wait := appendLoad(t, s, 8, stop, &acked, count, nil)
	for range 600 {
		<-count // appends acknowledged before the backup
	}
	before := map[uint64]string{}
	acked.Range(func(k, v any) bool { before[k.(uint64)] = v.(string); return true })

	backup := filepath.Join(dir, "backup.db")
	info, err := s.BackupFile(context.Background(), backup)
	for range 200 {
		<-count // and appends after it began: the load went on
	}
	close(stop)
	wait()
	if err != nil {
		t.Fatal(err)
	}
	if info.Bytes <= 0 || info.Time.IsZero() || info.Duration <= 0 {
		t.Fatalf("info = %+v", info)
	}
	fi, err := os.Stat(backup)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || fi.Size() != info.Bytes {
		t.Fatalf("backup file: mode %v size %d, info %+v", fi.Mode().Perm(), fi.Size(), info)
	}
	if info.Bytes < 4*64<<10 {
		t.Fatalf("backup of %d bytes: fewer than 4 pieces synced during the copy", info.Bytes)
	}
	if n := len(before); info.LastSeq < uint64(n) {
		t.Fatalf("backup ends at seq %d, %d events were acknowledged before it", info.LastSeq, n)
	}
	last, _ := s.LastSeq(context.Background())
	if last <= info.LastSeq {
		t.Fatalf("the store's last seq %d is not past the backup's %d: no append ran during or after it", last, info.LastSeq)
	}

	r := openT(t, backup, nil)
	ctx := context.Background()
	if err := r.Check(ctx); err != nil {
		t.Fatalf("Check of the backup: %v", err)
	}
	if got, _ := r.LastSeq(ctx); got != info.LastSeq {
		t.Fatalf("restored LastSeq = %d, backup info says %d", got, info.LastSeq)
	}
	for seq, id := range before {
		ev, err := r.Get(ctx, id)
		if err != nil {
			t.Fatalf("event %d (%s) acknowledged before the backup: %v", seq, id, err)
		}
		if ev.Seq != seq {
			t.Fatalf("event %s: seq %d in the backup, %d in the store", id, ev.Seq, seq)
		}
	}
	n, err := drain(r.Read(ctx, store.Query{}))
	if err != nil || uint64(n) != info.LastSeq {
		t.Fatalf("read %d events of the backup (err %v), want %d", n, err, info.LastSeq)
	}
	// Dedup across the backup's end works from the rebuilt tail too.
	var anyID string
	for _, id := range before {
		anyID = id
		break
	}
	orig, err := s.Get(ctx, anyID)
	if err != nil {
		t.Fatal(err)
	}
	om, _ := orig.Message()
	dup, err := r.Append(ctx, om)
	if err != nil || !dup[0].Duplicate || dup[0].Seq != orig.Seq {
		t.Fatalf("re-append of event %d to the restored store: %+v, %v", orig.Seq, dup, err)
	}

	// It goes on from where the backup ended.
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	next := messages(t, 1)[0]
	res, err := r.Append(ctx, next)
	if err != nil || res[0].Seq != info.LastSeq+1 {
		t.Fatalf("append to the restored store: %+v, %v (want seq %d)", res, err, info.LastSeq+1)
	}
	for ev, err := range r.Follow(fctx, store.Query{AfterSeq: info.LastSeq, Limit: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		m, _ := ev.Message()
		if ev.Seq != info.LastSeq+1 || m.ID != next.ID {
			t.Fatalf("follow after the backup's end: seq %d id %s, want %d %s", ev.Seq, m.ID, info.LastSeq+1, next.ID)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r = openT(t, backup, nil)
	if err := r.Check(ctx); err != nil {
		t.Fatalf("Check of the restored store after an append and a reopen: %v", err)
	}
}

// Backup reports what it wrote, works on a read-only open, stops when ctx is done, refuses the store's own file and
// a closed store.
func TestBackupEdges(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "events.db")
	s := openT(t, path, nil)
	ctx := context.Background()
	if _, err := s.Append(ctx, messages(t, 50)...); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	info, err := s.Backup(ctx, &buf)
	if err != nil || info.LastSeq != 50 || info.Bytes != int64(buf.Len()) {
		t.Fatalf("Backup: %+v, %v (buffer %d bytes)", info, err, buf.Len())
	}
	if _, err := s.BackupFile(ctx, path); !errors.Is(err, boltstore.ErrInvalidOptions) {
		t.Fatalf("BackupFile onto the store's own file: %v, want ErrInvalidOptions", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Backup(cctx, &buf); !errors.Is(err, context.Canceled) {
		t.Fatalf("Backup with a cancelled ctx: %v", err)
	}
	// Cancelled mid-copy: the writer cancels after its first piece.
	cctx, cancel = context.WithCancel(ctx)
	w := &cancelWriter{cancel: cancel}
	if _, err := s.Backup(cctx, w); !errors.Is(err, context.Canceled) || w.writes != 1 {
		t.Fatalf("Backup cancelled during the copy: %v after %d writes", err, w.writes)
	}
	// A failed BackupFile leaves nothing beside its path.
	cctx, cancel = context.WithCancel(ctx)
	cancel()
	if _, err := s.BackupFile(cctx, filepath.Join(dir, "never.db")); !errors.Is(err, context.Canceled) {
		t.Fatalf("BackupFile with a cancelled ctx: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Backup(ctx, &buf); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Backup of a closed store: %v", err)
	}

	ro := openT(t, path, &boltstore.Options{ReadOnly: true})
	out := filepath.Join(dir, "ro.db")
	info, err = ro.BackupFile(ctx, out)
	if err != nil || info.LastSeq != 50 {
		t.Fatalf("BackupFile of a read-only store: %+v, %v", info, err)
	}
	ro.Close()
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	if want := []string{"events.db", "ro.db"}; !slices.Equal(names, want) {
		t.Fatalf("files in the directory: %v, want %v", names, want)
	}
	r := openT(t, out, &boltstore.Options{ReadOnly: true})
	if err := r.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

type cancelWriter struct {
	cancel context.CancelFunc
	writes int
}

func (w *cancelWriter) Write(p []byte) (int, error) {
	w.writes++
	w.cancel()
	return len(p), nil
}

// Back a store up while it is open, and open the backup: it holds the
// events appended before the backup began.
func ExampleStore_BackupFile() {
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
	m := ids.NewMessage(protocol.TypeTaskRequest, "agent:orchestrator")
	if _, err := s.Append(ctx, m); err != nil {
		panic(err)
	}

	info, err := s.BackupFile(ctx, filepath.Join(dir, "backup.db"))
	if err != nil {
		panic(err)
	}
	fmt.Println("backup up to seq", info.LastSeq)

	b, err := boltstore.Open(filepath.Join(dir, "backup.db"), nil)
	if err != nil {
		panic(err)
	}
	defer b.Close()
	fmt.Println("check:", b.Check(ctx))
	ev, _ := b.Get(ctx, m.ID)
	fmt.Println("event", ev.Seq, "is in the backup")
	// Output:
	// backup up to seq 1
	// check: <nil>
	// event 1 is in the backup
}
