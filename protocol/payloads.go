package protocol

import (
	"slices"
	"strconv"
)

// RoutingDecision is the payload of a routing.decision message (docs/protocol.md
// §4.3): which agent was selected, among which candidates, why, and with
// which preference scores.
type RoutingDecision struct {
	Selected   string             `json:"selected"`
	Candidates []string           `json:"candidates"`
	Reason     string             `json:"reason"`
	Scores     map[string]float64 `json:"scores,omitempty"`
	// Rejected names each agent that was considered and filtered out, with
	// the reason (an extension of §4.3 that makes decisions explainable).
	Rejected map[string]string `json:"rejected,omitempty"`
	// Eligible and Considered count the agents that passed every filter
	// and that were looked at; Candidates, Scores and Rejected may list
	// only the first of them when there are many.
	Eligible   int `json:"eligible,omitzero"`
	Considered int `json:"considered,omitzero"`
}

// appendJSON appends d as JSON, byte for byte as JSON v2 encodes it with
// deterministic map order (members in field order, map members sorted by
// name, omitempty and omitzero fields left out, a nil Candidates as []).
// The router writes one decision per task, so this skips reflection.
func (d *RoutingDecision) appendJSON(b []byte) ([]byte, error) {
	if d == nil {
		return append(b, "null"...), nil
	}
	w := writer{b: b}
	w.b = append(w.b, `{"selected":`...)
	w.str(d.Selected)
	w.b = append(w.b, `,"candidates":`...)
	w.strArray(d.Candidates)
	w.field("reason", d.Reason)
	if len(d.Scores) > 0 {
		object(&w, "scores", d.Scores, func(f float64) { w.float(f, 64) })
	}
	if len(d.Rejected) > 0 {
		object(&w, "rejected", d.Rejected, w.str)
	}
	if d.Eligible != 0 {
		w.b = append(w.b, `,"eligible":`...)
		w.b = strconv.AppendInt(w.b, int64(d.Eligible), 10)
	}
	if d.Considered != 0 {
		w.b = append(w.b, `,"considered":`...)
		w.b = strconv.AppendInt(w.b, int64(d.Considered), 10)
	}
	w.b = append(w.b, '}')
	if w.err != nil {
		return nil, w.err
	}
	return w.b, nil
}

// object appends the member `,"name":{...}` holding m's members sorted by
// name, each value written by val.
func object[V any](w *writer, name string, m map[string]V, val func(V)) {
	w.b = append(w.b, ',')
	w.str(name)
	w.b = append(w.b, ':', '{')
	for i, k := range sortedKeys(m, make([]string, 0, 8)) {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.str(k)
		w.b = append(w.b, ':')
		val(m[k])
	}
	w.b = append(w.b, '}')
}

// sortedKeys appends m's keys to buf, sorted.
func sortedKeys[V any](m map[string]V, buf []string) []string {
	for k := range m {
		buf = append(buf, k)
	}
	slices.Sort(buf)
	return buf
}
