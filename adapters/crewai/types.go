package crewai

// The AMP (deployed crew) API bodies, as docs/edge/enterprise-api.en.yaml
// of crewAIInc/crewAI defines them.

// Kickoff is the body of POST /kickoff.
type Kickoff struct {
	Inputs         map[string]any `json:"inputs"`
	Meta           map[string]any `json:"meta,omitempty"`
	TaskWebhookURL string         `json:"taskWebhookUrl,omitempty"`
	StepWebhookURL string         `json:"stepWebhookUrl,omitempty"`
	CrewWebhookURL string         `json:"crewWebhookUrl,omitempty"`
	// Webhooks asks for event streaming to a URL (AMP webhook streaming).
	Webhooks *Webhooks `json:"webhooks,omitempty"`
}

// Webhooks is the kickoff's event streaming configuration.
type Webhooks struct {
	Events         []string            `json:"events"`
	URL            string              `json:"url"`
	Realtime       bool                `json:"realtime"`
	Authentication *WebhookCredentials `json:"authentication,omitempty"`
}

// WebhookCredentials is how AMP authenticates its webhook deliveries: a
// bearer token the crew was given at kickoff.
type WebhookCredentials struct {
	Strategy string `json:"strategy"`
	Token    string `json:"token"`
}

// KickoffResponse is the answer to POST /kickoff.
type KickoffResponse struct {
	KickoffID string `json:"kickoff_id"`
}

// Status is the answer to GET /status/{kickoff_id}.
type Status struct {
	Status        string         `json:"status"`
	CurrentTask   string         `json:"current_task,omitempty"`
	Progress      map[string]any `json:"progress,omitempty"`
	Result        *StatusResult  `json:"result,omitempty"`
	Error         string         `json:"error,omitempty"`
	ExecutionTime *float64       `json:"execution_time,omitempty"`
	Message       string         `json:"message,omitempty"`
}

// StatusResult is a completed execution's result.
type StatusResult struct {
	Output any              `json:"output"`
	Tasks  []map[string]any `json:"tasks,omitempty"`
}

// Resume is the body of POST /resume.
type Resume struct {
	ExecutionID    string `json:"execution_id"`
	TaskID         string `json:"task_id"`
	HumanFeedback  string `json:"human_feedback"`
	IsApprove      bool   `json:"is_approve"`
	TaskWebhookURL string `json:"taskWebhookUrl,omitempty"`
	StepWebhookURL string `json:"stepWebhookUrl,omitempty"`
	CrewWebhookURL string `json:"crewWebhookUrl,omitempty"`
}

// StreamChunk is one chunk of Crew(stream=True).
type StreamChunk struct {
	Content   string          `json:"content"`
	ChunkType string          `json:"chunk_type"`
	TaskIndex int             `json:"task_index"`
	TaskName  string          `json:"task_name"`
	TaskID    string          `json:"task_id"`
	AgentRole string          `json:"agent_role"`
	AgentID   string          `json:"agent_id"`
	ToolCall  *StreamToolCall `json:"tool_call"`
}

// StreamToolCall is a StreamChunk's tool call.
type StreamToolCall struct {
	ToolID    string `json:"tool_id"`
	ToolName  string `json:"tool_name"`
	Arguments string `json:"arguments"`
	Index     int    `json:"index"`
}
