package boltstore_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
)

// beatChildEnv makes the test binary a child that opens the store at the
// path it names, beats once, writes the beat's time and waits to be killed.
const beatChildEnv = "CLUTCH_BOLTSTORE_BEAT_CHILD"

func beatChild() bool {
	path := os.Getenv(beatChildEnv)
	if path == "" {
		return false
	}
	s := childStore(path, nil)
	at, _, err := s.Beat(context.Background(), "node:child", []byte("alive"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "beat:", err)
		os.Exit(3)
	}
	fmt.Println(at.UnixNano())
	select {} // no append, no Close: only SIGKILL ends it
}

// fileBeat reads key's beat from what the file at path holds now (as a
// kill -9 would leave it): a copy of its bytes, opened read-only. ok is
// false when the copy holds no such beat, or was taken in the middle of a
// commit and does not open.
func fileBeat(t *testing.T, path, key string) (b store.Beat, ok bool) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(t.TempDir(), "copy.db")
	if err := os.WriteFile(cp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := boltstore.Open(cp, &boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Logf("the copy does not open (taken during a commit?): %v", err)
		return store.Beat{}, false
	}
	defer s.Close()
	for got, err := range s.Beats(t.Context(), key) {
		if err != nil {
			t.Logf("the copy's beats: %v", err)
			return store.Beat{}, false
		}
		if got.Key == key {
			return got, true
		}
	}
	return store.Beat{}, false
}

// waitFileBeat polls the file until key's beat taken at at is in it, and
// fails after far longer than BeatBound. It returns how long it waited.
func waitFileBeat(t *testing.T, path, key string, at time.Time) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(40 * boltstore.BeatBound)
	tick := time.NewTicker(boltstore.BeatBound / 10)
	defer tick.Stop()
	for {
		if b, ok := fileBeat(t, path, key); ok && b.Time.Equal(at) {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the beat of %s at %v is not in the file %v after it was taken (bound %v)", key, at, time.Since(start), boltstore.BeatBound)
		}
		<-tick.C
	}
}

// On a store where nothing is appended, a beat reaches the file within
// the bound in a commit of its own, with neither an append nor Close:
// a process killed with SIGKILL after that leaves it in the file.
func TestBeatReachesFileIdle(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	path := filepath.Join(t.TempDir(), "beats.db")
	cmd, stdout, stderr := startChild(t, beatChildEnv, path)
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("the child's beat: %v (stderr: %s)", err, stderr.String())
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(0, ns).UTC()
	took := waitFileBeat(t, path, "node:child", at)
	t.Logf("the beat was in the file %v after the child reported it (bound %v)", took, boltstore.BeatBound)

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed = true
	var exit *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &exit) {
		t.Fatalf("the child ended with %v, want killed", err)
	}
	s := openT(t, path, nil)
	if err := s.Check(t.Context()); err != nil {
		t.Fatalf("Check after SIGKILL: %v", err)
	}
	var got []store.Beat
	for b, err := range s.Beats(t.Context(), "node:") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, b)
	}
	if len(got) != 1 || !got[0].Time.Equal(at) || string(got[0].Data) != "alive" {
		t.Fatalf("beats after SIGKILL: %+v, want node:child at %v", got, at)
	}
}

// In process: an idle store's beats cost one commit of their own per
// bound at most (none of them an append's), and Close ends the timer
// (goleak, TestMain).
func TestBeatCommitsIdle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "beats.db")
	s := openT(t, path, nil)
	start := time.Now()
	at, _, err := s.Beat(t.Context(), "node:a", []byte("1"))
	if err != nil {
		t.Fatal(err)
	}
	waitFileBeat(t, path, "node:a", at)
	if st := s.Stats(); st.BeatCommits != 1 || st.Commits != 0 {
		t.Fatalf("after one beat on an idle store: %+v, want one commit of beats and no group", st)
	}
	// Beats without a pause: their commits come a bound apart at most.
	var last time.Time
	for i := 0; time.Since(start) < 4*boltstore.BeatBound || i < 10; i++ {
		if last, _, err = s.Beat(t.Context(), "node:a", []byte(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	waitFileBeat(t, path, "node:a", last)
	elapsed := time.Since(start)
	if n, most := s.Stats().BeatCommits, uint64(elapsed/boltstore.BeatBound)+1; n > most {
		t.Fatalf("%d commits of beats in %v, want at most %d (one per %v)", n, elapsed, most, boltstore.BeatBound)
	}
	// A beat Close writes needs no timer.
	if last, _, err = s.Beat(t.Context(), "node:b", nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if b, ok := fileBeat(t, path, "node:b"); !ok || !b.Time.Equal(last) {
		t.Fatalf("the beat before Close: %+v %v", b, ok)
	}
}

// On a busy store the beats ride the appends' commits: no commit of
// beats alone while every beat is followed by an append within the bound.
func TestBeatsRideAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "beats.db")
	s := openT(t, path, &boltstore.Options{NoSync: true})
	ctx := t.Context()
	ids := protocol.NewIDs(nil)
	run, thread, task := ids.RunID(), ids.ThreadID(), ids.TaskID()
	start := time.Now()
	late := uint64(0) // bounds some beat waited for its append (a loaded machine)
	var at time.Time
	i := 0
	for ; time.Since(start) < 4*boltstore.BeatBound || i < 20; i++ {
		t0 := time.Now()
		var err error
		if at, _, err = s.Beat(ctx, "node:a", []byte(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
		m := ids.NewMessage(protocol.TypeTaskProgress, "agent:w")
		m.RunID, m.ThreadID, m.TaskID = run, thread, task
		m.Payload = json.RawMessage(`{"i":` + strconv.Itoa(i) + `}`)
		if _, err := s.Append(ctx, m); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(t0); d >= boltstore.BeatBound {
			late += uint64(d/boltstore.BeatBound) + 1
		}
	}
	st := s.Stats()
	if st.BeatCommits > late {
		t.Fatalf("%d commits of beats alone during %d appends, %d of them slower than %v; want none for the others", st.BeatCommits, i, late, boltstore.BeatBound)
	}
	if st.Commits != uint64(i) {
		t.Fatalf("%d groups for %d sequential appends", st.Commits, i)
	}
	if b, ok := fileBeat(t, path, "node:a"); !ok || !b.Time.Equal(at) {
		t.Fatalf("the last beat in the file: %+v %v, want the one at %v (its append's commit)", b, ok, at)
	}
	t.Logf("%d appends, each after a beat, in %v: %d commits of beats alone (%d allowed by slow appends)", i, time.Since(start), st.BeatCommits, late)
}
