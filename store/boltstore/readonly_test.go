package boltstore_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
	bolt "go.etcd.io/bbolt"
)

var roOpts = &boltstore.Options{ReadOnly: true, LockTimeout: 100 * time.Millisecond}

// writeFile makes a closed store file with n events and one artifact.
func writeFile(t *testing.T, n int) (path string, msgs []*protocol.Message, ref string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "events.db")
	s, err := boltstore.Open(path, &boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	msgs = messages(t, n)
	if _, err := s.Append(t.Context(), msgs...); err != nil {
		t.Fatal(err)
	}
	if ref, err = s.PutArtifact(t.Context(), "text/plain", []byte("artifact")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path, msgs, ref
}

// Two read-only opens share a file: both read everything, writes are
// refused with ErrReadOnly, and the file's bytes do not change.
func TestReadOnlyReads(t *testing.T) {
	path, msgs, ref := writeFile(t, 30)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	a, err := boltstore.Open(path, roOpts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := boltstore.Open(path, roOpts)
	if err != nil {
		t.Fatalf("a second read-only open: %v", err)
	}
	for _, s := range []*boltstore.Store{a, b} {
		if !s.ReadOnly() {
			t.Fatal("ReadOnly() = false")
		}
		if last, err := s.LastSeq(t.Context()); last != 30 || err != nil {
			t.Fatalf("LastSeq = %d, %v", last, err)
		}
		var seqs []uint64
		for ev, err := range s.Read(t.Context(), store.Query{RunID: msgs[0].RunID}) {
			if err != nil {
				t.Fatal(err)
			}
			seqs = append(seqs, ev.Seq)
		}
		if len(seqs) == 0 {
			t.Fatal("Read by run: no events")
		}
		ev, err := s.Get(t.Context(), msgs[7].ID)
		if err != nil || ev.Seq != 8 || !bytes.Equal(ev.Raw, msgs[7].Raw()) {
			t.Fatalf("Get: %d, %v", ev.Seq, err)
		}
		if art, err := s.GetArtifact(t.Context(), ref); err != nil || string(art.Data) != "artifact" {
			t.Fatalf("GetArtifact: %q, %v", art.Data, err)
		}
		if err := s.Check(t.Context()); err != nil {
			t.Fatalf("Check: %v", err)
		}
		runs := 0
		for sum, err := range s.Runs(t.Context(), store.ListQuery{}) {
			if err != nil || sum.Events == 0 {
				t.Fatalf("Runs: %+v, %v", sum, err)
			}
			runs++
		}
		if runs == 0 {
			t.Fatal("Runs of a read-only store: none")
		}
		_, err = s.Append(t.Context(), messages(t, 1)...)
		if !errors.Is(err, boltstore.ErrReadOnly) || protocol.CodeOf(err) != protocol.CodePolicyDenied || !strings.Contains(err.Error(), path) {
			t.Fatalf("Append: %v, want ErrReadOnly naming the file", err)
		}
		if _, err := s.PutArtifact(t.Context(), "", []byte("x")); !errors.Is(err, boltstore.ErrReadOnly) {
			t.Fatalf("PutArtifact: %v, want ErrReadOnly", err)
		}
	}
	// A writer is kept out while readers hold the file.
	if _, err := boltstore.Open(path, &boltstore.Options{LockTimeout: 50 * time.Millisecond}); !errors.Is(err, boltstore.ErrLocked) {
		t.Fatalf("Open for writing while readers hold the file: %v, want ErrLocked", err)
	}
	for _, s := range []*boltstore.Store{a, b} {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.LastSeq(t.Context()); !errors.Is(err, store.ErrClosed) {
			t.Fatalf("LastSeq after Close: %v", err)
		}
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatal("a read-only store changed its file")
	}
	// Once they are gone, a writer opens it.
	openT(t, path, nil)
}

// Follow on a read-only store yields the backlog, then waits; Close ends
// it with ErrClosed.
func TestReadOnlyFollow(t *testing.T) {
	path, _, _ := writeFile(t, 5)
	s, err := boltstore.Open(path, roOpts)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan uint64)
	done := make(chan error)
	go func() {
		for ev, err := range s.Follow(t.Context(), store.Query{AfterSeq: 2}) {
			if err != nil {
				done <- err
				return
			}
			got <- ev.Seq
		}
		done <- nil
	}()
	for want := uint64(3); want <= 5; want++ {
		if seq := <-got; seq != want {
			t.Fatalf("followed seq %d, want %d", seq, want)
		}
	}
	s.Close()
	if err := <-done; !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Follow after Close: %v, want ErrClosed", err)
	}
}

