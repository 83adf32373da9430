package gateway

import (
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/clutchprotocol/clutch/protocol"
)

// FuzzDecodeSubmission: whatever the body, DecodeSubmission gives a
// submission or an error matching ErrBadRequest (or ErrUnknownField, for
// a member it does not define), never a panic; a body
// with a top-level "from" is never accepted; what it accepts encodes and
// decodes back to the same submission.
func FuzzDecodeSubmission(f *testing.F) {
	for _, s := range []string{
		`{"type":"task.request","requires":["skill:echo"],"payload":{"q":"x"}}`,
		`{"type":"chat.message","thread_id":"thr_1","meta":{"ui_channel":"general"},"payload":{"text":"<b>hi</b>"}}`,
		`{"type":"task.cancel","task_id":"task_1","payload":{"message":"stop"}}`,
		`{"type":"task.request","run_id":"run_1","parent_task_id":"task_0","to":[{"agent_id":"agent:a","role":"worker"}],"payload_type":"research.query.v1","payload":{},"idempotency_key":"k","prefers":["tag:x"],"domain":"d"}`,
		`{"type":"chat.message","from":{"agent_id":"agent:admin"}}`,
		`{"type":"chat.message","payload":{},"payload":{}}`,
		`{"type":"chat.message","x":1}`,
		"{\"type\":\"chat.message\",\"thread_id\":\"\xff\"}",
		`{"type":"task.cancel"}`, `[]`, `null`, ``, `{`, `{"type":1}`,
		`{"type":"chat.message","meta":[]}`, `{"type":"chat.message","to":[{"agent_id":"agent:a","colour":1}]}`,
		`{"type":"task.cancel","task_id":"task_1","reason":"stop"}`, `{"type":"task.cancel","task_id":"task_1","payload":{"reason":"stop"}}`,
		`{"type":"task.cancel","task_id":"task_1","requires":["x"]}`, `{"type":"task.cancel","task_id":"task_1","payload":{"message":1}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		s, err := DecodeSubmission(body)
		if err != nil {
			if s != nil {
				t.Fatal("a submission with an error")
			}
			if !isBadRequest(err) {
				t.Fatalf("error %v is not ErrBadRequest", err)
			}
			return
		}
		var probe map[string]any
		if jsonv2.Unmarshal(body, &probe) == nil {
			if _, ok := probe["from"]; ok {
				t.Fatalf("accepted a body with from: %q", body)
			}
		}
		switch s.Type {
		case protocol.TypeTaskRequest, protocol.TypeChatMessage, protocol.TypeTaskCancel:
		default:
			t.Fatalf("accepted type %q", s.Type)
		}
		b, err := jsonv2.Marshal(s)
		if err != nil {
			t.Fatalf("encoding an accepted submission: %v", err)
		}
		again, err := DecodeSubmission(b)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", b, err)
		}
		b2, _ := jsonv2.Marshal(again)
		if string(b) != string(b2) {
			t.Fatalf("round trip:\n%s\n%s", b, b2)
		}
	})
}

// FuzzQuery: the query parsers take any query string and Last-Event-ID
// without a panic; what they accept is within the documented bounds, and
// parsing the accepted values again gives the same result.
func FuzzQuery(f *testing.F) {
	for _, s := range []struct{ q, last string }{
		{"after=10&limit=50&type=task.", ""},
		{"before=99&limit=1000", ""},
		{"run=run_1&thread=thr_1&task=task_1&agent=agent:a&type=task.result&after=3&access_token=k", "7"},
		{"limit=0", ""}, {"limit=5001", ""}, {"after=-1", ""}, {"after=18446744073709551616", ""},
		{"type=a%20b", ""}, {"run=", ""}, {"x=1", ""}, {"after=1&after=2", ""}, {"%zz", ""}, {"", "abc"}, {"", "+1"},
	} {
		f.Add(s.q, s.last)
	}
	f.Fuzz(func(t *testing.T, raw, last string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		if q, err := parsePageQuery(v); err == nil {
			if q.Limit < 1 || q.Limit > MaxPageLimit || len(q.Type) > 128 {
				t.Fatalf("page query %+v", q)
			}
			again, err := parsePageQuery(url.Values{"after": {itoa(q.After)}, "limit": {itoa(uint64(q.Limit))}, "type": {q.Type}})
			if err != nil || again != q {
				t.Fatalf("page query %+v, again %+v %v", q, again, err)
			}
		} else if !isBadRequest(err) {
			t.Fatal(err)
		}
		if q, err := parseListQuery(v); err == nil {
			if q.Limit < 1 || q.Limit > MaxListLimit {
				t.Fatalf("list query %+v", q)
			}
		} else if !isBadRequest(err) {
			t.Fatal(err)
		}
		if q, err := parseStreamQuery(v, last); err == nil {
			for _, id := range []string{q.Run, q.Thread, q.Task, q.Agent} {
				if len(id) > protocol.MaxIDLength || strings.ContainsAny(q.Type, " \n\r") {
					t.Fatalf("stream query %+v", q)
				}
			}
			vals := url.Values{"after": {itoa(q.After)}}
			for k, s := range map[string]string{"run": q.Run, "thread": q.Thread, "task": q.Task, "agent": q.Agent, "type": q.Type} {
				if s != "" {
					vals[k] = []string{s}
				}
			}
			again, err := parseStreamQuery(vals, "")
			if err != nil || !reflect.DeepEqual(again, q) {
				t.Fatalf("stream query %+v, again %+v %v", q, again, err)
			}
		} else if !isBadRequest(err) {
			t.Fatal(err)
		}
	})
}

func isBadRequest(err error) bool {
	return errors.Is(err, ErrBadRequest) || errors.Is(err, ErrUnknownField)
}
