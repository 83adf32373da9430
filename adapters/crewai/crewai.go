package crewai

import (
	"bytes"
	"context"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/protocol"
)

// Name is the adapter's name in an adapters.Registry.
const Name = "crewai"

// Source is the meta.src (adapters.MetaSource) of inbound messages.
const Source = "crewai"

// The meta keys the adapter sets on inbound messages (see the mapping
// table in the package doc).
const (
	MetaType        = "crewai_type"         // the crewAI event type or AMP body kind
	MetaEventID     = "crewai_event_id"     // event_id (tracing) or id (AMP webhook)
	MetaExecutionID = "crewai_execution_id" // trace_id, kickoff_id or execution_id: the crewAI run
	MetaTaskID      = "crewai_task_id"      // the crewAI task id
	MetaTaskName    = "crewai_task_name"    // the crewAI task name
	MetaAgentID     = "crewai_agent_id"     // the crewAI agent id (a uuid)
	MetaLinks       = "crewai_links"        // parent_event_id, previous_event_id, started_event_id, triggered_by_event_id, emission_sequence
	MetaExtra       = "crewai_extra"        // members the mapping has no field for
	MetaDropped     = "crewai_dropped"      // names of members dropped on purpose (Python object dumps)
	MetaTimestamp   = "crewai_timestamp"    // the timestamp as sent, when ts does not write it back the same
	MetaUsage       = "usage"               // {total_tokens} of a crew, usage of an LLM call
	MetaMeta        = "crewai_meta"         // the kickoff request's meta
	MetaIDDerived   = "id_derived"          // true: the body had no id; the message id is derived from its content
)

// TypeLLMCall is the extension type of every LLM call event
// (llm_call_started/completed/failed, llm_stream_chunk,
// llm_thinking_chunk): docs/protocol.md §2.6.
const TypeLLMCall protocol.Type = "x.crewai.llm_call"

// Options configures an Adapter. Nil means defaults.
type Options struct {
	// Index remembers where translated crewAI ids landed (crewAI task
	// ids, tool call event ids, delegations), so that a later batch finds
	// its task. Nil: adapters.NewMemoryIndex(0).
	Index adapters.Index
	// Peers are agent ids of crews reached through this adapter:
	// CanHandle accepts task.request messages addressed to them.
	Peers []string
	// MaxBytes is the largest input accepted; 16 MiB when ≤ 0 (a
	// tracing batch holds whole LLM prompts).
	MaxBytes int
	// Now stamps the bodies that carry no timestamp (AMP kickoff, status
	// and resume bodies); time.Now when nil.
	Now func() time.Time
}

// DefaultMaxBytes is the input limit of a zero Options.
const DefaultMaxBytes = 16 << 20

// Adapter translates crewAI's event stream (tracing batches, AMP webhook
// deliveries, single events, stream chunks) and AMP API bodies into
// envelopes, and task.request envelopes into AMP kickoff and resume
// bodies. It implements adapters.Adapter and adapters.Detector and is safe
// for concurrent use.
type Adapter struct {
	opts  Options
	links *adapters.Links

	mu      sync.Mutex
	unknown map[string]int64
}

var (
	_ adapters.Adapter  = (*Adapter)(nil)
	_ adapters.Detector = (*Adapter)(nil)
)

// New returns an adapter; opts may be nil.
func New(opts *Options) *Adapter {
	a := &Adapter{unknown: map[string]int64{}}
	if opts != nil {
		a.opts = *opts
		a.opts.Peers = slices.Clone(opts.Peers)
	}
	if a.opts.MaxBytes <= 0 {
		a.opts.MaxBytes = DefaultMaxBytes
	}
	if a.opts.Now == nil {
		a.opts.Now = time.Now
	}
	a.links = adapters.NewLinks(a.opts.Index)
	return a
}

// Name returns "crewai".
func (a *Adapter) Name() string { return Name }

// Detect reports whether raw looks like a crewAI body: a JSON object
// naming one of the members only crewAI's shapes have. It does not parse
// raw.
func (a *Adapter) Detect(raw []byte) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 || raw[0] != '{' {
		return false
	}
	for _, k := range detectKeys {
		if bytes.Contains(raw, k) {
			return true
		}
	}
	return false
}

var detectKeys = [][]byte{
	[]byte(`"event_data"`), []byte(`"execution_id"`), []byte(`"kickoff_id"`),
	[]byte(`"chunk_type"`), []byte(`"final_event_count"`), []byte(`"execution_type"`),
	[]byte(`"crewWebhookUrl"`), []byte(`"taskWebhookUrl"`), []byte(`"human_feedback"`), []byte(`"inputs"`),
	[]byte(`"event_id"`), []byte(`"is_approve"`), []byte(`"emission_sequence"`),
}

// CanHandle reports whether Outbound can translate m: a task.request that
// came in through this adapter (meta.src) or is addressed to one of
// Options.Peers.
func (a *Adapter) CanHandle(m *protocol.Message) bool {
	if m == nil || m.Type != protocol.TypeTaskRequest {
		return false
	}
	if adapters.Source(m) == Source {
		return true
	}
	for _, p := range m.To {
		if slices.Contains(a.opts.Peers, p.AgentID) {
			return true
		}
	}
	return false
}

// Unknown returns how many events of each crewAI type the adapter kept as
// x.crewai.<kind> extension events because the mapping does not know the
// type, since the adapter was made.
func (a *Adapter) Unknown() map[string]int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]int64, len(a.unknown))
	for k, v := range a.unknown {
		out[k] = v
	}
	return out
}

func (a *Adapter) countUnknown(kind string) {
	a.mu.Lock()
	if len(a.unknown) < 4096 || a.unknown[kind] > 0 {
		a.unknown[kind]++
	} else {
		a.unknown["(other)"]++
	}
	a.mu.Unlock()
}

// Inbound translates one crewAI body into envelopes, in the order of the
// crewAI run (see the package doc).
func (a *Adapter) Inbound(ctx context.Context, raw []byte) ([]*protocol.Message, error) {
	if len(raw) > a.opts.MaxBytes {
		return nil, inErr(protocol.CodeTooLarge, "", "input over the size limit", nil)
	}
	var top map[string]jsonValue
	if err := adapters.DecodeJSON(Name, raw, &top); err != nil {
		return nil, err
	}
	if top == nil {
		return nil, inErr(protocol.CodeWrongType, "", "want a JSON object", ErrShape)
	}
	return a.inbound(ctx, raw, top)
}

// sortStable orders webhook events by emission_sequence when every event
// has one, else by time: AMP delivers batches in no particular order.
func sortStable(evs []*event) {
	all := true
	for _, e := range evs {
		if e.seq == nil {
			all = false
			break
		}
	}
	sort.SliceStable(evs, func(i, j int) bool {
		if all {
			return *evs[i].seq < *evs[j].seq
		}
		return evs[i].at.Before(evs[j].at)
	})
}
