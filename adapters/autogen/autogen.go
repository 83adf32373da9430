package autogen

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/protocol"
)

// Name is the adapter's name in an adapters.Registry.
const Name = "autogen"

// Source is the meta.src (adapters.MetaSource) of inbound messages.
const Source = "autogen-agentchat"

// DefaultAgents is the agent id prefix of AutoGen agent names when neither
// Options.Agents nor Run.Agents gives one: "planner" is "agent:autogen/planner".
const DefaultAgents = "agent:autogen/"

// The meta keys the adapter sets on inbound messages and reads on outbound
// ones (see the mapping table in the package doc).
const (
	MetaType         = "autogen_type"     // the AutoGen "type" (class name), "TaskResult", or the worker message kind
	MetaID           = "autogen_id"       // the AutoGen message id
	MetaSourceName   = "autogen_source"   // the AutoGen "source" (agent name) as sent
	MetaUsage        = "usage"            // models_usage
	MetaMetadata     = "autogen_metadata" // metadata (dict[str, str])
	MetaCreatedAt    = "created_at"       // created_at as sent
	MetaToolCallID   = "tool_call_id"     // FunctionCall.id / FunctionExecutionResult.call_id
	MetaPart         = "part"             // index of this envelope among those one AutoGen message became
	MetaParts        = "parts"            // how many envelopes that message became
	MetaPartial      = "partial"          // true: a streaming chunk
	MetaFullID       = "full_message_id"  // the message a chunk belongs to
	MetaThought      = "thought"          // true: a ThoughtEvent
	MetaInputRequest = "input_required"   // true: UserInputRequestedEvent
	MetaRequestID    = "request_id"       // UserInputRequestedEvent.request_id
	MetaHandoff      = "handoff_target"   // HandoffMessage.target
	MetaStopReason   = "stop_reason"      // TaskResult.stop_reason
	MetaUnknown      = "autogen_unknown"  // true: a kind the adapter does not know (kept as x.autogen.*)
	MetaOwner        = "owner"            // the authenticated caller that posted it (Handler)
	MetaDerivedID    = "id_derived"       // true: the AutoGen message had no id; the envelope id is derived
	MetaExtra        = "autogen_extra"    // members of a TaskResult other than messages and stop_reason
)

// Options configures an Adapter. nil means defaults.
type Options struct {
	// Index remembers where translated messages landed (by AutoGen message
	// id and tool call id), so that a later event finds its run and task.
	// Nil: adapters.NewMemoryIndex(0).
	Index adapters.Index
	// Agents is the prefix that turns an AutoGen agent name into a Clutch
	// agent id; DefaultAgents when "". It must start with "agent:".
	Agents string
	// Peers are agent ids reached through AutoGen: CanHandle accepts plain
	// Clutch messages addressed to them, besides those that came in through
	// this adapter.
	Peers []string
	// MaxBytes is the largest input accepted; protocol.DefaultMaxBytes when
	// ≤ 0.
	MaxBytes int
	// Now gives the ts of messages without created_at; time.Now when nil.
	Now func() time.Time
}

// Run says where the messages of one Inbound call belong. The zero Run
// derives everything from the input (see "Runs" in the package doc).
type Run struct {
	// ID, ThreadID and TaskID are the Clutch ids of the AutoGen run, its
	// thread and its one task. Empty ones are derived from Key.
	ID, ThreadID, TaskID string
	// Key names the run when ID is empty: "run:autogen/<key>",
	// "thread:autogen/<key>", "task:autogen/<key>". Empty: the first
	// message's id, else a digest of it.
	Key string
	// Started reports that the run's task.request is already stored, so
	// that no message of this input starts it again.
	Started bool
	// Agents overrides Options.Agents for this input.
	Agents string
	// Owner, when set, is written to meta.owner of every message.
	Owner string
	// Salt is mixed into the derived ids of messages without an AutoGen id:
	// the same input with the same Salt gives the same ids (a re-post
	// dedups); another Salt gives other ids.
	Salt string
}

