package router

import (
	"context"
	"strings"
	"sync"
	"unicode/utf8"
)

// TextProgress is the payload of the task.progress events a TextStream
// stores (docs/protocol.md §2.1): {"text": ...}, the streamed text since
// the previous one.
type TextProgress struct {
	Text string `json:"text"`
}

// TextStream gathers text a task streams — a model's tokens — into
// task.progress events with a TextProgress payload, so that a reader
// sees the text as it comes without one event per token. Make one with
// Task.TextStream; it is safe for concurrent use, and its events keep the
// order of the Writes.
//
// The text is UTF-8, and a character may arrive split over several
// Writes (a model that streams bytes): a stored piece never ends inside
// a character, so every task.progress holds valid text and the pieces
// join to the text written. Bytes that can never be part of a character
// are stored as U+FFFD, so no piece is refused for its text.
//
// After an error (ErrTaskEnded once the task has ended, the store's or
// ctx's error) the stream stores nothing more, and every Write and Flush
// returns that error: text after a lost piece would read as if it
// followed the one before.
type TextStream struct {
	t   *Task
	min int

	mu      sync.Mutex
	pending []byte // written, not stored yet
	err     error  // the first error; the stream has stopped
}

// TextStream returns a TextStream that stores a task.progress once at
// least minBytes of text are pending (minBytes < 1 means 1). Call its
// Flush when the stream ends.
func (t *Task) TextStream(minBytes int) *TextStream {
	return &TextStream{t: t, min: max(minBytes, 1)}
}

// Write adds text to the pending text and stores it as one task.progress
// once at least minBytes of whole characters are pending; an incomplete
// character at the end waits for the next Write. Its error is
// ErrTaskEnded once the task has ended, whether or not text was due, or
// the error of storing the piece.
func (s *TextStream) Write(ctx context.Context, text string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.stopped(); err != nil {
		return err
	}
	s.pending = append(s.pending, text...)
	if n := complete(s.pending); n >= s.min {
		return s.storeLocked(ctx, n)
	}
	return nil
}

// Flush stores the pending text as one task.progress, however short:
// call it when the stream ends, and where the text streamed so far must
// be stored before another event (a tool call's record). An incomplete
// character at the end stays pending, for a later Write to complete; a
// stream that ends inside a character leaves those bytes unstored, as
// they are no text. Its error is ErrTaskEnded once the task has ended, or
// the error of storing the piece.
func (s *TextStream) Flush(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.stopped(); err != nil {
		return err
	}
	return s.storeLocked(ctx, complete(s.pending))
}

// stopped is the stream's error, ErrTaskEnded once the task has ended.
func (s *TextStream) stopped() error {
	if s.err == nil && s.t.ts.finished.Load() {
		s.err = ErrTaskEnded
	}
	return s.err
}

// storeLocked stores the first n pending bytes as one task.progress,
// under s.mu so that the events keep the order of the Writes.
func (s *TextStream) storeLocked(ctx context.Context, n int) error {
	if n == 0 {
		return nil
	}
	text := strings.ToValidUTF8(string(s.pending[:n]), "\uFFFD")
	s.pending = append(s.pending[:0], s.pending[n:]...)
	if err := s.t.Progress(ctx, TextProgress{Text: text}); err != nil {
		s.err = err
		return err
	}
	return nil
}

// complete is the length of b without an incomplete UTF-8 character at
// its end.
func complete(b []byte) int {
	n := len(b)
	for i := 1; i < utf8.UTFMax && i <= n; i++ {
		if utf8.RuneStart(b[n-i]) {
			if !utf8.FullRune(b[n-i:]) {
				return n - i
			}
			break
		}
	}
	return n
}
