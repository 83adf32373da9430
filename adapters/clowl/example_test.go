package clowl_test

import (
	"context"
	"fmt"

	"github.com/clutchprotocol/clutch/adapters/clowl"
	"github.com/clutchprotocol/clutch/protocol"
)

// A CLowl request becomes a task.request; the Clutch agent's answer goes
// back as a CLowl DONE to the sender.
func Example() {
	a := clowl.New(nil)
	raw := []byte(`{"clowl":"0.2","mid":"m001","ts":1709078400,"tid":"t001","p":"REQ","from":"oscar","to":"radar","cid":"conv-001","body":{"t":"search","d":{"q":"CLowl competitors"}}}`)
	msgs, err := a.Inbound(context.Background(), raw)
	if err != nil {
		fmt.Println(err)
		return
	}
	req := msgs[0]
	fmt.Println(req.Type, req.ID, req.TaskID, req.RunID, req.ThreadID, req.From.AgentID, "→", req.To[0].AgentID)
	fmt.Println(string(req.Payload))

	// The agent's result, as the router would store it.
	ids := protocol.NewIDs(nil)
	res := ids.Reply(req, protocol.TypeTaskResult, "agent:radar")
	res.ID, res.TS = "m003", "2024-02-28T00:01:00.000Z"
	_ = res.SetPayload(map[string]any{"sources": 8})
	out, err := a.Outbound(context.Background(), res)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(out))
	// Output:
	// task.request m001 task:m001 t001 conv-001 agent:oscar → agent:radar
	// {"q":"CLowl competitors"}
	// {"clowl":"0.2","mid":"m003","ts":1709078460,"tid":"t001","pid":"m001","p":"DONE","from":"radar","to":"oscar","cid":"conv-001","body":{"t":"search","d":{"sources":8}}}
}

// Errors carry the CLowl code to answer with.
func ExampleAdapter_Inbound_errors() {
	a := clowl.New(nil)
	_, err := a.Inbound(context.Background(), []byte(`{"clowl":"0.1","mid":"m1","ts":1,"p":"REQ","from":"a","to":"b","cid":"c","body":{"t":"x","d":{}}}`))
	fmt.Println(protocol.CodeOf(err), clowl.CodeFor(protocol.CodeOf(err)))
	_, err = a.Inbound(context.Background(), []byte(`{"clowl":"0.2","mid":"m1","ts":1,"p":"DLGT","from":"a","to":"b","cid":"c","body":{"t":"x","d":{}}}`))
	fmt.Println(err)
	// Output:
	// UNSUPPORTED_VERSION E014
	// adapters clowl: MISSING_FIELD at /body/d/delegation_mode: required: delegation_mode is required: clowl: message breaks the CLowl v0.2 schema: schema: clowl.message.v0: 2 violations: (root): then: Must validate "then" as "if" was valid; /body/d/delegation_mode: required: delegation_mode is required
}

// Every CLowl message has a deterministic English translation.
func ExampleTranslate() {
	s, _ := clowl.Translate([]byte(`{"clowl":"0.2","mid":"m006","ts":1709078405,"tid":"t001","pid":"m001","p":"ERR","from":"radar","to":"oscar","cid":"conv-001","body":{"t":"error","d":{"code":"E003","msg":"Context file not accessible","retry":true}}}`))
	fmt.Println(s)
	// Output:
	// [2024-02-28 00:00:05 UTC] [t001] radar → oscar: ERROR [E003] "Context file not accessible" — retryable (re: m001)
}

// Lenient parsing repairs what the CLowl SDKs repair, and says so.
func ExampleParseLenient() {
	m, repairs, err := clowl.ParseLenient([]byte(`{"clowl":"0.2","mid":"m1","ts":"1709078400","p":"req ","from":"a","to":"b","cid":"c","body":{"t":"x","d":{}},"note":"hi"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.P, m.TS)
	for _, r := range repairs {
		fmt.Println(r.Field, r.Reason)
	}
	// Output:
	// REQ 1709078400
	// note ignore-unknown-field
	// ts numeric-string-to-int
	// p trim-performative
}
