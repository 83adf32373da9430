package crewai_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/adapters/adaptertest"
	"github.com/clutchprotocol/clutch/adapters/crewai"
	"github.com/clutchprotocol/clutch/protocol"
)

// The rules of every adapter (adaptertest.RunRules): bounded envelopes,
// long ids refused, formatting-blind strictness, no stored credentials,
// one terminal event per task, Detect for all it accepts.
func TestRules(t *testing.T) {
	adaptertest.RunRules(t, crewai.New(nil), &adaptertest.RulesOptions{
		Valid:       append(allFixtures(t), itemCases()...),
		MaxBytes:    2 << 20, // enough to overflow an envelope; the 16 MiB default only costs time
		Streams:     []adaptertest.Stream{{Name: "failure trace", Inputs: [][]byte{failureTrace}}, {Name: "failure trace, one event a batch", Inputs: oneByOne(failureTrace)}},
		New:         func() adapters.Adapter { return crewai.New(nil) },
		Credentials: []adaptertest.Case{{Name: "kickoff with webhook token", Raw: kickoffWithToken}},
	})
}

const ts = `"timestamp":"2025-10-08T18:18:11.025479+00:00"`

// flowStarted is FlowStartedEvent.to_json() (crewAI events/types/
// flow_events.py: flow_name, inputs None) in each wrapping crewAI and AMP
// use.
var flowStarted = map[string]string{
	"frame":           `{"event_id":"f1","type":"flow_started",` + ts + `,"flow_name":"PoemFlow","inputs":null,"source_fingerprint":null,"source_type":null,"fingerprint_metadata":null,"task_id":null,"task_name":null,"agent_id":null,"agent_role":null}`,
	"frame no inputs": `{"event_id":"f1","type":"flow_started",` + ts + `,"flow_name":"PoemFlow"}`,
	"batch":           `{"events":[{"event_id":"f1","type":"flow_started",` + ts + `,"flow_name":"PoemFlow","inputs":null}]}`,
	"tracing batch":   `{"events":[{"event_id":"f1",` + ts + `,"type":"flow_started","event_data":{"flow_name":"PoemFlow","inputs":null}},{"event_id":"f2",` + ts + `,"type":"method_execution_started","event_data":{"flow_name":"PoemFlow","method_name":"generate"}}],"batch_metadata":{"events_count":2}}`,
	"AMP delivery":    `{"events":[{"id":"f1","execution_id":"exec-1",` + ts + `,"type":"flow_started","data":{"flow_name":"PoemFlow","inputs":null}},{"id":"f2","execution_id":"exec-1",` + ts + `,"type":"flow_finished","data":{"flow_name":"PoemFlow","result":"a poem"}}]}`,
}

// failureTrace is a crew whose task fails, as crewAI 0.201 traces it: the
// task_failed event carries no task id (the task is only in the dropped
// dump), then crew_kickoff_failed ends the crew.
var failureTrace = []byte(`{"events":[` +
	`{"event_id":"k1",` + ts + `,"type":"crew_kickoff_started","event_data":{"crew_name":"crew","inputs":{"topic":"x"}}},` +
	`{"event_id":"t1",` + ts + `,"type":"task_failed","event_data":{"error":"Invalid API key for external service","task":"<Task object at 0x7f>"}},` +
	`{"event_id":"k2",` + ts + `,"type":"crew_kickoff_failed","event_data":{"crew_name":"crew","error":"Invalid API key for external service"}}]}`)

// kickoffWithToken asks AMP to stream events with a bearer token (the
// bridge's own kickoff body).
var kickoffWithToken = []byte(`{"inputs":{"q":"x"},"webhooks":{"events":["*"],"url":"https://me.example/crewai","realtime":false,"authentication":{"strategy":"bearer","token":"` + adaptertest.Secret + `"}}}`)

func itemCases() []adaptertest.Case {
	var out []adaptertest.Case
	for name, raw := range flowStarted {
		out = append(out, adaptertest.Case{Name: "flow_started " + name, Raw: []byte(raw)})
	}
	return append(out, adaptertest.Case{Name: "failure trace", Raw: failureTrace})
}

