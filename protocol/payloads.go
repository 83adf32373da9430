package protocol

// RoutingDecision is the payload of a routing.decision message (seed 000
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
}
