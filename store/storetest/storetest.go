package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// Options declares what a backend supports. The zero value describes an
// in-memory backend with the default limits.
type Options struct {
	// Reopen, for durable backends, opens the storage of closed again and
	// returns the new store; the suite closed it first. Without Reopen the
	// durability cases are skipped.
	Reopen func(t *testing.T, closed store.Store) store.Store
	// MaxEventSize is the backend's limit on an encoded message;
	// store.DefaultMaxEventSize when 0. The suite stores a message of
	// exactly this size and is refused one byte more.
	MaxEventSize int
	// MaxArtifactSize is the backend's limit on an artifact;
	// store.DefaultMaxArtifactSize when 0.
	MaxArtifactSize int
	// Serial runs the cases one after another instead of in parallel.
	Serial bool
	// Remover declares that the store implements store.Remover (found
	// with store.RemoverOf): the removal cases then fail when it does
	// not, instead of skipping.
	Remover bool
	// Conditional declares that the store implements store.Conditional:
	// its cases then fail when it does not, instead of skipping.
	Conditional bool
}

// Run certifies a store.Store implementation: it runs every rule of the
// contract (see the store package doc) as its own subtest, each on a fresh
// store from newStore. newStore must return an empty, open store; the suite
// closes it (a t.Cleanup that closes it again is fine, Close is
// idempotent).
func Run(t *testing.T, newStore func(t *testing.T) store.Store, opts Options) {
	if opts.MaxEventSize == 0 {
		opts.MaxEventSize = store.DefaultMaxEventSize
	}
	if opts.MaxArtifactSize == 0 {
		opts.MaxArtifactSize = store.DefaultMaxArtifactSize
	}
	s := &suite{newStore: newStore, opts: opts}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !opts.Serial {
				t.Parallel()
			}
			c.run(t, s)
		})
	}
}

type suite struct {
	newStore func(t *testing.T) store.Store
	opts     Options
}

// open returns a fresh store, closed at the end of the test.
func (s *suite) open(t *testing.T) store.Store {
	t.Helper()
	st := s.newStore(t)
	if st == nil {
		t.Fatal("newStore returned nil")
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if n, err := st.LastSeq(t.Context()); err != nil || n != 0 {
		t.Fatalf("new store: LastSeq = %d, %v; want an empty store", n, err)
	}
	return st
}

var cases = []struct {
	name string
	run  func(*testing.T, *suite)
}{
	{"SeqIncreasesByOne", testSeqIncreasesByOne},
	{"KeepsRawBytes", testKeepsRawBytes},
	{"DuplicateID", testDuplicateID},
	{"DuplicateIdempotencyKey", testDuplicateIdempotencyKey},
	{"DuplicateInsideBatch", testDuplicateInsideBatch},
	{"DuplicateIDWinsOverKey", testDuplicateIDWinsOverKey},
	{"BatchAtomicity", testBatchAtomicity},
	{"ConditionalAppend", testConditionalAppend},
	{"ConditionalConcurrent", testConditionalConcurrent},
	{"ValidatesMessages", testValidatesMessages},
	{"Get", testGet},
	{"ReadByRun", indexCase(func(k key) store.Query { return store.Query{RunID: k.run} })},
	{"ReadByThread", indexCase(func(k key) store.Query { return store.Query{ThreadID: k.thread} })},
	{"ReadByTask", indexCase(func(k key) store.Query { return store.Query{TaskID: k.task} })},
	{"ReadByAgent", indexCase(func(k key) store.Query { return store.Query{AgentID: k.agent} })},
	{"ReadByTypePrefix", testReadByTypePrefix},
	{"ReadCombined", testReadCombined},
	{"ReadResumeAfterSeq", testReadResumeAfterSeq},
	{"ReadInvalidQuery", testReadInvalidQuery},
	{"ReadSnapshotEnd", testReadSnapshotEnd},
	{"ConcurrentAppends", testConcurrentAppends},
	{"FollowDeliversEachEventOnce", testFollowDeliversEachEventOnce},
	{"FollowFiltered", testFollowFiltered},
	{"FollowEnds", testFollowEnds},
	{"Artifacts", testArtifacts},
	{"ArtifactRefs", testArtifactRefs},
	{"ContextCancelled", testContextCancelled},
	{"UseAfterClose", testUseAfterClose},
	{"LargeMessage", testLargeMessage},
	{"IteratorEarlyBreak", testIteratorEarlyBreak},
	{"ReopenKeepsEventsSeqAndDedup", testReopen},
	{"SummariesNewestFirst", testSummariesNewestFirst},
	{"SummariesPaging", testSummariesPaging},
	{"SummaryStatus", testSummaryStatus},
	{"SummaryTitles", testSummaryTitles},
	{"SummaryAgents", testSummaryAgents},
	{"SummaryWaitingAndFailure", testSummaryWaitingAndFailure},
	{"SummaryBytes", testSummaryBytes},
	{"SummariesAfterReopen", testSummariesAfterReopen},
	{"SummariesClosed", testSummariesClosed},
	{"SeqBounds", testSeqBounds},
}

// ---- helpers ----

func appendOK(t *testing.T, s store.Store, msgs ...*protocol.Message) []store.AppendResult {
	t.Helper()
	res, err := s.Append(t.Context(), msgs...)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	if len(res) != len(msgs) {
		t.Fatalf("Append returned %d results for %d messages", len(res), len(msgs))
	}
	return res
}

func readAll(t *testing.T, s store.Store, q store.Query) []store.Event {
	t.Helper()
	var out []store.Event
	for e, err := range s.Read(t.Context(), q) {
		if err != nil {
			t.Fatalf("Read(%+v): %v", q, err)
		}
		out = append(out, e)
	}
	return out
}

func seqsOf(evs []store.Event) []uint64 {
	out := make([]uint64, len(evs))
	for i, e := range evs {
		out[i] = e.Seq
	}
	return out
}

func lastSeq(t *testing.T, s store.Store) uint64 {
	t.Helper()
	n, err := s.LastSeq(t.Context())
	if err != nil {
		t.Fatalf("LastSeq: %v", err)
	}
	return n
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: error %v, want %v", what, err, target)
	}
}

// within fails the test if f does not return within d.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
}

// model is what the store should hold: the appended messages in seq order.
type model []*protocol.Message

func (m model) want(q store.Query) []uint64 {
	var out []uint64
	for i, msg := range m {
		seq := uint64(i + 1)
		if seq <= q.AfterSeq || !q.Match(msg.RunID, msg.ThreadID, msg.TaskID, msg.From.AgentID, msg.Type) {
			continue
		}
		out = append(out, seq)
		if q.Limit > 0 && len(out) == q.Limit {
			break
		}
	}
	return out
}

func canceledContext() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