// oneByOne splits a tracing batch into batches of one event each.
func oneByOne(batch []byte) [][]byte {
	var b struct{ Events []json.RawMessage }
	if err := json.Unmarshal(batch, &b); err != nil {
		panic(err)
	}
	var out [][]byte
	for _, e := range b.Events {
		out = append(out, []byte(`{"events":[`+string(e)+`]}`))
	}
	return out
}

// flow_started is accepted and detected in every wrapping, and does not
// take its batch down with it.
func TestFlowStarted(t *testing.T) {
	for name, raw := range flowStarted {
		t.Run(name, func(t *testing.T) {
			a := crewai.New(nil)
			assert.True(t, a.Detect([]byte(raw)), "Detect")
			msgs := inbound(t, a, []byte(raw))
			assert.Equal(t, protocol.TypeTaskRequest, msgs[0].Type)
			assert.Equal(t, "flow_started", msgs[0].Meta[crewai.MetaType])
			assert.JSONEq(t, `null`, string(msgs[0].Payload))
			if strings.Contains(name, "tracing") || strings.Contains(name, "AMP") {
				assert.Len(t, msgs, 2)
			}
		})
	}
}

// A failure trace ends the root task once: the task_failed event that
// names no task is the crew's progress, crew_kickoff_failed its end —
// whether the events come in one batch or one by one.
func TestFailureTraceEndsTheRootOnce(t *testing.T) {
	for name, inputs := range map[string][][]byte{"one batch": {failureTrace}, "one a batch": oneByOne(failureTrace)} {
		t.Run(name, func(t *testing.T) {
			a := crewai.New(nil)
			var all []*protocol.Message
			for _, raw := range inputs {
				all = append(all, inbound(t, a, raw)...)
			}
			require.NoError(t, adaptertest.CheckTerminal(all))
			last := all[len(all)-1]
			assert.Equal(t, protocol.TypeTaskError, last.Type)
			assert.Equal(t, "crew_kickoff_failed", last.Meta[crewai.MetaType])
			assert.Equal(t, protocol.TypeTaskProgress, all[1].Type)
			assert.Contains(t, string(all[1].Payload), "Invalid API key")
		})
	}
}

// The same event type delivered again (a retried delivery with a new
// event id) never ends a task twice either.
func TestSecondTerminalBecomesProgress(t *testing.T) {
	a := crewai.New(nil)
	done := func(id string) []byte {
		return []byte(`{"events":[{"event_id":"` + id + `",` + ts + `,"type":"task_completed","event_data":{"task_id":"tk","output_raw":"done"}}]}`)
	}
	first := inbound(t, a, done("c1"))
	second := inbound(t, a, done("c2"))
	assert.Equal(t, protocol.TypeTaskResult, first[0].Type)
	assert.Equal(t, protocol.TypeTaskProgress, second[0].Type)
	assert.NoError(t, adaptertest.CheckTerminal(append(first, second...)))
}

// The kickoff's webhook bearer token is not stored, in meta or anywhere.
func TestKickoffTokenRedacted(t *testing.T) {
	msgs := inbound(t, crewai.New(nil), kickoffWithToken)
	b, err := protocol.Encode(msgs[0])
	require.NoError(t, err)
	assert.NotContains(t, string(b), adaptertest.Secret)
	assert.Contains(t, string(b), `"token":"[redacted]"`)
}

// A task name sits once in the envelope (the payload), so that a huge
// one cannot double the envelope.
func TestTaskNameOnce(t *testing.T) {
	name := "TASK-NAME " + strings.Repeat("n", 700_000)
	raw := `{"events":[{"event_id":"s1",` + ts + `,"type":"task_started","event_data":{"task_id":"tk","task_name":"` + name + `","task_description":"d"}}]}`
	msgs := inbound(t, crewai.New(nil), []byte(raw))
	b, err := protocol.Encode(msgs[0])
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(b), "TASK-NAME "))
	_, inMeta := msgs[0].Meta[crewai.MetaTaskName]
	assert.False(t, inMeta, "meta.crewai_task_name repeats the payload's name")
}

