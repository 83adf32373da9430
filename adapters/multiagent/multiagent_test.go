package multiagent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/adapters/adaptertest"
	"github.com/clutchprotocol/clutch/adapters/clowl"
	"github.com/clutchprotocol/clutch/adapters/multiagent"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/schema"
)

// env builds an envelope; extra members are appended.
func env(role, intent, content string, extra ...string) []byte {
	s := `{"protocol":"multiagent-1.0","role":"` + role + `","agent":{"id":"a1","name":"A","model":"m"},"timestamp":"2025-10-10T12:00:00Z","intent":"` + intent + `","task":"do it","content":` + content
	for _, e := range extra {
		s += "," + e
	}
	return []byte(s + "}")
}

func inbound(t *testing.T, a *multiagent.Adapter, raw []byte) []*protocol.Message {
	t.Helper()
	msgs, err := adaptertest.CheckInbound(context.Background(), a, raw)
	if err != nil {
		t.Fatal(err)
	}
	if msgs == nil {
		_, err := a.Inbound(context.Background(), raw)
		t.Fatalf("refused %s: %v", raw, err)
	}
	return msgs
}

// The intent table: every intent, asked (user, system) and answered
// (agent, tool), and failed.
func TestIntents(t *testing.T) {
	domains := map[string]string{"plan": "planning", "decompose": "planning", "execute": "execution", "route": "routing",
		"retrieve": "retrieval", "analyze": "analysis", "summarize": "summarization", "reflect": "review", "finalize": "finalization", "tool.call": "tools"}
	if len(multiagent.Intents()) != 10 {
		t.Fatalf("%d intents", len(multiagent.Intents()))
	}
	a := multiagent.New(nil)
	text := `{"type":"text","text":"x"}`
	for _, info := range multiagent.Intents() {
		in := info.Intent
		for _, c := range []struct {
			role, content string
			want          protocol.Type
		}{
			{"user", text, info.Request},
			{"system", text, info.Request},
			{"agent", text, map[bool]protocol.Type{true: protocol.TypeToolCall, false: protocol.TypeTaskResult}[in == "tool.call"]},
			{"tool", `{"type":"tool_result","data":{"ok":true}}`, info.Answer},
			{"agent", `{"type":"error","text":"boom","data":{"code":"TIMEOUT"}}`, map[bool]protocol.Type{true: protocol.TypeToolError, false: protocol.TypeTaskError}[in == "tool.call"]},
		} {
			m := inbound(t, a, env(c.role, in, c.content))[0]
			if m.Type != c.want {
				t.Errorf("%s %s %s: type %s, want %s", in, c.role, c.content, m.Type, c.want)
			}
			if m.Domain != domains[in] || info.Domain != domains[in] {
				t.Errorf("%s: domain %q", in, m.Domain)
			}
			if m.Meta["intent"] != in || m.From.Role != c.role || m.From.AgentID != "agent:a1" {
				t.Errorf("%s: meta %v from %+v", in, m.Meta, m.From)
			}
			if m.Type.Family() == "task" && m.Type != protocol.TypeTaskError && m.PayloadType != multiagent.PayloadType(in) {
				t.Errorf("%s: payload_type %q", in, m.PayloadType)
			}
		}
	}
	if multiagent.PayloadType("tool.call") != "multiagent.tool_call.v1" || multiagent.PayloadType("bad intent") != "" {
		t.Error("PayloadType")
	}
	// An intent outside the ten is mapped, not refused.
	m := inbound(t, a, env("agent", "critique", text))[0]
	if m.Type != protocol.TypeTaskResult || m.Domain != "" || m.PayloadType != "multiagent.critique.v1" || m.Meta["intent"] != "critique" {
		t.Errorf("unknown intent: %+v", m)
	}
}