// A file open for writing in this process, through another handle, keeps
// a read-only open out: flock is per open file, not per process.
func TestReadOnlyHeldInProcess(t *testing.T) {
	path, _, _ := writeFile(t, 3)
	openT(t, path, nil)
	start := time.Now()
	_, err := boltstore.Open(path, roOpts)
	if !errors.Is(err, boltstore.ErrLocked) || protocol.CodeOf(err) != protocol.CodeConflict {
		t.Fatalf("read-only Open of a held file: %v, want ErrLocked", err)
	}
	if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, "open for writing by another process") {
		t.Fatalf("the error does not say which file and why: %q", msg)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("read-only Open took %v", d)
	}
}

// The env var that makes the test binary a child process holding a file.
const holdChildEnv = "CLUTCH_BOLTSTORE_HOLD_CHILD"

// TestReadOnlyHoldChild is the child side of TestReadOnlyHeldByProcess:
// "hold:PATH" opens PATH for writing, says "ready" and holds it until its
// stdin closes; "write:PATH" tries to open PATH for writing and prints the
// outcome.
func TestReadOnlyHoldChild(t *testing.T) {
	mode, path, ok := strings.Cut(os.Getenv(holdChildEnv), ":")
	if !ok {
		t.Skip("the child side of TestReadOnlyHeldByProcess")
	}
	switch mode {
	case "hold":
		s, err := boltstore.Open(path, nil)
		if err != nil {
			fmt.Println("open:", err)
			return
		}
		fmt.Println("ready")
		io.Copy(io.Discard, os.Stdin)
		s.Close()
	case "write":
		s, err := boltstore.Open(path, &boltstore.Options{LockTimeout: 50 * time.Millisecond})
		if err != nil {
			fmt.Println("locked:", errors.Is(err, boltstore.ErrLocked))
			return
		}
		s.Close()
		fmt.Println("opened")
	}
}

func child(t *testing.T, mode, path string) (*exec.Cmd, io.WriteCloser, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestReadOnlyHoldChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), holdChildEnv+"="+mode+":"+path)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, in, bufio.NewReader(out)
}

// Another process holding the file for writing keeps a read-only open
// out until it exits; a reader in this process keeps the other process's
// writer out.
func TestReadOnlyHeldByProcess(t *testing.T) {
	path, msgs, _ := writeFile(t, 3)
	cmd, in, out := child(t, "hold", path)
	line, err := out.ReadString('\n')
	if line != "ready\n" {
		t.Fatalf("child: %q, %v", line, err)
	}
	_, err = boltstore.Open(path, roOpts)
	if !errors.Is(err, boltstore.ErrLocked) || !strings.Contains(err.Error(), path) {
		t.Fatalf("read-only Open of a file another process writes: %v, want ErrLocked naming it", err)
	}
	in.Close()
	io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	s, err := boltstore.Open(path, roOpts)
	if err != nil {
		t.Fatalf("read-only Open after the writer exited: %v", err)
	}
	if _, err := s.Get(t.Context(), msgs[2].ID); err != nil {
		t.Fatal(err)
	}
	cmd, in, out = child(t, "write", path)
	in.Close()
	line, _ = out.ReadString('\n')
	io.Copy(io.Discard, out)
	cmd.Wait()
	if line != "locked: true\n" {
		t.Fatalf("a writer in another process while this one reads: %q, want locked", line)
	}
	s.Close()
}

