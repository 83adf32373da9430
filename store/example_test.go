package store_test

import (
	"context"
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
// own summaries, any other has them folded from its log.
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
	res := ids.NewMessage(protocol.TypeTaskResult, "agent:worker")
	res.RunID, res.ThreadID, res.TaskID = req.RunID, req.ThreadID, req.TaskID
	if _, err := s.Append(ctx, req, res); err != nil {
		panic(err)
	}
	for sum, err := range store.Runs(ctx, s, store.ListQuery{Limit: 10}) {
		if err != nil {
			panic(err)
		}
		fmt.Println(sum.Owner, sum.Events, "events,", sum.Tasks, "task,", sum.Status)
	}
	// Output:
	// agent:alice 2 events, 1 task, completed
}