func TestContentTypes(t *testing.T) {
	a := multiagent.New(nil)
	for _, ct := range []string{"text", "code", "json", "tool_result", "markdown"} {
		m := inbound(t, a, env("agent", "analyze", `{"type":"`+ct+`","text":"t","data":{"k":1}}`))[0]
		p, err := multiagent.PayloadOf(m)
		if err != nil || p.Content.Type != ct || *p.Content.Text != "t" || string(p.Content.Data) != `{"k":1}` {
			t.Errorf("%s: %+v %v", ct, p, err)
		}
	}
	// error → task.error with a code from data.code (a Clutch or CLowl code).
	for data, code := range map[string]protocol.Code{`{"code":"TOOL_UNAVAILABLE"}`: protocol.CodeToolUnavailable, `{"code":"E006"}`: protocol.CodeTimeout, `{"code":"oops"}`: protocol.CodeInternal, `{"retryable":true}`: protocol.CodeInternal} {
		m := inbound(t, a, env("agent", "execute", `{"type":"error","text":"failed","data":`+data+`}`))[0]
		ep, err := protocol.DecodePayload[protocol.ErrorPayload](m)
		if err != nil || ep.Code != code || ep.Message != "failed" || ep.Details["multiagent"] == nil {
			t.Errorf("%s: %+v %v", data, ep, err)
		}
		if data == `{"retryable":true}` && !ep.Retryable {
			t.Error("retryable not read")
		}
	}
	for _, bad := range []string{`{"text":"no type"}`, `{"type":""}`, `{"type":3}`, `"text"`, `{"type":"text","text":5}`} {
		if _, err := a.Inbound(context.Background(), env("agent", "plan", bad)); err == nil {
			t.Errorf("content %s accepted", bad)
		}
	}
}

