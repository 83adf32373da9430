package fanout

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// fieldsOf reads what the store indexes a message by (its decoded
// fields), names and values spelt with escapes included.
func TestFieldsOf(t *testing.T) {
	m := protocol.NewMessage(protocol.TypeTaskRequest, "agent:a")
	m.RunID, m.ThreadID, m.TaskID = "run_a", "thr_a", "task_a"
	m.Payload = json.RawMessage(`{"from":{"agent_id":"agent:nested"},"run_id":"run_nested"}`)
	plain, err := protocol.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	// The same message with escapes in names and values: the store keeps
	// the bytes a message arrived with.
	esc := strings.NewReplacer(`"type":`, `"\u0074ype":`, `"run_id":"run_a"`, `"r\u0075n_id":"run_\u0061"`,
		`"from":{"agent_id":"agent:a"}`, `"from":{"agent\u005fid":"agent:\u0061"}`, `"task.request"`, `"task.requ\u0065st"`)
	escaped := []byte(esc.Replace(string(plain)))
	if !bytes.Contains(escaped, []byte(`"agent\u005fid":"agent:\u0061"`)) || !bytes.Contains(escaped, []byte(`r\u0075n_id`)) {
		t.Fatalf("no escapes in %s", escaped)
	}
	for _, raw := range [][]byte{
		plain,
		escaped,
		[]byte(`not json`), // not an envelope: matches only the empty query
	} {
		got := fieldsOf(raw)
		var want fields
		if m, err := (store.Event{Raw: raw}).Message(); err == nil {
			want = fields{m.RunID, m.ThreadID, m.TaskID, m.From.AgentID, m.Type}
		} else if raw[0] == '{' {
			t.Fatalf("decode %s: %v", raw, err)
		}
		if got != want {
			t.Errorf("fieldsOf(%s) = %+v, want %+v", raw, got, want)
		}
	}
}
