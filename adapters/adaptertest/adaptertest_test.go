package adaptertest_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/adapters/adaptertest"
	"github.com/clutchprotocol/clutch/protocol"
)

// envelope is a toy adapter whose wire format is the envelope itself: it
// passes the whole contract.
type envelope struct{}

func (envelope) Name() string                       { return "envelope" }
func (envelope) CanHandle(m *protocol.Message) bool { return m != nil }
func (envelope) Inbound(ctx context.Context, raw []byte) ([]*protocol.Message, error) {
	m, err := protocol.Decode(raw)
	if err == nil {
		err = m.Validate()
	}
	if err != nil {
		return nil, adapters.InboundError("envelope", protocol.CodeOf(err), "", "", err)
	}
	return []*protocol.Message{m}, nil
}
func (envelope) Outbound(ctx context.Context, m *protocol.Message) ([]byte, error) {
	if m == nil {
		return nil, adapters.OutboundError("envelope", protocol.CodeMissingField, "", "nil", nil)
	}
	b, err := protocol.Encode(m)
	if err != nil {
		return nil, adapters.OutboundError("envelope", protocol.CodeOf(err), "", "", err)
	}
	return b, nil
}

const sample = `{"v":"clutch/0.1","id":"msg_1","ts":"2026-01-01T00:00:00.000Z","thread_id":"thr_1","run_id":"run_1","task_id":"task_1","from":{"agent_id":"agent:a"},"to":[{"agent_id":"agent:b"}],"type":"task.request","payload":{"q":"x","n":[1,2]}}`

func TestRunPassesAGoodAdapter(t *testing.T) {
	adaptertest.Run(t, envelope{}, &adaptertest.Options{
		Valid:   []adaptertest.Case{{Name: "sample", Raw: []byte(sample)}},
		Invalid: []adaptertest.Case{{Name: "bad version", Raw: []byte(strings.Replace(sample, "clutch/0.1", "clutch/9", 1)), Code: protocol.CodeUnsupportedVersion}},
	})
}

// broken adapters, one per rule.
type broken struct {
	envelope
	inbound func(raw []byte) ([]*protocol.Message, error)
}

func (b broken) Inbound(ctx context.Context, raw []byte) ([]*protocol.Message, error) {
	return b.inbound(raw)
}

func TestCheckInboundFindsBreaches(t *testing.T) {
	ctx := context.Background()
	for name, f := range map[string]func([]byte) ([]*protocol.Message, error){
		"panic":   func([]byte) ([]*protocol.Message, error) { panic("boom") },
		"untyped": func([]byte) ([]*protocol.Message, error) { return nil, errors.New("plain") },
		"unknown code": func([]byte) ([]*protocol.Message, error) {
			return nil, adapters.InboundError("envelope", "WHAT", "", "", nil)
		},
		"other adapter": func([]byte) ([]*protocol.Message, error) {
			return nil, adapters.InboundError("other", protocol.CodeInvalidJSON, "", "", nil)
		},
		"outbound sentinel": func([]byte) ([]*protocol.Message, error) {
			return nil, adapters.OutboundError("envelope", protocol.CodeInvalidJSON, "", "", nil)
		},
		"code other than the wrapped protocol error's": func(raw []byte) ([]*protocol.Message, error) {
			_, err := protocol.Decode([]byte(strings.Replace(string(raw), "clutch/0.1", "clutch/9", 1)))
			return nil, &adapters.Error{Adapter: "envelope", Code: protocol.CodeInvalidField, Sentinel: adapters.ErrInbound, Err: err}
		},
		"nothing": func([]byte) ([]*protocol.Message, error) { return nil, nil },
		"nil msg": func([]byte) ([]*protocol.Message, error) { return []*protocol.Message{nil}, nil },
		"invalid msg": func([]byte) ([]*protocol.Message, error) {
			m := protocol.NewMessage(protocol.TypeTaskRequest, "ken") // no agent: prefix
			return []*protocol.Message{m}, nil
		},
		"msgs and error": func([]byte) ([]*protocol.Message, error) {
			return []*protocol.Message{protocol.NewMessage(protocol.TypeTaskRequest, "agent:a")}, adapters.InboundError("envelope", protocol.CodeInvalidJSON, "", "", nil)
		},
	} {
		if _, err := adaptertest.CheckInbound(ctx, broken{inbound: f}, []byte(sample)); err == nil {
			t.Errorf("%s: not detected", name)
		}
	}
	msgs, err := adaptertest.CheckInbound(ctx, envelope{}, []byte(sample))
	if err != nil || len(msgs) != 1 {
		t.Fatalf("good adapter: %v %v", msgs, err)
	}
	if msgs, err := adaptertest.CheckInbound(ctx, envelope{}, []byte("{")); err != nil || msgs != nil {
		t.Fatalf("refusal: %v %v", msgs, err)
	}
}

