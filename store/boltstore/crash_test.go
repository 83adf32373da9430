package boltstore_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
)

var long = flag.Bool("long", false, "run the long variants (20 crash rounds); CLUTCH_LONG=1 does the same")

func longRun() bool { return *long || os.Getenv("CLUTCH_LONG") == "1" }

// The child side of TestCrashSafety: the test binary re-executed with
// crashChildEnv set to a file path.
const crashChildEnv = "CLUTCH_BOLTSTORE_CRASH_CHILD"

// childStore opens the store at path for a child process (see
// startChild), ending the process with status 2 when it cannot.
func childStore(path string, opts *boltstore.Options) *boltstore.Store {
	s, err := boltstore.Open(path, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(2)
	}
	return s
}

// crashChild runs the child when the environment asks for it, and reports
// whether it did (TestMain then exits without running tests).
func crashChild() bool {
	path := os.Getenv(crashChildEnv)
	compact := false
	if path == "" {
		path, compact = os.Getenv(compactChildEnv), true
	}
	if path == "" {
		return false
	}
	// A small IndexBatch, so that kills also land in and around index
	// flushes, not only in event commits.
	s := childStore(path, &boltstore.Options{IndexBatch: 300})
	var out sync.Mutex
	w := bufio.NewWriterSize(os.Stdout, 256)
	ack := func(ids []string) {
		out.Lock()
		defer out.Unlock()
		for _, id := range ids {
			w.WriteString(id + "\n")
		}
		w.Flush() // one write per acknowledged Append: on the pipe before the next Append
	}
	ids := protocol.NewIDs(nil)
	var wg sync.WaitGroup
	if compact {
		// Compactions one after the other, each reported as a line "#n"
		// once it has swapped its file in.
		wg.Go(func() {
			for n := 1; ; n++ {
				if _, err := s.Compact(context.Background()); err != nil {
					fmt.Fprintln(os.Stderr, "compact:", err)
					os.Exit(4)
				}
				out.Lock()
				w.WriteString("#" + strconv.Itoa(n) + "\n")
				w.Flush()
				out.Unlock()
			}
		})
	}
	for g := range 64 {
		wg.Go(func() {
			run, thread := ids.RunID(), ids.ThreadID()
			var task string
			for i := 0; ; i++ {
				if i%8 == 0 {
					task = ids.TaskID()
				}
				batch := make([]*protocol.Message, 1+i%3*(g%2))
				for j := range batch {
					m := ids.NewMessage(protocol.TypeTaskProgress, "agent:w"+strconv.Itoa(g%8))
					m.RunID, m.ThreadID, m.TaskID = run, thread, task
					m.IdempotencyKey = "k" + strconv.Itoa(i) + "-" + strconv.Itoa(j)
					m.Payload = json.RawMessage(`{"g":` + strconv.Itoa(g) + `,"i":` + strconv.Itoa(i) + `}`)
					batch[j] = m
				}
				res, err := s.Append(context.Background(), batch...)
				if err != nil {
					fmt.Fprintln(os.Stderr, "append:", err)
					os.Exit(3)
				}
				var acked []string
				for j, r := range res {
					if !r.Duplicate {
						acked = append(acked, batch[j].ID)
					}
				}
				ack(acked)
			}
		})
	}
	wg.Wait()
	return true
}

// TestCrashSafety kills a process that appends from 64 goroutines with
// SIGKILL at a random moment and checks that every append it acknowledged
// is in the file, that seqs have no gaps and that the file is consistent,
// with no repair step. Each round continues the file of the one before.
func TestCrashSafety(t *testing.T) {
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
	rng := rand.New(rand.NewPCG(seed, 1))
	var acked []string
	for round := range rounds {
		got, _ := crashOnce(t, crashChildEnv, path, rng)
		acked = append(acked, got...)
		checkAfterCrash(t, path, round, len(got), acked)
	}
}

