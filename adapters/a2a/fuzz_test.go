package a2a

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/clutchprotocol/clutch/protocol"
)

// FuzzMapMessage feeds SendMessage params, as a client sends them, through
// the SDK's decoder and the inbound mapping. A message that maps gives a
// valid payload, and mapping the message the task.request stands for
// (requestMessage, what GetTask shows as history) gives the same request.
func FuzzMapMessage(f *testing.F) {
	for _, seed := range []string{
		`{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hello"}]}}`,
		`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a"},{"data":{"n":1}},{"text":"b"}]}}`,
		`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":{"query":"x"},"metadata":{"clutch.payload_type":"research.query.v1"}}]}}`,
		`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":[1,2]},{"raw":"aGk=","mediaType":"text/plain","filename":"a.txt"},{"url":"https://x/y.pdf"}]}}`,
		`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}],"metadata":{"clutch.requires":["skill:a"],"clutch.domain":"d"}},"metadata":{"clutch.prefers":["tag:x"]}}`,
		`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":null}]}}`,
		`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":"s","metadata":{"clutch.payload_type":"bad"}}]}}`,
		`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":""}]}}`,
		`{"message":{"parts":[]}}`,
		`{"message":{"parts":[{"data":12345678901234567890}]}}`,
		`{"message":{"parts":[{"text":"\ud800"}]},"metadata":{"clutch.requires":"skill:a"}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var req a2a.SendMessageRequest
		if json.Unmarshal(data, &req) != nil {
			return
		}
		in, err := mapMessage(req.Message, req.Metadata)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Code == "" {
				t.Fatalf("untyped error %T %v", err, err)
			}
			return
		}
		if !json.Valid(in.payload) || !protocol.ValidPayloadType(in.payloadType) {
			t.Fatalf("payload %q of type %q", in.payload, in.payloadType)
		}
		c, isContent := contentOf(in.payloadType, in.payload)
		if in.payloadType == PayloadContent && !isContent {
			t.Fatalf("a Content payload does not decode: %s", in.payload)
		}
		for _, r := range append(append([]string(nil), in.requires...), in.prefers...) {
			if !validCapabilityRef(r) {
				t.Fatalf("routing hint %q", r)
			}
		}
		if isContent && c.Text == "" && len(c.Data) == 0 {
			return // file parts only: nothing in the payload to send back
		}
		// Round trip through the history message.
		m := &protocol.Message{ID: "msg_1", ThreadID: "thr", TaskID: "task_1", PayloadType: in.payloadType, Payload: in.payload}
		back, err := mapMessage(requestMessage(m), nil)
		if err != nil {
			t.Fatalf("history message does not map back: %v (payload %s)", err, in.payload)
		}
		if back.payloadType != in.payloadType || !jsonEqual(back.payload, in.payload) {
			t.Fatalf("round trip:\n got %s %s\nwant %s %s", back.payloadType, back.payload, in.payloadType, in.payload)
		}
	})
}

// FuzzDecodeRun: the simple surface's body decoder refuses bad bodies with
// a 400 and a §2.5 error, and a body it takes holds a non-empty, bounded,
// valid prompt.
func FuzzDecodeRun(f *testing.F) {
	for _, seed := range []string{
		`{"prompt":"hello"}`, `{"prompt":"hi","sessionId":"s-1"}`, `{"prompt":""}`, `{"prompt":"  "}`, `{}`,
		`{"prompt":1}`, `{"prompt":"x","x":1}`, `{"prompt":"x","prompt":"y"}`, `[]`, `null`, `{"prompt":"x"} {}`,
		`{"prompt":"` + strings.Repeat("é", 40) + `"}`, "{\"prompt\":\"\xff\"}", `{"prompt":"\ud800"}`, `{"PROMPT":"x"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		rr, status, e := decodeRun(body, 32)
		if e != nil {
			if status != 400 || (e.Error != errNameInvalid && e.Error != errNameGuardrail) || e.Message == "" {
				t.Fatalf("bad refusal %d %+v", status, e)
			}
			return
		}
		if strings.TrimSpace(rr.Prompt) == "" || utf8.RuneCountInString(rr.Prompt) > 32 || !utf8.ValidString(rr.Prompt) || len(rr.SessionID) > protocol.MaxIDLength {
			t.Fatalf("accepted %+v", rr)
		}
		again, err := json.Marshal(rr)
		if err != nil {
			t.Fatal(err)
		}
		if rr2, _, e := decodeRun(again, 32); e != nil || rr2 != rr {
			t.Fatalf("re-encoded body: %+v %+v", rr2, e)
		}
	})
}

