package langgraph_test

import (
	"context"
	"fmt"

	"github.com/clutchprotocol/clutch/adapters/langgraph"
)

// Translating an Agent Server stream: the run's metadata frame, a tool
// call the agent node made, and the end of the run.
func ExampleTranslator_Inbound() {
	tr, err := langgraph.New(nil)
	if err != nil {
		panic(err)
	}
	sse := "event: metadata\ndata: {\"run_id\":\"r1\",\"attempt\":1}\n\n" +
		": heartbeat\n\n" +
		"event: updates\ndata: {\"agent\":{\"messages\":[{\"type\":\"ai\",\"content\":\"\",\"id\":\"m1\"," +
		"\"tool_calls\":[{\"name\":\"add\",\"args\":{\"a\":1},\"id\":\"call_1\",\"type\":\"tool_call\"}]}]}}\n\n" +
		"event: end\ndata: null\n\n"
	msgs, err := tr.Inbound(context.Background(), []byte(sse))
	if err != nil {
		panic(err)
	}
	for _, m := range msgs {
		fmt.Println(m.Type, m.RunID, m.TaskID, m.Meta[langgraph.MetaToolCallID])
	}
	// Output:
	// task.accept run:r1 task:r1 <nil>
	// task.progress run:r1 task:r1 <nil>
	// tool.call run:r1 task:r1 call_1
	// task.result run:r1 task:r1 <nil>
}

// Translating a live run frame by frame into a task the caller owns.
func ExampleStream_Frame() {
	tr, _ := langgraph.New(nil)
	s := tr.NewStream(langgraph.Scope{RunID: "run:1", ThreadID: "thread:1", TaskID: "task:1"})
	msgs, _ := s.Frame(context.Background(), langgraph.Frame{Event: "values", Data: []byte(`{"__interrupt__":[{"value":"Approve?","id":"i1"}]}`)})
	for _, m := range msgs {
		fmt.Println(m.Type, m.TaskID, string(m.Payload))
	}
	// Output:
	// task.progress task:1 {"__interrupt__":[{"id":"i1","value":"Approve?"}]}
	// task.error task:1 {"code":"INPUT_REQUIRED","message":"Approve?","retryable":false,"details":{"interrupts":[{"id":"i1","value":"Approve?"}]}}
}