// checkAfterCrash opens the file a killed child left, and checks that it
// passes Check, that its seqs run from 1 without a gap or a repeated id,
// and that every acknowledged id is in it.
func checkAfterCrash(t *testing.T, path string, round, got int, acked []string) {
	t.Helper()
	s, err := boltstore.Open(path, nil)
	if err != nil {
		t.Fatalf("round %d: reopen after SIGKILL: %v", round, err)
	}
	st := s.Stats()
	last, err := s.LastSeq(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check(t.Context()); err != nil {
		t.Fatalf("round %d: Check after SIGKILL: %v", round, err)
	}
	seen := make(map[string]bool, last)
	var want uint64 = 1
	for ev, err := range s.Read(t.Context(), store.Query{}) {
		if err != nil {
			t.Fatalf("round %d: Read: %v", round, err)
		}
		if ev.Seq != want {
			t.Fatalf("round %d: seq %d follows %d", round, ev.Seq, want-1)
		}
		want++
		m, err := ev.Message()
		if err != nil {
			t.Fatalf("round %d: event %d: %v", round, ev.Seq, err)
		}
		if seen[m.ID] {
			t.Fatalf("round %d: id %s stored twice", round, m.ID)
		}
		seen[m.ID] = true
	}
	if want-1 != last {
		t.Fatalf("round %d: read %d events, LastSeq %d", round, want-1, last)
	}
	for _, id := range acked {
		if !seen[id] {
			t.Fatalf("round %d: acknowledged id %s is not in the file", round, id)
		}
		if _, err := s.Get(t.Context(), id); err != nil {
			t.Fatalf("round %d: Get(%s): %v", round, id, err)
		}
	}
	t.Logf("round %d: %d acknowledged in this round, %d events in the file, %d rebuilt from the tail", round, got, last, st.Unindexed)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// startChild starts the test binary again as the child that env names,
// on the store file path, and returns it with its stdout; its stderr is
// gathered for the test's messages. The caller ends it (Kill, Wait).
func startChild(tb testing.TB, env, path string) (*exec.Cmd, io.Reader, *strings.Builder) {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env+"="+path)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stderr := new(strings.Builder)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	return cmd, stdout, stderr
}

// crashOnce runs the child (env names which) on path, kills it at a
// random moment after it has acknowledged some appends, and returns the
// acknowledged ids and the number of "#" lines (compactions) it wrote.
func crashOnce(t *testing.T, env, path string, rng *rand.Rand) (ids []string, marks int) {
	t.Helper()
	cmd, stdout, stderr := startChild(t, env, path)
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		r := bufio.NewReader(stdout)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return // a line cut by the kill has no '\n': not acknowledged
			}
			lines <- strings.TrimSuffix(line, "\n")
		}
	}()
	wantBefore := 100 + rng.IntN(1500)
	deadline := time.After(30 * time.Second)
	for len(ids) < wantBefore {
		select {
		case id, ok := <-lines:
			if !ok {
				cmd.Wait()
				t.Fatalf("child ended early after %d acks: %s", len(ids), stderr.String())
			}
			if strings.HasPrefix(id, "#") {
				marks++
				continue
			}
			ids = append(ids, id)
		case <-deadline:
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child acknowledged only %d appends in 30s: %s", len(ids), stderr.String())
		}
	}
	// While the child holds the file, another process cannot open it: it
	// gets ErrLocked after its LockTimeout instead of hanging.
	if _, err := boltstore.Open(path, &boltstore.Options{LockTimeout: 20 * time.Millisecond}); !errors.Is(err, boltstore.ErrLocked) {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("Open of a file another process holds: %v, want ErrLocked", err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for id := range lines {
		if strings.HasPrefix(id, "#") {
			marks++
			continue
		}
		ids = append(ids, id)
	}
	err := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die of SIGKILL: %v: %s", err, stderr.String())
	}
	return ids, marks
}