type badOutbound struct{ envelope }

func (badOutbound) Outbound(ctx context.Context, m *protocol.Message) ([]byte, error) {
	return []byte(`{"v":"clutch/0.1"}`), nil
}

func TestCheckFixpoint(t *testing.T) {
	ctx := context.Background()
	msgs, _ := envelope{}.Inbound(ctx, []byte(sample))
	if err := adaptertest.CheckFixpoint(ctx, envelope{}, msgs[0]); err != nil {
		t.Fatal(err)
	}
	if err := adaptertest.CheckFixpoint(ctx, badOutbound{}, msgs[0]); err == nil {
		t.Fatal("an outbound that loses fields passed")
	}
}

func TestJSONEqual(t *testing.T) {
	for _, c := range []struct {
		a, b string
		opts *adaptertest.EqualOptions
		eq   bool
	}{
		{`{"a":1,"b":[1,{"c":null}]}`, ` { "b" : [ 1.0, {"c":null} ], "a": 1 } `, nil, true},
		{`{"a":1}`, `{"a":2}`, nil, false},
		{`{"a":1,"n":null}`, `{"a":1}`, nil, false},
		{`{"a":1,"n":null}`, `{"a":1}`, &adaptertest.EqualOptions{NullIsAbsent: true}, true},
		{`{"a":[1,2]}`, `{"a":[2,1]}`, nil, false},
		{`{"a":"1"}`, `{"a":1}`, nil, false},
		{`{"a":{"x":1},"b":2}`, `{"a":{},"b":2}`, &adaptertest.EqualOptions{Ignore: []string{"/a/x"}}, true},
		{`{"a/b":1}`, `{}`, &adaptertest.EqualOptions{Ignore: []string{"/a~1b"}}, true},
	} {
		err := adaptertest.JSONEqual([]byte(c.a), []byte(c.b), c.opts)
		if (err == nil) != c.eq {
			t.Errorf("JSONEqual(%s, %s) = %v, want equal=%v", c.a, c.b, err, c.eq)
		}
	}
	if err := adaptertest.JSONEqual([]byte(`{"a":{"b":1}}`), []byte(`{"a":{"b":2}}`), nil); err == nil || !strings.Contains(err.Error(), "/a/b") {
		t.Errorf("difference not located: %v", err)
	}
}

func TestMutations(t *testing.T) {
	ms := adaptertest.Mutations([]byte(`{"a":{"b":[1]}}`))
	for _, label := range []string{"/a = #0", "/a removed", "/a/b/0 = #5", "(root) + unknown member", "/a + unknown member"} {
		if _, ok := ms[label]; !ok {
			t.Errorf("no mutation %q in %d", label, len(ms))
		}
	}
	if !bytes.Equal(ms["/a/b removed"], []byte(`{"a":{}}`)) {
		t.Errorf("removal: %s", ms["/a/b removed"])
	}
	if adaptertest.Mutations([]byte("{")) != nil {
		t.Error("mutations of non-JSON")
	}
}
