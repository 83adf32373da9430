package adaptertest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/adapters/adaptertest"
	"github.com/clutchprotocol/clutch/protocol"
)

func msg(typ protocol.Type, id, task string, payload string) *protocol.Message {
	m := protocol.NewMessage(typ, "agent:a")
	m.ID, m.TaskID, m.Payload = id, task, json.RawMessage(payload)
	return m
}

func TestCheckTerminal(t *testing.T) {
	ok := []*protocol.Message{
		msg(protocol.TypeTaskRequest, "m1", "t1", `{}`),
		msg(protocol.TypeTaskError, "m2", "t1", `{"code":"TIMEOUT","message":"x","retryable":true,"details":{"will_retry":true}}`),
		msg(protocol.TypeTaskResult, "m3", "t1", `1`),
		msg(protocol.TypeTaskResult, "m3", "t1", `1`), // the same event again
		msg(protocol.TypeTaskError, "m4", "t2", `{"code":"TIMEOUT","message":"x"}`),
	}
	if err := adaptertest.CheckTerminal(ok); err != nil {
		t.Fatal(err)
	}
	bad := append(ok, msg(protocol.TypeTaskError, "m5", "t1", `{"code":"TOOL_FAILED","message":"x"}`))
	err := adaptertest.CheckTerminal(bad)
	if err == nil || !strings.Contains(err.Error(), "task t1 ends 2 times") {
		t.Fatalf("two ends not found: %v", err)
	}
}

// TestCheckToolCalls: calls and outcomes pair by call id within their
// task, once; an outcome of no call in the stream is returned, not an
// error.
func TestCheckToolCalls(t *testing.T) {
	ok := []*protocol.Message{
		msg(protocol.TypeToolCall, "m1", "t1", `{"call_id":"c1","name":"search"}`),
		msg(protocol.TypeToolCall, "m2", "t1", `{"call_id":"c2","name":"fetch"}`),
		msg(protocol.TypeToolError, "m3", "t1", `{"code":"TOOL_FAILED","message":"x","retryable":false,"details":{"call_id":"c2"}}`),
		msg(protocol.TypeToolResult, "m4", "t1", `{"call_id":"c1","content":[]}`),
		msg(protocol.TypeToolResult, "m4", "t1", `{"call_id":"c1","content":[]}`), // the same event again
		msg(protocol.TypeToolCall, "m5", "t1", `{"call_id":"c3","partial":true}`),
		msg(protocol.TypeToolCall, "m6", "t1", `{"call_id":"c3"}`), // the whole call after its piece
		msg(protocol.TypeToolError, "m7", "t2", `{"code":"POLICY_DENIED","message":"x","retryable":false,"details":{"call_id":"call_refused"}}`),
		msg(protocol.TypeTaskResult, "m8", "t1", `{"call_id":7}`),
	}
	unpaired, err := adaptertest.CheckToolCalls(ok)
	if err != nil {
		t.Fatal(err)
	}
	if len(unpaired) != 1 || unpaired[0].ID != "m7" {
		t.Fatalf("unpaired %v, want the refused call's error m7", unpaired)
	}
	for name, c := range map[string]struct {
		extra *protocol.Message
		want  string
	}{
		"second outcome":   {msg(protocol.TypeToolResult, "m9", "t1", `{"call_id":"c1"}`), `call "c1" has two outcomes`},
		"other task":       {msg(protocol.TypeToolResult, "m9", "t2", `{"call_id":"c3"}`), "is in task t2, its call in t1"},
		"call elsewhere":   {msg(protocol.TypeToolCall, "m9", "t2", `{"call_id":"c1"}`), "names calls of tasks t1 and t2"},
		"no call id":       {msg(protocol.TypeToolResult, "m9", "t1", `{"content":1}`), "call_id"},
		"error in the top": {msg(protocol.TypeToolError, "m9", "t1", `{"code":"TOOL_FAILED","call_id":"c3"}`), "details/call_id"},
	} {
		if _, err := adaptertest.CheckToolCalls(append(ok[:len(ok):len(ok)], c.extra)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", name, err, c.want)
		}
	}
}

