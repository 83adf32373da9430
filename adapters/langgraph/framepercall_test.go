package langgraph_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/adapters/adaptertest"
	"github.com/clutchprotocol/clutch/adapters/langgraph"
	"github.com/clutchprotocol/clutch/protocol"
)

// TestFramePerCallOneEndPerTask: a recorded stream fed one SSE frame per
// Translator.Inbound call (as a relay that forwards frames as they come
// does) still gives each task one terminal event: the Translator
// remembers ends across calls.
func TestFramePerCallOneEndPerTask(t *testing.T) {
	ctx := context.Background()
	for _, c := range adaptertest.Files(t, "testdata/recorded/*.sse", 6) {
		tr := newTranslator(t)
		var msgs []*protocol.Message
		for _, frame := range strings.SplitAfter(string(c.Raw), "\n\n") {
			if strings.TrimSpace(frame) == "" {
				continue
			}
			out, err := tr.Inbound(ctx, []byte(frame))
			require.NoError(t, err, "%s frame %q", c.Name, frame)
			msgs = append(msgs, out...)
		}
		for task, ends := range terminals(msgs) {
			assert.Len(t, ends, 1, "%s: task %s ends %v", c.Name, task, ends)
		}
	}
}

// TestNextAttemptEndsAgain: the memory of ends is per attempt, so a task
// run again (attempt 2, as a retry through the bridge does) ends again.
func TestNextAttemptEndsAgain(t *testing.T) {
	ctx := context.Background()
	tr := newTranslator(t)
	frame := []byte("event: error\ndata: {\"error\":\"ValueError\",\"message\":\"boom\"}\n\n")
	for attempt := 1; attempt <= 2; attempt++ {
		s := tr.NewStream(langgraphScope(attempt))
		out, err := s.Inbound(ctx, frame)
		require.NoError(t, err)
		ends := terminals(out)["task_root"]
		assert.Equal(t, []string{string(protocol.TypeTaskError)}, ends, "attempt %d", attempt)
	}
}

func langgraphScope(attempt int) langgraph.Scope {
	return langgraph.Scope{RunID: "run_r", ThreadID: "thr_t", TaskID: "task_root", Attempt: attempt}
}