func TestOutputsAndTrace(t *testing.T) {
	a := multiagent.New(nil)
	raw := env("agent", "plan", `{"type":"text","text":"ok"}`,
		`"outputs":{"artifacts":[{"kind":"report","name":"r","uri":"https://x/r.pdf"},{"kind":"plan","name":"p","inline":"1) a"},{"kind":"dataset","name":"d","uri":"artifact:sha256:00"}],
		  "next_actions":[{"intent":"execute","task":"run it","args":{"n":2}},{"intent":"reflect","task":"check"}]}`,
		`"confidence":{"score":0.42,"rationale":"r","risks":["x"]}`,
		`"trace":{"parents":["root","mid"],"id":"msg_9","tags":["t1"],"cost":{"input_tokens":10,"output_tokens":3},"span":"s1"}`,
		`"priority":"high"`)
	msgs := inbound(t, a, raw)
	if len(msgs) != 3 {
		t.Fatalf("%d messages", len(msgs))
	}
	m := msgs[0]
	if m.ID != "msg_9" || m.RunID != "run:root" || m.ThreadID != "thread:root" || m.TaskID != "task:mid" {
		t.Errorf("ids: %s %s %s %s", m.ID, m.RunID, m.ThreadID, m.TaskID)
	}
	if len(m.Attachments) != 2 || m.Attachments[0].Kind != "url" || m.Attachments[1].Kind != "artifact_ref" || m.Attachments[0].Name != "r" {
		t.Errorf("attachments %+v", m.Attachments)
	}
	want := map[string]string{"confidence": "0.42", "in_reply_to": `"mid"`, "parents": `["root","mid"]`, "tags": `["t1"]`,
		"usage": `{"input_tokens":10,"output_tokens":3}`, "trace_extra": `{"span":"s1"}`, "extra": `{"priority":"high"}`}
	for k, v := range want {
		b, _ := json.Marshal(m.Meta[k])
		if string(b) != v {
			t.Errorf("meta.%s = %s, want %s", k, b, v)
		}
	}
	for i, r := range msgs[1:] {
		if r.Type != protocol.TypeTaskRequest || r.ParentTaskID != m.TaskID || r.RunID != m.RunID || len(r.To) != 0 || r.Meta["proposed"] != true {
			t.Errorf("proposed %d: %+v", i, r)
		}
	}
	if msgs[1].Meta["intent"] != "execute" || string(msgs[1].Payload) != `{"task":"run it","inputs":{"parameters":{"n":2}}}` {
		t.Errorf("next action: %v %s", msgs[1].Meta, msgs[1].Payload)
	}
	out, err := a.Outbound(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if err := adaptertest.JSONEqual(raw, out, nil); err != nil {
		t.Errorf("round trip: %v\n%s", err, out)
	}
	// A proposed request goes out as a request envelope the next agent can take.
	out, err = a.Outbound(context.Background(), msgs[1])
	if err != nil || !strings.Contains(string(out), `"role":"system"`) || !strings.Contains(string(out), `"intent":"execute"`) {
		t.Errorf("proposed out: %s %v", out, err)
	}
	back := inbound(t, multiagent.New(nil), out)[0]
	if back.Type != protocol.TypeTaskRequest || back.ID != msgs[1].ID {
		t.Errorf("proposed back: %+v", back)
	}
}

// trace.parents carry messages across hops through the Index.
func TestLineage(t *testing.T) {
	a := multiagent.New(nil)
	req := inbound(t, a, env("user", "plan", `{"type":"text","text":"plan a price tracker"}`, `"trace":{"id":"u1"}`))[0]
	res := inbound(t, a, env("agent", "plan", `{"type":"text","text":"3 steps"}`,
		`"outputs":{"next_actions":[{"intent":"decompose","task":"split"}]}`, `"trace":{"id":"r1","parents":["u1"]}`))
	if res[0].TaskID != req.TaskID || res[0].RunID != req.RunID || res[0].Type != protocol.TypeTaskResult {
		t.Fatalf("answer not in the request's task: %s %s", res[0].TaskID, res[0].RunID)
	}
	next := res[1]
	// The decomposer answers the proposed request, naming it as parent.
	dec := inbound(t, a, env("agent", "decompose", `{"type":"json","data":{"tasks":[]}}`, `"trace":{"id":"d1","parents":["u1","r1","`+next.ID+`"]}`))[0]
	if dec.TaskID != next.TaskID || dec.RunID != req.RunID {
		t.Errorf("third hop: task %s run %s, want %s %s", dec.TaskID, dec.RunID, next.TaskID, req.RunID)
	}
	// A Clutch event of that task goes out with the request's intent and parent.
	ids := protocol.NewIDs(nil)
	accept := ids.Reply(req, protocol.TypeTaskResult, "agent:gpt5")
	_ = accept.SetPayload(map[string]any{"steps": 3})
	out, err := a.Outbound(context.Background(), accept)
	if err != nil || !strings.Contains(string(out), `"intent":"plan"`) || !strings.Contains(string(out), `"parents":["u1"]`) || !strings.Contains(string(out), `"data":{"steps":3}`) {
		t.Errorf("clutch result out: %s %v", out, err)
	}
}

func TestDerivedIDsDedup(t *testing.T) {
	a := multiagent.New(nil)
	raw := examples(t)[0].Raw
	m1 := inbound(t, a, raw)[0]
	// The same envelope, re-sent with other whitespace and member order.
	var v map[string]any
	_ = json.Unmarshal(raw, &v)
	again, _ := json.Marshal(v)
	m2 := inbound(t, a, again)[0]
	if m1.ID != m2.ID || m1.Meta["id_derived"] != true || !strings.HasPrefix(m1.ID, "msg_") {
		t.Errorf("ids %s %s", m1.ID, m2.ID)
	}
}

func TestTimestamps(t *testing.T) {
	a := multiagent.New(nil)
	for ts, want := range map[string]string{
		"2025-10-10T12:00:00Z":           "2025-10-10T12:00:00.000Z",
		"2025-10-10T12:00:00.123Z":       "2025-10-10T12:00:00.123Z",
		"2025-10-10T14:00:00+02:00":      "2025-10-10T12:00:00.000Z",
		"2025-10-10T12:00:00.500000000Z": "2025-10-10T12:00:00.500Z",
	} {
		raw := []byte(strings.Replace(string(env("agent", "plan", `{"type":"text"}`)), "2025-10-10T12:00:00Z", ts, 1))
		m := inbound(t, a, raw)[0]
		if m.TS != want {
			t.Errorf("%s → %s, want %s", ts, m.TS, want)
		}
		out, _ := a.Outbound(context.Background(), m)
		if !strings.Contains(string(out), `"timestamp":"`+ts+`"`) {
			t.Errorf("%s not kept: %s", ts, out)
		}
	}
}

func TestHandshake(t *testing.T) {
	a := multiagent.New(nil)
	hs := examples(t)[3].Raw
	m := inbound(t, a, hs)[0]
	if m.Type != protocol.TypeAgentRegister || m.From.AgentID != "agent:orchestrator" || m.Domain != "" {
		t.Fatalf("handshake: %+v", m)
	}
	card, err := protocol.DecodeAgentCard(m.Payload)
	if err != nil || len(card.Capabilities) != 3 || card.Capabilities[0].ID != "content:text" || card.Display.Name != "Mux" {
		t.Fatalf("card %+v %v", card, err)
	}
	if again := inbound(t, a, hs)[0]; again.Type != protocol.TypeAgentRegister {
		t.Errorf("re-sent handshake: %s", again.Type)
	}
	later := []byte(strings.Replace(string(hs), "12:00:00Z", "12:05:00Z", 1))
	hb := inbound(t, a, later)[0]
	if hb.Type != protocol.TypeAgentHeartbeat {
		t.Fatalf("later handshake: %s", hb.Type)
	}
	out, err := a.Outbound(context.Background(), hb)
	if err != nil || adaptertest.JSONEqual(later, out, nil) != nil {
		t.Errorf("heartbeat out: %s %v", out, err)
	}
	// A registry's own card goes out as a handshake.
	ids := protocol.NewIDs(nil)
	reg := ids.NewMessage(protocol.TypeAgentRegister, "agent:ken")
	reg.Payload, _ = protocol.EncodeAgentCard(&protocol.AgentCard{V: protocol.Version, AgentID: "agent:ken", Capabilities: []protocol.Capability{{ID: "content:json"}}})
	out, err = a.Outbound(context.Background(), reg)
	if err != nil || !strings.Contains(string(out), `"supports":["json"]`) || !strings.Contains(string(out), `"role":"system"`) {
		t.Errorf("register out: %s %v", out, err)
	}
}

func TestRefusals(t *testing.T) {
	a := multiagent.New(nil)
	for _, c := range []struct {
		raw  []byte
		code protocol.Code
		path string
	}{
		{[]byte(`{"role":"agent"}`), protocol.CodeMissingField, "/protocol"},
		{[]byte(`{"protocol":1}`), protocol.CodeUnsupportedVersion, "/protocol"},
		{env("robot", "plan", `{"type":"text"}`), protocol.CodeInvalidField, "/role"},
		{env("agent", "", `{"type":"text"}`), protocol.CodeInvalidField, "/intent"},
		{[]byte(strings.Replace(string(env("agent", "plan", `{"type":"text"}`)), `"task":"do it",`, "", 1)), protocol.CodeMissingField, "/task"},
		{env("agent", "plan", `{"type":"text"}`, `"outputs":{"next_actions":[{"task":"no intent"}]}`), protocol.CodeMissingField, "/outputs/next_actions/0"},
		{env("agent", "plan", `{"type":"text"}`, `"outputs":{"next_actions":[{"intent":"x","task":"t","args":[]}]}`), protocol.CodeWrongType, "/outputs/next_actions/0/args"},
		{env("agent", "plan", `{"type":"text"}`, `"trace":{"parents":[1]}`), protocol.CodeWrongType, "/trace/parents/0"},
		{env("agent", "plan", `{"type":"text"}`, `"trace":{"id":""}`), protocol.CodeInvalidField, "/trace/id"},
		{env("agent", "plan", `{"type":"text"}`, `"confidence":{"score":"high"}`), protocol.CodeWrongType, "/confidence/score"},
		{[]byte(strings.Replace(string(env("agent", "plan", `{"type":"text"}`)), `"id":"a1"`, `"id":""`, 1)), protocol.CodeInvalidField, "/agent/id"},
	} {
		_, err := a.Inbound(context.Background(), c.raw)
		var ae *adapters.Error
		if !errors.As(err, &ae) || ae.Code != c.code || !strings.HasPrefix(ae.Path, c.path) {
			t.Errorf("%s: %v, want %s at %s", c.raw, err, c.code, c.path)
		}
	}
	_, err := a.Inbound(context.Background(), template(t))
	if !errors.Is(err, protocol.CodeInvalidField) {
		t.Errorf("template: %v", err)
	}
	if _, err := a.Inbound(context.Background(), []byte(`{"protocol":"multiagent-2"}`)); !errors.Is(err, multiagent.ErrProtocol) {
		t.Errorf("protocol: %v", err)
	}
}

func TestOutboundOfClutchEvents(t *testing.T) {
	a := multiagent.New(&multiagent.Options{Peers: []string{"agent:gemini"}})
	ids := protocol.NewIDs(nil)
	req := ids.NewMessage(protocol.TypeTaskRequest, "agent:ui")
	req.To = []protocol.Participant{{AgentID: "agent:gemini"}}
	req.Domain = "research"
	_ = req.SetPayload(map[string]any{"q": "nordic payments"})
	if !a.CanHandle(req) {
		t.Error("CanHandle refuses a message to a peer")
	}
	out, err := a.Outbound(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var e map[string]any
	_ = json.Unmarshal(out, &e)
	if e["role"] != "system" || e["intent"] != "execute" || e["task"] != "task.request" || e["trace"].(map[string]any)["id"] != req.ID {
		t.Errorf("request out: %s", out)
	}
	fail := ids.Reply(req, protocol.TypeTaskError, "agent:gemini")
	_ = fail.SetPayload(protocol.ErrorPayload{Code: protocol.CodeToolUnavailable, Message: "down", Retryable: true})
	out, _ = a.Outbound(context.Background(), fail)
	back := inbound(t, multiagent.New(nil), out)[0]
	if ep, _ := protocol.DecodePayload[protocol.ErrorPayload](back); back.Type != protocol.TypeTaskError || ep.Code != protocol.CodeToolUnavailable || !ep.Retryable || ep.Message != "down" {
		t.Errorf("error round trip: %s → %+v", out, ep)
	}
	res := ids.Reply(req, protocol.TypeTaskResult, "agent:gemini")
	_ = res.SetPayload("plain text answer")
	res.Attachments = []protocol.Attachment{{Kind: "artifact_ref", Ref: "artifact:sha256:ab", Name: "report"}}
	res.Meta = map[string]any{"confidence": 0.3}
	out, _ = a.Outbound(context.Background(), res)
	if !strings.Contains(string(out), `"content":{"type":"text","text":"plain text answer"}`) || !strings.Contains(string(out), `"artifacts":[{"kind":"artifact_ref","name":"report","uri":"artifact:sha256:ab"}]`) || !strings.Contains(string(out), `"confidence":{"score":0.3}`) {
		t.Errorf("result out: %s", out)
	}
	for _, typ := range []protocol.Type{protocol.TypeRoutingDecision, "x.acme.thing"} {
		m := ids.NewMessage(typ, "agent:a")
		if a.CanHandle(m) {
			t.Errorf("CanHandle(%s)", typ)
		}
		if _, err := a.Outbound(context.Background(), m); !errors.Is(err, multiagent.ErrNotMappable) || !errors.Is(err, adapters.ErrOutbound) {
			t.Errorf("%s: %v", typ, err)
		}
	}
}

func TestRegisterSchemas(t *testing.T) {
	reg, err := schema.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := multiagent.RegisterSchemas(reg); err != nil {
		t.Fatal(err)
	}
	if err := multiagent.RegisterSchemas(reg); err != nil {
		t.Fatalf("twice: %v", err)
	}
	a := multiagent.New(nil)
	for _, c := range examples(t) {
		for _, m := range inbound(t, a, c.Raw) {
			if err := reg.ValidateMessage(m); err != nil {
				t.Errorf("%s %s: %v", c.Name, m.Type, err)
			}
		}
	}
	if err := reg.Validate("multiagent.plan.v1", []byte(`{"task":"x","confidence":{"score":2}}`)); err == nil {
		t.Error("score 2 passed the schema")
	}
}

func TestDetect(t *testing.T) {
	reg, _ := adapters.NewRegistry(multiagent.New(nil))
	for _, c := range examples(t) {
		if a, err := reg.ForRaw(c.Raw); err != nil || a.Name() != "multiagent" {
			t.Errorf("%s not detected", c.Name)
		}
	}
	if _, err := reg.ForRaw([]byte(`{"clowl":"0.2","p":"REQ"}`)); err == nil {
		t.Error("CLowl detected as multiagent")
	}
	// With both message-language adapters, each input finds its own and
	// each answer goes back the way its request came.
	both, err := adapters.NewRegistry(clowl.New(nil), multiagent.New(nil))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for raw, name := range map[string]string{
		string(examples(t)[1].Raw): "multiagent",
		`{"clowl":"0.2","mid":"m1","ts":1,"p":"REQ","from":"a","to":"b","cid":"c","body":{"t":"x","d":{}}}`: "clowl",
	} {
		msgs, a, err := both.Inbound(ctx, []byte(raw))
		if err != nil || a.Name() != name {
			t.Fatalf("%s: %v %v", name, a, err)
		}
		if _, a, err := both.Outbound(ctx, msgs[0]); err != nil || a.Name() != name {
			t.Errorf("%s answered by %v: %v", name, a, err)
		}
	}
}

// TestToolCallIDs: a tool.call names itself, its answer and its failure
// name it by their last parent (docs/protocol.md §2.3.1); an answer
// without parents names no call; Outbound leaves call_id out and the
// round trip gives the same envelope.
func TestToolCallIDs(t *testing.T) {
	a := multiagent.New(nil)
	var msgs []*protocol.Message
	for _, raw := range [][]byte{
		env("system", "tool.call", `{"type":"json","data":{"url":"https://example.com"}}`, `"trace":{"id":"m_call"}`),
		env("system", "tool.call", `{"type":"json","data":{"url":"https://example.org"}}`, `"trace":{"id":"m_call2"}`),
		env("tool", "tool.call", `{"type":"tool_result","data":{"ok":true}}`, `"trace":{"id":"m_res","parents":["m_root","m_call"]}`),
		env("tool", "tool.call", `{"type":"error","text":"blocked","data":{"code":"TOOL_FAILED"}}`, `"trace":{"id":"m_err","parents":["m_call2"]}`),
	} {
		msgs = append(msgs, inbound(t, a, raw)...)
	}
	unpaired, err := adaptertest.CheckToolCalls(msgs)
	if err != nil || len(unpaired) != 0 {
		t.Fatalf("pairing: %v, unpaired %v", err, unpaired)
	}
	want := []struct {
		typ protocol.Type
		id  string
	}{{protocol.TypeToolCall, "m_call"}, {protocol.TypeToolCall, "m_call2"}, {protocol.TypeToolResult, "m_call"}, {protocol.TypeToolError, "m_call2"}}
	for i, m := range msgs {
		id, _ := protocol.ToolCallID(m)
		if m.Type != want[i].typ || id != want[i].id {
			t.Errorf("message %d: %s %q, want %s %q", i, m.Type, id, want[i].typ, want[i].id)
		}
		out, err := a.Outbound(context.Background(), m)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(out), "call_id") {
			t.Errorf("message %d goes out with its call_id: %s", i, out)
		}
		if err := adaptertest.CheckFixpoint(context.Background(), a, m); err != nil {
			t.Errorf("message %d: %v", i, err)
		}
	}

	// The canonical tool result answers msg_002, which is no tool.call:
	// its call id names no call.
	var res *protocol.Message
	for _, c := range examples(t) {
		if strings.HasPrefix(c.Name, "03-") {
			res = inbound(t, multiagent.New(nil), c.Raw)[0]
		}
	}
	if id, _ := protocol.ToolCallID(res); res.Type != protocol.TypeToolResult || id != "msg_002" {
		t.Errorf("the canonical tool result: %s %q", res.Type, id)
	}
	alone := inbound(t, multiagent.New(nil), env("tool", "tool.call", `{"type":"tool_result","data":{}}`, `"trace":{"id":"m_lone"}`))[0]
	if id, _ := protocol.ToolCallID(alone); !strings.HasPrefix(id, protocol.PrefixCall) {
		t.Errorf("an answer without parents: call id %q", id)
	}
}
