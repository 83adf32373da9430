package protocol

import "strconv"

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
	// Explanation says why in plain English, for people: one or two
	// sentences naming agents by their display names ("Ken chosen over
	// Research 2: both have skill:research; Ken matches the preferred tag
	// fintech (score 0.5 vs 0)."). Reason is the machine form; the wording
	// of Explanation may change between releases, so code reads Reason,
	// Selected and Scores, never this.
	Explanation string `json:"explanation,omitempty"`
}

// appendJSON appends d as JSON, byte for byte as JSON v2 encodes it with
// deterministic map order (members in field order, map members sorted by
// name, omitempty and omitzero fields left out, a nil Candidates as []).
// The router writes one decision per task, so this skips reflection.
func (d *RoutingDecision) appendJSON(b []byte) ([]byte, error) {
	if d == nil {
		return append(b, "null"...), nil
	}
	var w writer
	b = w.str(append(b, `{"selected":`...), d.Selected)
	b = w.strArray(append(b, `,"candidates":`...), d.Candidates)
	b = w.str(append(b, `,"reason":`...), d.Reason)
	if len(d.Scores) > 0 {
		b = object(&w, b, "scores", d.Scores, func(b []byte, f float64) []byte { return w.float(b, f, 64) })
	}
	if len(d.Rejected) > 0 {
		b = object(&w, b, "rejected", d.Rejected, w.str)
	}
	if d.Eligible != 0 {
		b = strconv.AppendInt(append(b, `,"eligible":`...), int64(d.Eligible), 10)
	}
	if d.Considered != 0 {
		b = strconv.AppendInt(append(b, `,"considered":`...), int64(d.Considered), 10)
	}
	if d.Explanation != "" {
		b = w.str(append(b, `,"explanation":`...), d.Explanation)
	}
	b = append(b, '}')
	if w.err != nil {
		return nil, w.err
	}
	return b, nil
}

// sizeHint is about the length of d's JSON when no string needs escaping,
// so that the writer's buffer is allocated once at the right size: a
// decision with its reason and explanation no longer fits the 256 bytes
// of a guess, and grows (an allocation and a copy) past it.
func (d *RoutingDecision) sizeHint() int {
	if d == nil {
		return 4
	}
	// Members' names and punctuation, the two counts.
	n := 120 + len(d.Selected) + len(d.Reason) + len(d.Explanation)
	for _, c := range d.Candidates {
		n += len(c) + 3
	}
	for k := range d.Scores {
		n += len(k) + 10 // "k":0.123,
	}
	for k, v := range d.Rejected {
		n += len(k) + len(v) + 6
	}
	return n
}

// object appends the member `,"name":{...}` holding m's members sorted by
// name, each value written by val.
func object[V any](w *writer, b []byte, name string, m map[string]V, val func([]byte, V) []byte) []byte {
	b = w.str(append(b, ','), name)
	b = append(b, ':', '{')
	for i, k := range sortedKeys(m, make([]string, 0, 8)) {
		if i > 0 {
			b = append(b, ',')
		}
		b = w.str(b, k)
		b = append(b, ':')
		b = val(b, m[k])
	}
	return append(b, '}')
}