// FuzzRemoteStatus feeds a remote agent's status message through what the
// Remote makes of it: a progress payload that is JSON, a Clutch error only
// with a known code, a one-line summary that is valid UTF-8.
func FuzzRemoteStatus(f *testing.F) {
	for _, seed := range []string{
		`{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"step 1/3"}]}`,
		`{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"s"},{"data":{"step":1},"metadata":{"clutch.kind":"progress"}}]}`,
		`{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"x"},{"data":{"code":"TIMEOUT","message":"m","retryable":true},"metadata":{"clutch.kind":"error"}}]}`,
		`{"messageId":"m","role":"ROLE_AGENT","parts":[{"data":{"code":"NOPE","message":"m"},"metadata":{"clutch.kind":"error"}}]}`,
		`{"messageId":"m","role":"ROLE_AGENT","parts":[{"data":{"code":"TIMEOUT","extra":1},"metadata":{"clutch.kind":"error"}}]}`,
		`{"messageId":"m","role":"ROLE_AGENT","parts":[{"data":[1,"a",{"b":null}]},{"url":"https://x"}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var msg a2a.Message
		if json.Unmarshal(data, &msg) != nil {
			return
		}
		b, err := json.Marshal(progressPayload(&msg))
		if err != nil || !json.Valid(b) {
			t.Fatalf("progress payload %s: %v", b, err)
		}
		if ep := clutchError(msg.Parts); ep != nil && !ep.Code.Known() {
			t.Fatalf("unknown code kept: %+v", ep)
		}
		for _, p := range msg.Parts {
			if d, ok := p.Content.(a2a.Data); ok {
				raw, err := json.Marshal(d.Value)
				if err != nil {
					continue
				}
				if s := summarize(raw); !utf8.ValidString(s) || len(s) > maxSummary+len("…") && !strings.Contains(string(raw), s) {
					t.Fatalf("summary %q of %s", s, raw)
				}
			}
		}
	})
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

// FuzzCheckParams feeds JSON-RPC requests through checkParams: it never
// panics, a problem names a member of params (or params itself) and comes
// with the request's id as it was sent, and params that pass decode into
// the SDK's request type, so the SDK never answers them with a parse error.
func FuzzCheckParams(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"pageSize":0}}`,
		`{"jsonrpc":"2.0","id":"a","method":"ListTasks","params":{"pageSize":10,"status":"TASK_STATE_WORKING","statusTimestampAfter":"2020-01-01T00:00:00Z","includeArtifacts":true,"historyLength":2}}`,
		`{"jsonrpc":"2.0","id":2,"method":"ListTasks","params":{"statusTimestampAfter":"-1"}}`,
		`{"params":{"pageSize":1.5},"method":"ListTasks","id":null}`,
		`{"jsonrpc":"2.0","id":3,"method":"GetTask","params":{"id":5,"historyLength":-1}}`,
		`{"jsonrpc":"2.0","id":4,"method":"CancelTask","params":{"id":"t","metadata":[]}}`,
		`{"jsonrpc":"2.0","id":5,"method":"SubscribeToTask","params":[]}`,
		`{"jsonrpc":"2.0","id":6,"method":"SendMessage","params":{"message":{}}}`,
		`[1,2]`, `"x"`, `{}`, `{"method":"ListTasks","params":null}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if !jsontext.Value(body).IsValid() {
			return // serveRPC answers ParseError first
		}
		id, problem := checkParams(body)
		var env struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(body, &env) != nil {
			return
		}
		if problem != "" {
			if !strings.HasPrefix(problem, "params") {
				t.Errorf("problem %q names no member", problem)
			}
			if env.ID != nil && string(id) != string(env.ID) {
				t.Errorf("id %s, sent %s", id, env.ID)
			}
			return
		}
		if _, checked := paramChecks[env.Method]; !checked || env.Params == nil || string(env.Params) == "null" {
			return
		}
		var into any
		switch env.Method {
		case "GetTask":
			into = &a2a.GetTaskRequest{}
		case "ListTasks":
			into = &a2a.ListTasksRequest{}
		case "CancelTask":
			into = &a2a.CancelTaskRequest{}
		case "SubscribeToTask":
			into = &a2a.SubscribeToTaskRequest{}
		}
		if err := json.Unmarshal(env.Params, into); err != nil {
			t.Errorf("params %s passed but do not decode: %v", env.Params, err)
		}
	})
}
