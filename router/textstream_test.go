package router

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// streamed runs fn as the handler of a task and returns the texts of the
// task's task.progress events, in order.
func streamed(t *testing.T, fn func(ctx context.Context, t *Task) error) []string {
	t.Helper()
	e := newEnv(t, nil)
	e.register(card("agent:talker", skill("skill:talk")), func(ctx context.Context, t *Task) (*Result, error) {
		if err := fn(ctx, t); err != nil {
			return nil, err
		}
		return summary("said"), nil
	})
	h := e.submit(e.request("skill:talk"))
	if _, err := e.wait(h); err != nil {
		t.Fatal(err)
	}
	return progressTexts(t, e, h.TaskID())
}

func progressTexts(t *testing.T, e *env, taskID string) []string {
	t.Helper()
	var texts []string
	for ev, err := range e.st.Read(context.Background(), store.Query{TaskID: taskID, TypePrefix: string(protocol.TypeTaskProgress)}) {
		if err != nil {
			t.Fatal(err)
		}
		m, err := ev.Message()
		if err != nil {
			t.Fatal(err)
		}
		p, err := protocol.DecodePayload[TextProgress](m)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, p.Text)
	}
	return texts
}

func writeAll(ctx context.Context, s *TextStream, pieces ...string) error {
	for _, p := range pieces {
		if err := s.Write(ctx, p); err != nil {
			return err
		}
	}
	return s.Flush(ctx)
}

// Pending text is stored once it reaches minBytes, all of it; Flush
// stores the rest, however short; minBytes < 1 is 1.
func TestTextStreamThreshold(t *testing.T) {
	got := streamed(t, func(ctx context.Context, t *Task) error {
		return writeAll(ctx, t.TextStream(4), "ab", "cd", "e", "fgh", "", "ijklm", "n")
	})
	if want := []string{"abcd", "efgh", "ijklm", "n"}; !slices.Equal(got, want) {
		t.Fatalf("progress %q, want %q", got, want)
	}
	got = streamed(t, func(ctx context.Context, t *Task) error {
		return writeAll(ctx, t.TextStream(0), "a", "", "bc")
	})
	if want := []string{"a", "bc"}; !slices.Equal(got, want) {
		t.Fatalf("minBytes 0: progress %q, want %q", got, want)
	}
	got = streamed(t, func(ctx context.Context, t *Task) error {
		s := t.TextStream(8)
		if err := s.Flush(ctx); err != nil { // nothing pending: no event
			return err
		}
		return writeAll(ctx, s, "abc")
	})
	if want := []string{"abc"}; !slices.Equal(got, want) {
		t.Fatalf("flush at the end: progress %q, want %q", got, want)
	}
}

// Text written a byte at a time: no piece ends inside a character, every
// piece but the last holds at least minBytes, and the pieces join to the
// text.
func TestTextStreamSplitsNoCharacter(t *testing.T) {
	const text = "Grüße ✓ 🌍 é"
	for _, min := range []int{1, 2, 3, 5} {
		got := streamed(t, func(ctx context.Context, t *Task) error {
			s := t.TextStream(min)
			for i := range len(text) {
				if err := s.Write(ctx, text[i:i+1]); err != nil {
					return err
				}
			}
			return s.Flush(ctx)
		})
		for i, p := range got {
			if !utf8.ValidString(p) || strings.ContainsRune(p, utf8.RuneError) {
				t.Fatalf("min %d: progress %q splits a character", min, p)
			}
			if i < len(got)-1 && len(p) < min {
				t.Fatalf("min %d: progress %q is shorter than min", min, got)
			}
		}
		if strings.Join(got, "") != text {
			t.Fatalf("min %d: progress %q joins to %q, not %q", min, got, strings.Join(got, ""), text)
		}
	}
}

// An incomplete character at the end stays pending through Flush, for a
// later Write to complete; if none does, its bytes are not stored. Bytes
// that can never be a character are stored as U+FFFD.
func TestTextStreamFlushKeepsAnIncompleteCharacter(t *testing.T) {
	got := streamed(t, func(ctx context.Context, t *Task) error {
		s := t.TextStream(100)
		if err := s.Write(ctx, "ok \xe2\x9c"); err != nil {
			return err
		}
		if err := s.Flush(ctx); err != nil { // "ok "
			return err
		}
		if err := s.Write(ctx, "\x93 x\xffy"); err != nil {
			return err
		}
		if err := s.Flush(ctx); err != nil { // "✓ x\uFFFDy"
			return err
		}
		return writeAll(ctx, s, "end \xf0\x9f\x8c") // the stream ends inside 🌍
	})
	if want := []string{"ok ", "✓ x\uFFFDy", "end "}; !slices.Equal(got, want) {
		t.Fatalf("progress %q, want %q", got, want)
	}
}