// Adapter translates autogen-agentchat 0.4+ JSON to and from the Clutch
// envelope. It implements adapters.Adapter and adapters.Detector and is
// safe for concurrent use.
type Adapter struct {
	opts    Options
	links   *adapters.Links
	unknown atomic.Int64
}

var (
	_ adapters.Adapter  = (*Adapter)(nil)
	_ adapters.Detector = (*Adapter)(nil)
)

// New returns an adapter; opts may be nil. An Options.Agents without the
// "agent:" prefix is replaced by DefaultAgents.
func New(opts *Options) *Adapter {
	a := &Adapter{}
	if opts != nil {
		a.opts = *opts
		a.opts.Peers = slices.Clone(opts.Peers)
	}
	a.links = adapters.NewLinks(a.opts.Index)
	if a.opts.MaxBytes <= 0 {
		a.opts.MaxBytes = protocol.DefaultMaxBytes
	}
	if !validAgents(a.opts.Agents) {
		a.opts.Agents = DefaultAgents
	}
	if a.opts.Now == nil {
		a.opts.Now = time.Now
	}
	return a
}

func validAgents(p string) bool {
	return strings.HasPrefix(p, protocol.PrefixAgent) && len(p) > len(protocol.PrefixAgent) && len(p) < protocol.MaxIDLength/2
}

// Name returns "autogen".
func (a *Adapter) Name() string { return Name }

// Unknown returns how many AutoGen kinds the adapter did not know and kept
// as x.autogen.* extension events since it was made.
func (a *Adapter) Unknown() int64 { return a.unknown.Load() }

// Detect reports whether raw looks like AutoGen JSON: an object or array
// with a "source", a "type" and a value ending in Message" or Event" or
// starting with "StructuredMessage[ (an AutoGen class name); or one with
// a "stop_reason" (a TaskResult), "agent_states" (saved team state),
// "cloudEvent" or "request_id" (worker messages). It does not parse raw.
func (a *Adapter) Detect(raw []byte) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 || raw[0] != '{' && raw[0] != '[' {
		return false
	}
	for _, k := range []string{`"stop_reason"`, `"agent_states"`, `"cloudEvent"`, `"request_id"`} {
		if bytes.Contains(raw, []byte(k)) {
			return true
		}
	}
	return bytes.Contains(raw, []byte(`"type"`)) && bytes.Contains(raw, []byte(`"source"`)) &&
		(bytes.Contains(raw, []byte(`Message"`)) || bytes.Contains(raw, []byte(`Event"`)) || bytes.Contains(raw, []byte(`"StructuredMessage[`)))
}

// CanHandle reports whether Outbound can translate m: a message that came
// in through this adapter (meta.src) of a kind AutoGen has, or a
// chat.message, task.request or task.result addressed to one of
// Options.Peers.
func (a *Adapter) CanHandle(m *protocol.Message) bool {
	if m == nil {
		return false
	}
	if adapters.Source(m) == Source {
		return mappable(m)
	}
	switch m.Type {
	case protocol.TypeChatMessage, protocol.TypeTaskRequest, protocol.TypeTaskResult:
	default:
		return false
	}
	for _, p := range m.To {
		if slices.Contains(a.opts.Peers, p.AgentID) {
			return true
		}
	}
	return false
}

// Inbound translates AutoGen JSON (one message or event, a list of them,
// a TaskResult, or an autogen-core worker message) into envelopes of one
// run, in order. The run is derived from the input; use InboundRun to
// name it.
func (a *Adapter) Inbound(ctx context.Context, raw []byte) ([]*protocol.Message, error) {
	return a.InboundRun(ctx, Run{}, raw)
}

// InboundRun is Inbound into the given run.
func (a *Adapter) InboundRun(ctx context.Context, run Run, raw []byte) ([]*protocol.Message, error) {
	t, err := a.newTranslation(run)
	if err != nil {
		return nil, err
	}
	if err := t.value(ctx, raw, ""); err != nil {
		return nil, err
	}
	return t.finish(ctx)
}

// Outbound translates an envelope into one AutoGen message or event (see
// the package doc).
func (a *Adapter) Outbound(ctx context.Context, m *protocol.Message) ([]byte, error) {
	return a.outbound(m)
}
