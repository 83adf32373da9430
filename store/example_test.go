package store_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// Artifacts are named by their content, so any store gives the same bytes
// the same ref, and a ref can be checked before it is looked up.
func ExampleArtifactRef() {
	ref := store.ArtifactRef([]byte("hello"))
	fmt.Println(ref)
	_, err := store.ParseArtifactRef("artifact:report_456")
	fmt.Println(err != nil)
	// Output:
	// artifact:sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824
	// true
}

// Runs lists a summary per run, newest first; Threads does the same for
// threads. Any store will do: one that implements Lister answers from its
// own summaries, any other has them folded from its log. A summary names
// its run by its ask and says who took its tasks and what failed.
func ExampleRuns() {
	ctx := context.Background()
	s, err := memstore.New(nil)
	if err != nil {
		panic(err)
	}
	defer s.Close()
	ids := protocol.NewIDs(nil)
	req := ids.NewMessage(protocol.TypeTaskRequest, "agent:alice")
	req.TaskID = ids.TaskID()
	req.Payload = json.RawMessage(`{"query":"Which Nordic banks offer instant payments?"}`)
	acc := ids.Reply(req, protocol.TypeTaskAccept, "agent:worker")
	fail := ids.Reply(req, protocol.TypeTaskError, "agent:worker")
	fail.Payload = json.RawMessage(`{"code":"TOOL_UNAVAILABLE","message":"the search index is offline","retryable":false}`)
	if _, err := s.Append(ctx, req, acc, fail); err != nil {
		panic(err)
	}
	for sum, err := range store.Runs(ctx, s, store.ListQuery{Limit: 10}) {
		if err != nil {
			panic(err)
		}
		fmt.Printf("%q by %s: %d events, %d task, %s\n", sum.Title, sum.Owner, sum.Events, sum.Tasks, sum.Status)
		fmt.Println("agents:", sum.Agents)
		fmt.Println("failure:", sum.Failure.Code, sum.Failure.Message)
	}
	// Output:
	// "Which Nordic banks offer instant payments?" by agent:alice: 3 events, 1 task, failed
	// agents: [agent:worker]
	// failure: TOOL_UNAVAILABLE the search index is offline
}