// A read-only open creates nothing and refuses what is not a store.
func TestReadOnlyRefusals(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.db")
	_, err := boltstore.Open(missing, roOpts)
	if !errors.Is(err, store.ErrNotFound) || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("a read-only open created the file")
	}
	empty := filepath.Join(dir, "empty.db")
	os.WriteFile(empty, nil, 0o600)
	if _, err := boltstore.Open(empty, roOpts); !errors.Is(err, boltstore.ErrFormat) {
		t.Fatalf("empty file: %v, want ErrFormat", err)
	}
	if fi, _ := os.Stat(empty); fi.Size() != 0 {
		t.Fatal("a read-only open wrote to an empty file")
	}
	text := filepath.Join(dir, "text.db")
	os.WriteFile(text, bytes.Repeat([]byte("not a store\n"), 1000), 0o600)
	if _, err := boltstore.Open(text, roOpts); !errors.Is(err, boltstore.ErrFormat) {
		t.Fatalf("text file: %v, want ErrFormat", err)
	}
	// A bbolt file without the store's buckets (a crash between bbolt's
	// init and Open's first commit) is not made a store.
	bare := filepath.Join(dir, "bare.db")
	db, err := bolt.Open(bare, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := boltstore.Open(bare, roOpts); !errors.Is(err, boltstore.ErrFormat) {
		t.Fatalf("bare bbolt file: %v, want ErrFormat", err)
	}
}

// The events a crashed writer left after the index watermark are read
// from a read-only open (the tail rebuilt in memory), and Check passes.
func TestReadOnlyAfterCrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	s := openT(t, path, &boltstore.Options{IndexBatch: 1000})
	msgs := messages(t, 40)
	if _, err := s.Append(t.Context(), msgs...); err != nil {
		t.Fatal(err)
	}
	// A copy of the file as it is now is the file a kill -9 would leave:
	// the events committed, their index entries only in memory.
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	crashed := filepath.Join(t.TempDir(), "crashed.db")
	if err := os.WriteFile(crashed, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := boltstore.Open(crashed, roOpts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n, err := drain(r.Read(t.Context(), store.Query{TaskID: msgs[39].TaskID}))
	if err != nil || n == 0 {
		t.Fatalf("Read by task of unindexed events: %d, %v", n, err)
	}
	if ev, err := r.Get(t.Context(), msgs[39].ID); err != nil || ev.Seq != 40 {
		t.Fatalf("Get of an unindexed event: %d, %v", ev.Seq, err)
	}
	if err := r.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if after, _ := os.ReadFile(crashed); !bytes.Equal(raw, after) {
		t.Fatal("a read-only open wrote the index tail")
	}
}

// Check on a read-only store finds a damaged record.
func TestReadOnlyCheckDamage(t *testing.T) {
	path, _, _ := writeFile(t, 5)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("events"))
		v := bytes.Clone(b.Get([]byte{0, 0, 0, 0, 0, 0, 0, 4}))
		v[len(v)-3] ^= 0x20
		return b.Put([]byte{0, 0, 0, 0, 0, 0, 0, 4}, v)
	})
	db.Close()
	s, err := boltstore.Open(path, roOpts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Check(t.Context()); !errors.Is(err, boltstore.ErrCorrupt) || !strings.Contains(err.Error(), "event 4") {
		t.Fatalf("Check: %v, want ErrCorrupt at event 4", err)
	}
}

// Open a store file read-only, as a tool does while no process writes it:
// reads work, writes are refused.
func ExampleOptions_readOnly() {
	dir, err := os.MkdirTemp("", "clutch")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "events.db")
	ctx := context.Background()

	w, err := boltstore.Open(path, nil)
	if err != nil {
		panic(err)
	}
	m := protocol.NewMessage(protocol.TypeChatMessage, "agent:ui")
	m.ThreadID = "thr_1"
	m.Payload = json.RawMessage(`{"text":"hello"}`)
	if _, err := w.Append(ctx, m); err != nil {
		panic(err)
	}
	w.Close()

	r, err := boltstore.Open(path, &boltstore.Options{ReadOnly: true})
	if err != nil {
		panic(err)
	}
	defer r.Close()
	for ev, err := range r.Read(ctx, store.Query{ThreadID: "thr_1"}) {
		if err != nil {
			panic(err)
		}
		msg, _ := ev.Message()
		fmt.Println(ev.Seq, msg.Type, string(msg.Payload))
	}
	_, err = r.Append(ctx, protocol.NewMessage(protocol.TypeChatMessage, "agent:ui"))
	fmt.Println(errors.Is(err, boltstore.ErrReadOnly))
	// Output:
	// 1 chat.message {"text":"hello"}
	// true
}
