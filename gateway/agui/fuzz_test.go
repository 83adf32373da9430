package agui_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/clutchprotocol/clutch/gateway/agui"
	"github.com/clutchprotocol/clutch/protocol"
)

// FuzzDecodeInput: any body is either refused with ErrInvalidInput and a
// known code, or decoded into an input whose ids are valid and whose last
// user message has text (or that resumes interrupts of valid ids);
// DefaultRequest of it never panics.
func FuzzDecodeInput(f *testing.F) {
	for _, seed := range []string{
		input("t", "r", "hello"),
		`{"threadId":"t","runId":"r","state":null,"messages":[{"id":"1","role":"user","content":[{"type":"text","text":"a"},{"type":"image","source":{"type":"data","value":"AA==","mimeType":"image/png"}}]}],"tools":[{"name":"x","description":"d","parameters":{"type":"object"}}],"context":[{"description":"d","value":"v"}],"forwardedProps":{"a":1},"resume":[]}`,
		`{"threadId":"t","runId":"r","messages":[{"id":"1","role":"assistant","content":"x","toolCalls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"id":"2","role":"tool","content":"r","toolCallId":"c"},{"id":"3","role":"user","content":"next"}]}`,
		`{"threadId":"t","runId":"r2","messages":[],"resume":[{"interruptId":"task_x.q0","status":"resolved","payload":{"decision":"approve"}}]}`,
		`{"threadId":"t","runId":"r2","resume":[{"interruptId":"","status":"cancelled"}]}`,
		`{"threadId":"t","threadId":"u"}`,
		`{"threadId":1}`,
		`{"threadId":"t","runId":"r","messages":[{"id":"1","role":"user","content":5}]}`,
		`[]`, `null`, ``, `{`, "{\"threadId\":\"\xff\"}", `{"a":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		in, err := agui.DecodeInput(body)
		if err != nil {
			if !errors.Is(err, agui.ErrInvalidInput) || !protocol.CodeOf(err).Known() {
				t.Fatalf("error %v (code %q)", err, protocol.CodeOf(err))
			}
			return
		}
		if in.ThreadID == "" || in.RunID == "" || len(in.RunID) > protocol.MaxIDLength || !utf8.ValidString(in.ThreadID) {
			t.Fatalf("accepted ids %q %q", in.ThreadID, in.RunID)
		}
		for _, e := range in.Resume {
			if e.InterruptID == "" || len(e.InterruptID) > protocol.MaxIDLength {
				t.Fatalf("accepted interrupt id %q", e.InterruptID)
			}
		}
		m, ok := in.LastUserMessage()
		if !ok && len(in.Resume) > 0 {
			return // a resume answers; it submits nothing
		}
		if !ok || strings.TrimSpace(m.Text()) == "" {
			t.Fatal("accepted without user text")
		}
		req := agui.DefaultRequest(in, "agent:x", nil)
		if p := req.Payload.(agui.InputPayload); p.Text != m.Text() {
			t.Fatalf("payload text %q", p.Text)
		}
	})
}

// FuzzTranslate: any payload under any type translates without a panic,
// into events that encode as valid JSON.
func FuzzTranslate(f *testing.F) {
	f.Add(uint8(0), []byte(`{"text":"x"}`))
	f.Add(uint8(3), []byte(`{"code":"TOOL_FAILED","message":"m","details":{"will_retry":true}}`))
	f.Add(uint8(8), []byte(`{"tool":"mcp:x","name":"n","args":{"a":[1]}}`))
	f.Add(uint8(9), []byte(`{"call_id":"c","content":[{"type":"text"}],"structuredContent":null}`))
	f.Add(uint8(10), []byte(`{"details":{"call_id":5}}`))
	f.Add(uint8(2), []byte(`"\ud800"`))
	f.Add(uint8(1), []byte(`{`))
	f.Add(uint8(20), []byte(`{"question_id":"t1.q0","index":0,"text":"Which?","choices":["a","b"],"deadline":"2026-01-01T00:00:00Z"}`))
	f.Add(uint8(20), []byte(`{"question_id":"t1.q0","kind":"approval","text":"Ok?","schema":5}`))
	types := protocol.Types()
	f.Fuzz(func(t *testing.T, typ uint8, payload []byte) {
		tr := agui.NewTranslator("t", "r", nil)
		root := msg(protocol.TypeTaskRequest, "m0", "t1", "", "agent:ui", `{}`)
		evs := tr.Translate(nil, 1, root)
		m := msg(types[int(typ)%len(types)], "m1", "t1", "", "agent:ken", string(payload))
		if typ&0x80 != 0 {
			m.TaskID, m.ParentTaskID = "t2", "t1"
		}
		evs = tr.Translate(evs, 2, m)
		for i := range evs {
			if b := evs[i].AppendJSON(nil); !json.Valid(b) {
				t.Fatalf("invalid JSON %s", b)
			}
		}
	})
}
