package eino

import (
	"strings"
	"testing"

	"github.com/cloudwego/eino/compose"

	"github.com/clutchprotocol/clutch/protocol"
)

// An interrupt too large for a question keeps its id and says how large
// its info was; its text is clipped to a question's limit; interrupts
// that are not the root cause are not asked about.
func TestQuestionOfLargeInterrupt(t *testing.T) {
	big := strings.Repeat("x", 2*maxInterruptBytes)
	q := questionOf(&compose.InterruptInfo{InterruptContexts: []*compose.InterruptCtx{
		{ID: "runnable:root;node:tools;tool:call_1", Info: map[string]any{"question": big}, IsRootCause: true},
		{ID: "runnable:root;node:tools", Info: "the parent", IsRootCause: false},
	}})
	if len(q.Text) > protocol.MaxQuestionText || !strings.HasPrefix(q.Text, "xxx") {
		t.Fatalf("text of %d bytes", len(q.Text))
	}
	if err := q.Validate(); err != nil {
		t.Fatal(err)
	}
	ids, _ := q.Details[detailInterruptIDs].([]any)
	list, _ := q.Details["interrupts"].([]any)
	if len(ids) != 1 || ids[0] != "runnable:root;node:tools;tool:call_1" || len(list) != 1 {
		t.Fatalf("details %v", q.Details)
	}
	info := list[0].(map[string]any)["info"].(map[string]any)
	if info["truncated"] != true || info["bytes"].(int) <= 2*maxInterruptBytes {
		t.Fatalf("info %v", info)
	}
}
