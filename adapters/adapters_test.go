package adapters

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
)

// echo is a toy adapter: its wire format is the envelope itself, marked by
// a leading "E:".
type echo struct{ name string }

func (e echo) Name() string                       { return e.name }
func (e echo) CanHandle(m *protocol.Message) bool { return Source(m) == e.name }
func (e echo) Detect(raw []byte) bool             { return bytes.HasPrefix(raw, []byte(e.name+":")) }
func (e echo) Inbound(ctx context.Context, raw []byte) ([]*protocol.Message, error) {
	m, err := protocol.Decode(bytes.TrimPrefix(raw, []byte(e.name+":")))
	if err != nil {
		return nil, InboundError(e.name, protocol.CodeOf(err), "", "not an envelope", err)
	}
	return []*protocol.Message{m}, nil
}
func (e echo) Outbound(ctx context.Context, m *protocol.Message) ([]byte, error) {
	b, err := protocol.Encode(m)
	if err != nil {
		return nil, OutboundError(e.name, protocol.CodeOf(err), "", "", err)
	}
	return append([]byte(e.name+":"), b...), nil
}

func TestRegistry(t *testing.T) {
	r, err := NewRegistry(echo{"E"}, echo{"F"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Add(echo{"E"}); !errors.Is(err, ErrDuplicateAdapter) {
		t.Fatalf("duplicate name: %v", err)
	}
	if err := r.Add(echo{""}); !errors.Is(err, ErrInvalidAdapter) {
		t.Fatalf("empty name: %v", err)
	}
	m := protocol.NewMessage(protocol.TypeChatMessage, "agent:a")
	m.Meta = map[string]any{MetaSource: "F"}
	raw, a, err := r.Outbound(context.Background(), m)
	if err != nil || a.Name() != "F" {
		t.Fatalf("outbound %v %v", a, err)
	}
	msgs, a, err := r.Inbound(context.Background(), raw)
	if err != nil || a.Name() != "F" || msgs[0].ID != m.ID {
		t.Fatalf("inbound %v %v", a, err)
	}
	if _, err := r.ForRaw([]byte("X:{}")); !errors.Is(err, ErrNoAdapter) {
		t.Fatalf("unknown input: %v", err)
	}
	m.Meta = nil
	if _, err := r.ForMessage(m); !errors.Is(err, ErrNoAdapter) || protocol.CodeOf(err) != protocol.CodeUnsupportedTask {
		t.Fatalf("no adapter: %v", err)
	}
	_, _, err = r.Inbound(context.Background(), []byte(`E:{"v":"clutch/0.9"}`))
	if !errors.Is(err, ErrInbound) || !errors.Is(err, protocol.CodeUnsupportedVersion) || protocol.CodeOf(err) != protocol.CodeUnsupportedVersion {
		t.Fatalf("inbound error: %v", err)
	}
	if got := r.Names(); len(got) != 2 || got[0] != "E" {
		t.Fatalf("names %v", got)
	}
}
