package adapters

import (
	"strings"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
)

func TestValidForeignID(t *testing.T) {
	for _, c := range []struct {
		id   string
		want bool
	}{
		{"", true},
		{"msg-1", true},
		{"ctx é 日本", true},
		{strings.Repeat("a", protocol.MaxIDLength), true},
		{strings.Repeat("a", protocol.MaxIDLength+1), false},
		{"a\nb", false},
		{"a\x7fb", false},
		{"a\u0085b", false},
		{"a\xffb", false},
	} {
		if got := ValidForeignID(c.id); got != c.want {
			t.Errorf("ValidForeignID(%q) = %v, want %v", c.id, got, c.want)
		}
	}
}

// TestCallID: an outside id that can be kept is the call id; any other is
// replaced by one derived from it and the parts, stable and distinct.
func TestCallID(t *testing.T) {
	if got := CallID("call_abc", "run", "msg"); got != "call_abc" {
		t.Errorf("a good outside id is kept, got %q", got)
	}
	long := strings.Repeat("a", protocol.MaxIDLength+1)
	derived := []string{
		CallID("", "run:1", "msg_1", "0"),
		CallID("", "run:1", "msg_1", "1"),
		CallID("", "run:1", "msg_10"),
		CallID("", "run:1msg_1", "0"),
		CallID(long),
		CallID("a\nb"),
	}
	seen := map[string]bool{}
	for i, id := range derived {
		if !strings.HasPrefix(id, protocol.PrefixCall) || len(id) != len(protocol.PrefixCall)+32 {
			t.Errorf("%d: %q is not call: and 32 hex digits", i, id)
		}
		if seen[id] {
			t.Errorf("%d: %q derived twice from different parts", i, id)
		}
		seen[id] = true
	}
	if CallID("", "run:1", "msg_1", "0") != derived[0] || CallID(long) != derived[4] {
		t.Error("the same parts must give the same id")
	}
	m := &protocol.Message{Type: protocol.TypeToolCall, Payload: []byte(`{"call_id":"` + derived[0] + `"}`)}
	if err := protocol.CheckToolCallID(m); err != nil {
		t.Errorf("a derived id breaks the rule: %v", err)
	}
}