// Text over the store's limit is cut with a marker and its size, listed
// in meta.truncated.
func TestHugePromptCut(t *testing.T) {
	prompt := strings.Repeat("p", 3<<20)
	raw := `{"events":[{"event_id":"l1",` + ts + `,"type":"llm_call_started","event_data":{"model":"gpt","messages":[{"role":"user","content":"` + prompt + `"}]}}]}`
	msgs := inbound(t, crewai.New(nil), []byte(raw))
	b, err := protocol.Encode(msgs[0])
	require.NoError(t, err)
	assert.LessOrEqual(t, len(b), protocol.DefaultMaxBytes)
	assert.Contains(t, string(b), "… [truncated, 3145728 bytes]")
	assert.NotNil(t, msgs[0].Meta["truncated"])
}

// Judgement (package doc, Errors): a tool_usage_error whose text says a
// coworker was not found is the delegation tool failing (TOOL_FAILED, as
// the table maps tool_usage_error); only a tool that is not found is
// TOOL_NOT_FOUND.
func TestCoworkerNotFoundIsToolFailed(t *testing.T) {
	msg := "Error executing tool. coworker mentioned not found, it must be one of the following options:\n- scorer\n"
	assert.Equal(t, protocol.CodeToolFailed, crewai.ErrorCode(msg, protocol.CodeToolFailed))
	assert.Equal(t, protocol.CodeToolNotFound, crewai.ErrorCode("Tool 'search_web' not found", protocol.CodeToolFailed))
	raw := `{"events":[{"event_id":"u1",` + ts + `,"type":"tool_usage_error","event_data":{"tool_name":"Delegate work to coworker","error":"` + strings.ReplaceAll(msg, "\n", `\n`) + `"}}]}`
	msgs := inbound(t, crewai.New(nil), []byte(raw))
	ep, err := protocol.DecodePayload[protocol.ErrorPayload](msgs[0])
	require.NoError(t, err)
	assert.Equal(t, protocol.CodeToolFailed, ep.Code)
}

// Judgement (package doc, Mapping): AMP's error answer {error, message}
// to a status call, with the kickoff id the host adds, is the run's
// task.error (NOT_FOUND for a 404's "not found"), not a task.accept.
func TestStatusNotFound(t *testing.T) {
	raw := `{"error":"Execution not found","message":"No execution found with ID: abcd","kickoff_id":"abcd"}`
	msgs := inbound(t, crewai.New(nil), []byte(raw))
	require.Len(t, msgs, 1)
	assert.Equal(t, protocol.TypeTaskError, msgs[0].Type)
	assert.Equal(t, "task:abcd", msgs[0].TaskID)
	ep, err := protocol.DecodePayload[protocol.ErrorPayload](msgs[0])
	require.NoError(t, err)
	assert.Equal(t, protocol.CodeNotFound, ep.Code)
	assert.Contains(t, ep.Message, "No execution found")
	assert.Equal(t, "amp_error", msgs[0].Meta[crewai.MetaType])
	// The plain {kickoff_id} answer is still the accept.
	msgs = inbound(t, crewai.New(nil), []byte(`{"kickoff_id":"abcd"}`))
	assert.Equal(t, protocol.TypeTaskAccept, msgs[0].Type)
}

// A status error's text is in the payload once.
func TestStatusErrorOnce(t *testing.T) {
	text := strings.Repeat("e", 600_000)
	raw := `{"status":"error","error":"` + text + `","message":"` + text + `","kickoff_id":"abcd"}`
	msgs := inbound(t, crewai.New(nil), []byte(raw))
	b, err := protocol.Encode(msgs[0])
	require.NoError(t, err)
	assert.LessOrEqual(t, len(b), protocol.DefaultMaxBytes)
	assert.Equal(t, protocol.TypeTaskError, msgs[0].Type)
}
