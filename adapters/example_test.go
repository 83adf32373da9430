package adapters_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/adapters/clowl"
	"github.com/clutchprotocol/clutch/adapters/multiagent"
	"github.com/clutchprotocol/clutch/protocol"
)

// A translator decodes outside input strictly; a refusal names the code
// and the offending field.
func ExampleDecodeJSON() {
	var in struct {
		Task struct {
			Priority int `json:"priority"`
		} `json:"task"`
	}
	err := adapters.DecodeJSON("mine", []byte(`{"task":{"priority":"high"}}`), &in)
	var ae *adapters.Error
	fmt.Println(errors.As(err, &ae), ae.Code, ae.Path)
	err = adapters.DecodeJSON("mine", []byte(`{"task":{},"task":{}}`), &in)
	fmt.Println(protocol.CodeOf(err))
	// Output:
	// true WRONG_TYPE /task/priority
	// DUPLICATE_KEY
}

// Links put a reply in the task of the message it answers, and give a
// task's events the name its outside request had.
func ExampleLinks() {
	ctx := context.Background()
	links := adapters.NewLinks(nil) // in memory
	req := &protocol.Message{ID: "m1", RunID: "run:c1", ThreadID: "c1", TaskID: "task:m1"}
	links.Remember(ctx, req, "search")
	ack := &protocol.Message{ID: "m2", RunID: "run:c1", ThreadID: "c1", TaskID: links.TaskOf(ctx, "m1")}
	links.Remember(ctx, ack, "search")

	fmt.Println(links.TaskOf(ctx, "m2"))      // a DONE answering the ACK
	fmt.Println(links.TaskOf(ctx, "unknown")) // a reply to a request never seen
	fmt.Println(links.KindOf(ctx, "task:m1")) // body.t / intent for outbound events
	// Output:
	// task:m1
	// task:unknown
	// search
}

// A Registry picks the translator for raw input and for an answer.
func ExampleRegistry() {
	ctx := context.Background()
	reg, _ := adapters.NewRegistry(clowl.New(&clowl.Options{Peers: []string{"agent:muse"}}), multiagent.New(nil))
	raw := []byte(`{"clowl":"0.2","mid":"m1","ts":1767225600,"p":"REQ","from":"muse","to":"radar","cid":"c1","body":{"t":"search","d":{"q":"nordic payments"}}}`)
	msgs, a, err := reg.Inbound(ctx, raw)
	if err != nil {
		panic(err)
	}
	fmt.Println(a.Name(), msgs[0].Type, msgs[0].TaskID, adapters.Source(msgs[0]))

	ack := protocol.NewMessage(protocol.TypeTaskAccept, "agent:radar")
	ack.RunID, ack.ThreadID, ack.TaskID = msgs[0].RunID, msgs[0].ThreadID, msgs[0].TaskID
	ack.To = []protocol.Participant{{AgentID: "agent:muse"}} // a CLowl peer
	out, a, err := reg.Outbound(ctx, ack)
	if err != nil {
		panic(err)
	}
	cm, _ := clowl.Parse(out)
	fmt.Println(a.Name(), cm.P, cm.PID, cm.Body.T)
	// Output:
	// clowl task.request task:m1 clowl/0.2
	// clowl ACK m1 search
}
