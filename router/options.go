package router

import (
	"log/slog"
	"math"
	"slices"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
)

// Weights weigh the parts of the preference score (docs/protocol.md §4.2 step 3).
// Each prefers[] entry counts with the weight of its kind; the message's
// domain counts with Domain. A score is the weighted share of preferences an
// agent meets, from 0 to 1.
type Weights struct {
	// Tags weighs "tag:<t>" and "domain:<d>" entries, met when a capability
	// of the agent has that tag.
	Tags float64
	// Tools weighs "tool:<name>" and "mcp:<name>" entries, met when the
	// agent's capabilities name that tool server (mcp:<name>) or have the
	// capability id tool:<name>.
	Tools float64
	// Domain weighs the message's domain field, met when a capability of
	// the agent has the domain as a tag.
	Domain float64
	// Capabilities weighs entries of any other kind ("skill:x"), met when
	// the agent has that capability id.
	Capabilities float64
}

// DefaultWeights weigh every kind of preference the same.
var DefaultWeights = Weights{Tags: 1, Tools: 1, Domain: 1, Capabilities: 1}

// Budget limits a run (CLowl E012). As every limit of Options, a zero
// field takes its default (none for MaxTasks, DefaultMaxDepth for
// MaxDepth), a negative one is refused, and NoLimit lifts a limit.
type Budget struct {
	// MaxTasks is the most tasks one run may have (the root and every
	// delegated subtask; retries do not count). In a team (package
	// router/team) it holds for the whole team: the run's tasks are
	// counted in the store (see "Teams" in the package doc).
	MaxTasks int
	// MaxDepth is the deepest delegation allowed: a root task has depth 0,
	// its subtasks depth 1, and so on. DefaultMaxDepth when 0.
	MaxDepth int
}

// Recovery says what Recover does with a task that was running when the
// previous process stopped (accepted, no terminal event).
type Recovery int

const (
	// RecoverFail ends each interrupted task with a retryable task.error
	// of code INTERRUPTED; Retry can run it again. The default: a handler
	// that had side effects is not run twice behind the caller's back.
	RecoverFail Recovery = iota
	// RecoverRedispatch routes each interrupted task again, as a new
	// attempt.
	RecoverRedispatch
)

// NoLimit, given to a count limit of Options (MaxInFlight,
// Budget.MaxTasks, Budget.MaxDepth, MaxQueued, MaxAttempts), is never
// reached: it lifts the limit. Every limit of Options means the same by
// zero and negative values: zero takes the default the field states, and
// a negative value, which would mean none of it (see the package clutch
// doc), is refused with ErrInvalidOptions.
const NoLimit = math.MaxInt

// Defaults of a zero Options.
const (
	DefaultAgentID      = "agent:orchestrator"
	DefaultMaxAttempts  = 3
	DefaultMaxQueued    = 1024
	DefaultQueueTimeout = 30 * time.Second
	DefaultMaxDepth     = 16
	// DefaultMaxInFlight is the default Options.MaxInFlight.
	DefaultMaxInFlight = 10000
	// DefaultCloseTimeout is how long Close waits for running handlers to
	// return before it abandons them (see Router.Shutdown).
	DefaultCloseTimeout = 10 * time.Second
)

