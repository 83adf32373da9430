package protocol

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
