package langgraph_test

import (
	"testing"

	"github.com/clutchprotocol/clutch/adapters/adaptertest"
)

// A typical event: one messages-tuple frame of an Agent Server stream (a
// streamed AI chunk with its metadata), as SSE.
func BenchmarkInboundMessagesTuple(b *testing.B) {
	raw := []byte("event: messages\nid: 12\ndata: " +
		`[{"content":"Hello","additional_kwargs":{},"response_metadata":{},"type":"AIMessageChunk","name":null,"id":"run--824c9553-e992-40d0-a7a4-1396c088a28c","example":false,"tool_calls":[],"invalid_tool_calls":[],"usage_metadata":null,"tool_call_chunks":[]},` +
		`{"thread_id":"23c8ebb7-3500-4f73-9b02-ab2184201bdf","run_id":"01994ed8-29c4-7108-93d4-d649c7a9e370","graph_id":"chat","langgraph_step":1,"langgraph_node":"respond","langgraph_triggers":["branch:to:respond"],"ls_provider":"anthropic","ls_model_name":"claude-3-5-haiku-20241022"}]` + "\n\n")
	adaptertest.BenchInbound(b, newTranslator(b), raw)
}

// A typical updates frame with an AI tool call (task.progress + tool.call).
func BenchmarkInboundUpdatesToolCall(b *testing.B) {
	raw := []byte(`{"event":"updates","id":"4","data":{"agent":{"messages":[{"content":"","type":"ai","id":"run--5b1d","tool_calls":[{"name":"add","args":{"a":1,"b":2},"id":"call_1","type":"tool_call"}]}]}}}`)
	adaptertest.BenchInbound(b, newTranslator(b), raw)
}
