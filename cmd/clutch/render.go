package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/clutchprotocol/clutch/internal/eventio"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

func typeOf(s string) protocol.Type { return protocol.Type(s) }

// clean makes text from an event safe to print on a terminal: control
// characters (escape sequences among them) and invalid UTF-8 are shown
// escaped, never sent as they are.
func clean(s string) string {
	ok := true
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	q := strconv.QuoteToGraphic(s)
	return q[1 : len(q)-1]
}

// clip shortens s to n runes.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// renderEvent is one line for a person: seq, time, type, sender and what
// the event says, shortened.
func renderEvent(ev store.Event) string {
	h, err := eventio.ReadHead(ev.Raw)
	if err != nil {
		return fmt.Sprintf("%-6d %s  (undecodable: %v)", ev.Seq, ev.Time.UTC().Format("15:04:05.000"), err)
	}
	n := 120
	if typeOf(h.Type) == protocol.TypeRoutingDecision {
		n = 320 // its explanation is for people: shown whole
	}
	return strings.TrimRight(fmt.Sprintf("%-6d %s  %-16s %-22s %s", ev.Seq, ev.Time.UTC().Format("15:04:05.000"),
		clean(h.Type), clean(h.From.AgentID), clean(clip(describe(h, ev.Raw), n))), " ")
}

// describe says what an event carries, by type.
func describe(h eventio.Head, raw []byte) string {
	var m struct {
		To []struct {
			AgentID string `json:"agent_id"`
		} `json:"to"`
		Payload json.RawMessage `json:"payload"`
	}
	json.Unmarshal(raw, &m)
	var p map[string]any
	json.Unmarshal(m.Payload, &p)
	str := func(k string) string {
		if s, ok := p[k].(string); ok {
			return s
		}
		return ""
	}
	task := ""
	if h.Task != "" {
		task = h.Task + " "
	}
	switch protocol.Type(h.Type) {
	case protocol.TypeTaskRequest:
		to := ""
		if len(m.To) > 0 {
			to = " → " + m.To[0].AgentID
		}
		return task + h.PayloadType + to
	case protocol.TypeRoutingDecision:
		// Why in words for people; an older decision has only the reason.
		why := str("explanation")
		if why == "" {
			why = str("reason")
		}
		return task + "selected " + str("selected") + ": " + why
	case protocol.TypeRoutingFailure, protocol.TypeTaskError, protocol.TypeToolError:
		return task + str("code") + ": " + str("message")
	case protocol.TypeTaskResult:
		return words(task, h.PayloadType, compact(m.Payload))
	case protocol.TypeChatMessage:
		if t := str("text"); t != "" {
			return t
		}
	case protocol.TypeAgentRegister, protocol.TypeAgentUpdate:
		var caps []string
		if cs, ok := p["capabilities"].([]any); ok {
			for _, c := range cs {
				if c, ok := c.(map[string]any); ok {
					if id, ok := c["id"].(string); ok {
						caps = append(caps, id)
					}
				}
			}
		}
		return str("agent_id") + " " + strings.Join(caps, ", ")
	case protocol.TypeToolCall:
		return words(task, str("tool"), str("name"), compact(mustJSON(p["args"])))
	}
	if p == nil && string(bytes.TrimSpace(m.Payload)) == "null" {
		return strings.TrimSpace(task)
	}
	return task + compact(m.Payload)
}

// words joins the non-empty parts with single spaces.
func words(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, " ")
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func compact(b []byte) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return string(b)
	}
	return buf.String()
}