// Options configures a Router. Nil means defaults; zero fields take
// defaults.
type Options struct {
	// AgentID is the router's own agent id: the sender of routing events,
	// task.timeout and task.cancel, and the recipient ("to") that means
	// "route this for me". DefaultAgentID ("agent:orchestrator", as in docs/protocol.md
	// §10) when "".
	AgentID string
	// IDs makes ids and timestamps and is the router's clock (see Clock
	// in the package doc); the registry's (registry.Registry.IDs, which
	// reads the store's clock by default) when nil, so store, registry
	// and router share one clock unless told otherwise.
	IDs *protocol.IDs
	// Logger receives the router's diagnostics; slog.Default() when nil.
	Logger *slog.Logger
	// Weights of the preference score; DefaultWeights when all zero.
	Weights Weights
	// MaxAttempts is how many times a task is tried when it fails with a
	// retryable error (docs/protocol.md §5.3); DefaultMaxAttempts when 0, 1 for no
	// retries.
	MaxAttempts int
	// Backoff is the wait before attempt n+1 after attempt n failed;
	// DefaultBackoff when nil.
	Backoff func(attempt int) time.Duration
	// MaxQueued is the most tasks that may wait at once for an agent to
	// fall below its max_concurrency; DefaultMaxQueued when 0. A task past
	// it fails at once with CAPACITY.
	MaxQueued int
	// QueueTimeout is how long a task waits for capacity before it fails
	// with a routing.failure of code CAPACITY; DefaultQueueTimeout when 0.
	QueueTimeout time.Duration
	// MaxInFlight is the most tasks the router holds at once, across all
	// agents and runs: tasks running, waiting for an agent's capacity or
	// for their next attempt, subtasks included, and handlers abandoned
	// by Shutdown until they return. Each holds a goroutine. A Submit,
	// Delegate or Retry past it fails at once with ErrCapacity (code
	// CAPACITY, retryable): nothing is stored and nothing runs.
	// DefaultMaxInFlight when 0; NoLimit for none.
	MaxInFlight int
	// Budget limits each run.
	Budget Budget
	// Validator checks the payload of every request and result against
	// its contract (docs/protocol.md §3): a *schema.Registry against the
	// schema of its payload_type; a *schema.Binder in the scope of its run
	// (docs/protocol.md §3.4), against the workflow step it answers when
	// the run is bound (Binder.Bind, before the run's first task; Unbind
	// when the run is over), else against the Binder's registry. The
	// router copies a request's meta.step (protocol.MetaStep) to its
	// result. Nil: payloads are not checked against any schema; the
	// envelope is still validated (protocol.Message.Validate).
	Validator Validator
	// Recovery is what Recover does with interrupted tasks.
	Recovery Recovery
	// Middleware wraps every handler registered with the router; the
	// first in the list is the outermost (it runs first and sees what
	// the others return last).
	Middleware []Middleware
	// Observer, when set, is told of every attempt's steps and sets the
	// trace context of the task's events (see Observer; package
	// telemetry provides one).
	Observer Observer
	// Signers are the private keys of local agents, by agent id: every
	// event such an agent sends (task.accept, task.progress, task.result,
	// task.error, tool events, delegated requests) is signed before it is
	// stored (docs/protocol.md §6.1). The card registered for the agent,
	// or registry.Options.Keys, must list the kid with its public key.
	Signers map[string]SigningKey
}

// DefaultBackoff waits 50 ms after the first failure and doubles each
// time, up to 5 s.
func DefaultBackoff(attempt int) time.Duration {
	d := 50 * time.Millisecond
	for i := 1; i < attempt && d < 5*time.Second; i++ {
		d *= 2
	}
	return min(d, 5*time.Second)
}

func (o *Options) setDefaults() error {
	for _, l := range []struct {
		name  string
		value int64
	}{
		{"MaxAttempts", int64(o.MaxAttempts)}, {"MaxQueued", int64(o.MaxQueued)},
		{"QueueTimeout", int64(o.QueueTimeout)}, {"MaxInFlight", int64(o.MaxInFlight)},
		{"Budget.MaxTasks", int64(o.Budget.MaxTasks)}, {"Budget.MaxDepth", int64(o.Budget.MaxDepth)},
	} {
		if l.value < 0 {
			return wrap(ErrInvalidOptions, l.name+" must not be negative: 0 takes the default, router.NoLimit lifts the limit", nil)
		}
	}
	if w := o.Weights; w.Tags < 0 || w.Tools < 0 || w.Domain < 0 || w.Capabilities < 0 {
		return wrap(ErrInvalidOptions, "weights must not be negative", nil)
	}
	for _, mw := range o.Middleware {
		if mw == nil {
			return wrap(ErrInvalidOptions, "nil middleware", nil)
		}
	}
	o.Middleware = slices.Clone(o.Middleware)
	if err := checkSigners(o.Signers); err != nil {
		return err
	}
	if o.AgentID == "" {
		o.AgentID = DefaultAgentID
	}
	if len(o.AgentID) <= len(protocol.PrefixAgent) || o.AgentID[:len(protocol.PrefixAgent)] != protocol.PrefixAgent {
		return wrap(ErrInvalidOptions, "AgentID "+o.AgentID+" must start with agent:", nil)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Weights == (Weights{}) {
		o.Weights = DefaultWeights
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.Backoff == nil {
		o.Backoff = DefaultBackoff
	}
	if o.MaxQueued == 0 {
		o.MaxQueued = DefaultMaxQueued
	}
	if o.QueueTimeout == 0 {
		o.QueueTimeout = DefaultQueueTimeout
	}
	if o.MaxInFlight == 0 {
		o.MaxInFlight = DefaultMaxInFlight
	}
	if o.Budget.MaxDepth == 0 {
		o.Budget.MaxDepth = DefaultMaxDepth
	}
	return nil
}