func TestCheckStorable(t *testing.T) {
	small := msg(protocol.TypeTaskResult, "m1", "t1", `"x"`)
	if err := adaptertest.CheckStorable([]*protocol.Message{small}); err != nil {
		t.Fatal(err)
	}
	big := msg(protocol.TypeTaskResult, "m2", "t1", `"`+strings.Repeat("x", protocol.DefaultMaxBytes)+`"`)
	if err := adaptertest.CheckStorable([]*protocol.Message{small, big}); err == nil {
		t.Fatal("an envelope over the store's limit passed")
	}
}

func TestHugeStrings(t *testing.T) {
	vs := adaptertest.HugeStrings([]byte(`{"a":"x","b":[1,"y"],"id":"z"}`), 10_000, 8)
	if len(vs) != 3 {
		t.Fatalf("%d variants, want one for each of the 3 strings", len(vs))
	}
	for label, v := range vs {
		if len(v) < 9_900 || len(v) > 10_000 || !json.Valid(v) {
			t.Errorf("%s: %d bytes, valid %v", label, len(v), json.Valid(v))
		}
	}
}

func TestLongIDs(t *testing.T) {
	vs := adaptertest.LongIDs([]byte(`{"id":"a","run_id":"b","task":{"taskId":"c"},"name":"d"}`), 300)
	if len(vs) != 3 {
		t.Fatalf("%d variants: %v", len(vs), vs)
	}
	if v := vs["/task/taskId 300 bytes"]; !bytes.Contains(v, []byte(strings.Repeat("i", 300))) {
		t.Errorf("nested id not lengthened: %s", v)
	}
}

func TestDuplicateKeys(t *testing.T) {
	vs := adaptertest.DuplicateKeys([]byte("{\n  \"a\": {\"b\": \"{\\\"\", \"c\": 2},\n  \"d\": []\n}"))
	want := map[string]bool{`{"a":{"b":"{\"","c":2},"a":{"b":"{\"","c":2},"d":[]}`: true, `{"a":{"b":"{\"","b":"{\"","c":2},"d":[]}`: true}
	if len(vs) != len(want) {
		t.Fatalf("%d variants: %q", len(vs), vs)
	}
	for label, v := range vs {
		if !want[string(v)] {
			t.Errorf("%s: %s", label, v)
		}
	}
}

func TestPlantCredentials(t *testing.T) {
	vs := adaptertest.PlantCredentials([]byte(`{"a":{"b":1},"l":[{"c":2}]}`))
	if len(vs) != 3 {
		t.Fatalf("%d variants", len(vs))
	}
	v := vs["/l/0 + credentials"]
	var doc struct {
		L []map[string]any `json:"l"`
	}
	if err := json.Unmarshal(v, &doc); err != nil || doc.L[0]["authorization"] != "Bearer "+adaptertest.Secret || doc.L[0]["token"] != adaptertest.Secret {
		t.Fatalf("credentials not planted in /l/0: %s (%v)", v, err)
	}
}

// noSecrets is the toy envelope adapter refusing input that holds a
// credential: one way to hold the credentials rule.
type noSecrets struct{ envelope }

func (noSecrets) Inbound(ctx context.Context, raw []byte) ([]*protocol.Message, error) {
	if bytes.Contains(raw, []byte(adaptertest.Secret)) {
		return nil, adapters.InboundError("envelope", protocol.CodeInvalidField, "", "credentials are not accepted", nil)
	}
	return envelope{}.Inbound(ctx, raw)
}

func TestRunRulesPassesAGoodAdapter(t *testing.T) {
	adaptertest.RunRules(t, noSecrets{}, &adaptertest.RulesOptions{
		Valid:   []adaptertest.Case{{Name: "sample", Raw: []byte(strings.Replace(sample, `"payload":{"q":"x","n":[1,2]}`, `"payload":1`, 1))}},
		Streams: []adaptertest.Stream{{Name: "one", Inputs: [][]byte{[]byte(sample)}}},
	})
}
