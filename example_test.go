package clutch_test

import (
	"fmt"

	"github.com/clutchprotocol/clutch/protocol"
)

// Example is the smallest useful program: a task.request, encoded once and
// decoded strictly, as it travels between two agents.
func Example() {
	m := protocol.NewMessage(protocol.TypeTaskRequest, "agent:ui")
	m.To = []protocol.Participant{{AgentID: "agent:orchestrator"}}
	m.Requires = []string{"skill:research"}
	if err := m.SetPayload(map[string]string{"topic": "Nordic payments"}); err != nil {
		panic(err)
	}
	wire, err := protocol.Encode(m)
	if err != nil {
		panic(err)
	}
	in, err := protocol.Decode(wire)
	if err != nil {
		panic(err)
	}
	fmt.Println(in.Type, in.From.AgentID, "→", in.To[0].AgentID, in.Requires, string(in.Payload))
	// Output: task.request agent:ui → agent:orchestrator [skill:research] {"topic":"Nordic payments"}
}
