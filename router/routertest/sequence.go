package routertest

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
)

// Sequence renders msgs (of the task taskID; "" for all) as their types,
// a tool event followed by its tool's name and the number of its call in
// order of the tool.calls ("tool.call weather #1", "tool.result weather
// #1"; docs/protocol.md §2.3.1), so that a test asserts the order of a
// run's events and the pairing of its call ids in one comparison. An
// outcome whose call id names no earlier tool.call is "#?"; a tool event
// that states no call id fails tb.
func Sequence(tb testing.TB, msgs []*protocol.Message, taskID string) []string {
	tb.Helper()
	calls := map[string]int{}
	var out []string
	for _, m := range msgs {
		if taskID != "" && m.TaskID != taskID {
			continue
		}
		s := string(m.Type)
		if m.Type.Family() == "tool" {
			id, ok := protocol.ToolCallID(m)
			if !ok {
				tb.Fatalf("%s %s states no call id", m.Type, m.ID)
			}
			var p struct {
				Name    string         `json:"name"`
				Details map[string]any `json:"details"`
			}
			_ = json.Unmarshal(m.Payload, &p)
			name := p.Name
			if name == "" {
				name, _ = p.Details["name"].(string)
			}
			if m.Type == protocol.TypeToolCall {
				calls[id] = len(calls) + 1
			}
			n := "?"
			if i, ok := calls[id]; ok {
				n = strconv.Itoa(i)
			}
			s += " " + name + " #" + n
		}
		out = append(out, s)
	}
	return out
}

// Streamed returns the texts of the task.progress events in msgs (of the
// task taskID; "" for all), in order: what a [router.TextStream] stored,
// so that a test asserts how a streamed text was gathered, and, joining
// them, that nothing was lost or cut inside a character. A task.progress
// whose payload is not a [router.TextProgress] is an error of tb, and
// left out.
func Streamed(tb testing.TB, msgs []*protocol.Message, taskID string) []string {
	tb.Helper()
	var out []string
	for _, m := range msgs {
		if m.Type != protocol.TypeTaskProgress || (taskID != "" && m.TaskID != taskID) {
			continue
		}
		p, err := protocol.DecodePayload[router.TextProgress](m)
		if err != nil {
			tb.Errorf("task.progress %s: %v", m.ID, err)
			continue
		}
		out = append(out, p.Text)
	}
	return out
}