// Writers on several goroutines: every Write is stored whole and in one
// piece's order, so each writer's texts appear in the order it wrote
// them and none is lost or split.
func TestTextStreamConcurrentWriters(t *testing.T) {
	const writers, writes = 8, 50
	got := streamed(t, func(ctx context.Context, t *Task) error {
		s := t.TextStream(16)
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for w := range writers {
			wg.Go(func() {
				for i := range writes {
					if err := s.Write(ctx, fmt.Sprintf("%d.%d·", w, i)); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			return err
		}
		return s.Flush(ctx)
	})
	next := make([]int, writers)
	joined := strings.Join(got, "")
	for _, tok := range strings.Split(strings.TrimSuffix(joined, "·"), "·") {
		w, i, ok := strings.Cut(tok, ".")
		wn, err1 := strconv.Atoi(w)
		in, err2 := strconv.Atoi(i)
		if !ok || err1 != nil || err2 != nil || wn < 0 || wn >= writers {
			t.Fatalf("progress holds %q, not a write", tok)
		}
		if in != next[wn] {
			t.Fatalf("writer %d: write %d after %d", wn, in, next[wn]-1)
		}
		next[wn]++
	}
	for w, n := range next {
		if n != writes {
			t.Fatalf("writer %d: %d writes stored, want %d", w, n, writes)
		}
	}
	for i, p := range got {
		if !utf8.ValidString(p) || (i < len(got)-1 && len(p) < 16) {
			t.Fatalf("progress %q", p)
		}
	}
}

// After the task ended, Write and Flush fail with ErrTaskEnded, text due
// or not, and store nothing.
func TestTextStreamAfterTheTaskEnded(t *testing.T) {
	e := newEnv(t, nil)
	streams := make(chan *TextStream, 1)
	e.register(card("agent:talker", skill("skill:talk")), func(ctx context.Context, t *Task) (*Result, error) {
		s := t.TextStream(4)
		if err := s.Write(ctx, "hello"); err != nil {
			return nil, err
		}
		if err := s.Write(ctx, "pen"); err != nil { // pending
			return nil, err
		}
		streams <- s
		return summary("said"), nil
	})
	h := e.submit(e.request("skill:talk"))
	if _, err := e.wait(h); err != nil {
		t.Fatal(err)
	}
	s := <-streams
	ctx := context.Background()
	if err := s.Write(ctx, "x"); !errors.Is(err, ErrTaskEnded) {
		t.Fatalf("Write: %v", err)
	}
	if err := s.Write(ctx, "a long text past minBytes"); !errors.Is(err, ErrTaskEnded) {
		t.Fatalf("Write: %v", err)
	}
	if err := s.Flush(ctx); !errors.Is(err, ErrTaskEnded) {
		t.Fatalf("Flush: %v", err)
	}
	if got := progressTexts(t, e, h.TaskID()); !slices.Equal(got, []string{"hello"}) {
		t.Fatalf("progress %q", got)
	}
}

// A piece the store refuses stops the stream: later Writes and Flush
// return the same error and store nothing, so no text reads as if it
// followed a lost piece.
func TestTextStreamStopsAtAnError(t *testing.T) {
	got := streamed(t, func(ctx context.Context, t *Task) error {
		s := t.TextStream(2)
		if err := s.Write(ctx, "one "); err != nil {
			return err
		}
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		err := s.Write(cancelled, "two ")
		if !errors.Is(err, context.Canceled) {
			return fmt.Errorf("Write with a cancelled context: %v", err)
		}
		if err := s.Write(ctx, "three "); !errors.Is(err, context.Canceled) {
			return fmt.Errorf("Write after the error: %v", err)
		}
		if err := s.Flush(ctx); !errors.Is(err, context.Canceled) {
			return fmt.Errorf("Flush after the error: %v", err)
		}
		return nil
	})
	if want := []string{"one "}; !slices.Equal(got, want) {
		t.Fatalf("progress %q, want %q", got, want)
	}
}
