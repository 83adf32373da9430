package multiagent

import (
	"context"
	"fmt"
	"github.com/clutchprotocol/clutch/adapters/internal/rawjson"
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/go-json-experiment/json/jsontext"
	"strconv"
	"strings"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
)

// Meta keys the Policy sets on the requests it routes.
const (
	MetaRoutedBy    = "routed_by"    // "multiagent.policy"
	MetaRouteReason = "route_reason" // why this agent: intent and rule
	MetaReflectOf   = "reflect_of"   // the result a reflect task reviews
)

// RoutedBy is the meta.routed_by of requests the Policy routed.
const RoutedBy = "multiagent.policy"

// DefaultReflectBelow is the threshold of docs/protocol.md §12: a result with
// confidence.score below it is reflected on (docs/protocol.md §12, "Routing rules").
const DefaultReflectBelow = 0.5

// ProtocolRoutes returns the routing rules of docs/protocol.md §12 for three agents:
//
//	plan | reflect | finalize         → planner    (GPT-5 in §12: planner/controller)
//	decompose | summarize | analyze   → structurer (Claude: structure and clarity)
//	execute | tool.call | retrieve    → executor   (Gemini: fast tools, search, code)
//
// The tenth intent, route, has no rule: it goes to the fallback.
func ProtocolRoutes(planner, structurer, executor string) map[string]string {
	return map[string]string{
		Plan: planner, Reflect: planner, Finalize: planner,
		Decompose: structurer, Summarize: structurer, Analyze: structurer,
		Execute: executor, ToolCall: executor, Retrieve: executor,
	}
}

// PolicyOptions configures a Policy.
type PolicyOptions struct {
	// Routes maps intents to agent ids ("plan" → "agent:gpt5"); see
	// ProtocolRoutes.
	Routes map[string]string
	// Fallback takes intents without a route, as the mux of §12 sends
	// them to its reflect agent; Routes["reflect"] when "". With neither,
	// such requests are left to capability routing.
	Fallback string
	// ReflectBelow is the confidence under which a result triggers a
	// reflect task; DefaultReflectBelow when 0, never when negative.
	ReflectBelow float64
	// Reflectors are the agents that may reflect, in order of preference;
	// the first that is not the result's author gets the task (docs/protocol.md §12:
	// "a different model"). Nil: Routes["reflect"], then the other routed
	// agents in the order of the intent table.
	Reflectors []string
	// AgentID is the sender of reflect tasks; router.DefaultAgentID when "".
	AgentID string
	// IDs stamps reflect tasks; protocol.DefaultIDs() when nil. Pass the
	// router's.
	IDs *protocol.IDs
}

// Policy is the routing policy of docs/protocol.md §12 over a router: it sends each
// request to the agent configured for its intent, and answers results of
// low confidence with a reflect task to a different agent. It uses only
// the router's public API: it names the agent as the request's explicit
// recipient (the router still applies its hard filters and records the
// decision), and keeps its own reason in the request's meta. A Policy is
// safe for concurrent use.
type Policy struct {
	r          *router.Router
	o          PolicyOptions
	reflectors []string
}

// NewPolicy returns a policy over r; opts may be nil (then every request
// goes to capability routing and nothing is reflected on, as there are no
// agents to send them to).
func NewPolicy(r *router.Router, opts *PolicyOptions) (*Policy, error) {
	if r == nil {
		return nil, coded.Wrap(ErrInvalidPolicy, "nil router", nil)
	}
	var o PolicyOptions
	if opts != nil {
		o = *opts
	}
	routes := make(map[string]string, len(o.Routes))
	for intent, agent := range o.Routes {
		if intent == "" || !strings.HasPrefix(agent, protocol.PrefixAgent) || len(agent) == len(protocol.PrefixAgent) {
			return nil, coded.Wrap(ErrInvalidPolicy, fmt.Sprintf("route %q → %q: want an intent and an agent:<id>", intent, agent), nil)
		}
		routes[intent] = agent
	}
	o.Routes = routes
	if o.Fallback == "" {
		o.Fallback = routes[Reflect]
	}
	if o.Fallback != "" && !strings.HasPrefix(o.Fallback, protocol.PrefixAgent) {
		return nil, coded.Wrap(ErrInvalidPolicy, fmt.Sprintf("fallback %q is not an agent:<id>", o.Fallback), nil)
	}
	if o.ReflectBelow == 0 {
		o.ReflectBelow = DefaultReflectBelow
	}
	if o.AgentID == "" {
		o.AgentID = router.DefaultAgentID
	}
	if o.IDs == nil {
		o.IDs = protocol.DefaultIDs()
	}
	p := &Policy{r: r, o: o}
	add := func(a string) {
		if a != "" && !contains(p.reflectors, a) {
			p.reflectors = append(p.reflectors, a)
		}
	}
	if o.Reflectors != nil {
		for _, a := range o.Reflectors {
			add(a)
		}
	} else {
		add(routes[Reflect])
		for _, i := range intentTable {
			add(routes[i.Intent])
		}
		add(o.Fallback)
	}
	return p, nil
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// IntentOf returns the intent of a message: meta.intent, else the intent
// of its payload_type ("multiagent.plan.v1"), else "".
func IntentOf(m *protocol.Message) string {
	if m == nil {
		return ""
	}
	if s := rawjson.MetaString(m, MetaIntent); s != "" {
		return s
	}
	return intentOfPayloadType(m.PayloadType)
}

// Route returns the agent the policy sends a request of m's intent to,
// and why; ok is false when neither a route nor the fallback applies.
func (p *Policy) Route(m *protocol.Message) (agent, reason string, ok bool) {
	intent := IntentOf(m)
	if intent == "" {
		return "", "", false
	}
	if a := p.o.Routes[intent]; a != "" {
		return a, "multiagent-1.0 routing rule: intent " + intent + " → " + a, true
	}
	if p.o.Fallback != "" {
		return p.o.Fallback, "multiagent-1.0 routing rule: intent " + intent + " has no route, fallback " + p.o.Fallback, true
	}
	return "", "", false
}

// Apply sets the recipient of a task.request to the agent of its intent,
// when the request names no agent itself (an empty to, the router, or a
// group): the router then records the choice as an explicit recipient.
// The reason goes to meta.route_reason. It reports whether it changed m.
func (p *Policy) Apply(m *protocol.Message) bool {
	if m == nil || m.Type != protocol.TypeTaskRequest {
		return false
	}
	for _, t := range m.To {
		if strings.HasPrefix(t.AgentID, protocol.PrefixAgent) && t.AgentID != p.o.AgentID {
			return false // the sender chose an agent: an explicit "to" wins
		}
	}
	agent, reason, ok := p.Route(m)
	if !ok {
		return false
	}
	m.To = []protocol.Participant{{AgentID: agent}}
	if m.Meta == nil {
		m.Meta = map[string]any{}
	}
	m.Meta[MetaRoutedBy] = RoutedBy
	m.Meta[MetaRouteReason] = reason
	m.Reset() // fields changed: encode them, not remembered bytes
	return true
}

// Submit applies the policy to req, an envelope from outside (a
// translated multiagent-1.0 message), checks it against the router's
// signature policy (router.Router.Verify: a message claiming a keyed agent
// as its sender must be signed by it) and submits it to the router.
func (p *Policy) Submit(ctx context.Context, req *protocol.Message) (*router.Handle, error) {
	p.Apply(req)
	if err := p.r.Verify(req); err != nil {
		return nil, err
	}
	return p.r.Submit(ctx, req)
}

// ScoreOf returns the confidence score of a message: its payload's
// confidence.score, else meta.confidence; ok is false when it has none.
func ScoreOf(m *protocol.Message) (score float64, ok bool) {
	if rawjson.Kind(m.Payload) == '{' {
		if c := member0(m.Payload, "confidence"); rawjson.Kind(c) == '{' {
			if s := member0(c, "score"); rawjson.Kind(s) == '0' {
				f, err := strconv.ParseFloat(string(s), 64)
				return f, err == nil
			}
		}
	}
	return rawjson.Number(m.Meta[MetaConfidence])
}

// ReflectOn submits a reflect task for a result of low confidence (docs/protocol.md
// §12: "If confidence.score < 0.5 → auto-route to reflect (different
// model) with parents=[msg_id]"): a task.request with intent reflect, to
// the first reflector that is not the result's author, in the result's
// run and thread, under the result's task, with meta.parents = [the
// result's id]. Its id is the result's with "/reflect" appended, so
// reflecting twice on one result runs one task. It returns nil, nil when no reflection is
// due: not a task.result or tool.result, no score, a score at or above the
// threshold, or a result of a reflect task (a reflection is not reflected
// on again).
func (p *Policy) ReflectOn(ctx context.Context, result *protocol.Message) (*router.Handle, error) {
	if p.o.ReflectBelow < 0 || result == nil {
		return nil, nil
	}
	if result.Type != protocol.TypeTaskResult && result.Type != protocol.TypeToolResult {
		return nil, nil
	}
	score, ok := ScoreOf(result)
	if !ok || score >= p.o.ReflectBelow {
		return nil, nil
	}
	if strings.HasSuffix(result.TaskID, reflectSuffix) || IntentOf(result) == Reflect {
		return nil, nil // a reflection is not reflected on
	}
	author := result.From.AgentID
	reflector := ""
	for _, a := range p.reflectors {
		if a != author {
			reflector = a
			break
		}
	}
	if reflector == "" {
		return nil, coded.Wrap(ErrNoRoute, fmt.Sprintf("no reflector other than %s", author), nil)
	}
	return p.r.Submit(ctx, p.reflectRequest(result, score, reflector))
}

// reflectSuffix ends the ids of reflect requests and their tasks.
const reflectSuffix = "/reflect"

func (p *Policy) reflectRequest(result *protocol.Message, score float64, reflector string) *protocol.Message {
	id := result.ID + reflectSuffix
	task := "the result of task " + result.TaskID
	if pl, err := PayloadOf(result); err == nil && pl.Task != "" {
		task = pl.Task
	}
	reason := fmt.Sprintf("multiagent-1.0 routing rule: confidence %g < %g → reflect by %s, not the author %s", score, p.o.ReflectBelow, reflector, result.From.AgentID)
	req := &protocol.Message{
		V: protocol.Version, ID: id, TS: protocol.Timestamp(p.o.IDs.Now()),
		ThreadID: result.ThreadID, RunID: result.RunID, TaskID: protocol.PrefixTask + id, ParentTaskID: result.TaskID,
		From: protocol.Participant{AgentID: p.o.AgentID, Role: RoleSystem}, To: []protocol.Participant{{AgentID: reflector}},
		Type: protocol.TypeTaskRequest, Domain: "review", PayloadType: PayloadType(Reflect), Attempt: 1,
		Meta: map[string]any{MetaIntent: Reflect, MetaParents: []any{result.ID}, MetaInReplyTo: result.ID,
			MetaReflectOf: result.ID, MetaRoutedBy: RoutedBy, MetaRouteReason: reason},
	}
	taskJSON, _ := jsontext.AppendQuote(nil, "Reflect on: "+task)
	ctxJSON, _ := jsontext.AppendQuote(nil, fmt.Sprintf("confidence %g from %s", score, result.From.AgentID))
	data := []byte(result.Payload)
	if len(data) == 0 {
		data = []byte("null")
	}
	req.Payload = rawjson.Object([]rawjson.Member{
		rawjson.Field("task", taskJSON),
		rawjson.Field("inputs", rawjson.Object([]rawjson.Member{rawjson.Field("context", ctxJSON)})),
		rawjson.Field("content", rawjson.Object([]rawjson.Member{rawjson.Field("type", quote(ContentJSON)), rawjson.Field("data", rawjson.Compact(data))})),
	})
	return req
}

// Watch follows st from the event after seq afterSeq and calls ReflectOn
// for every task.result and tool.result: the automatic reflect rule, for
// results of any origin (router handlers, inbound envelopes the host
// appends). Pass st.LastSeq to react to new results only, or 0 to go over
// the whole log after a restart: reflect tasks have ids derived from their
// results, so the router runs each once. It returns when ctx ends (nil)
// or on the first error of the store or of a submission.
func (p *Policy) Watch(ctx context.Context, st store.Store, afterSeq uint64) error {
	for ev, err := range st.Follow(ctx, store.Query{AfterSeq: afterSeq}) {
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		m, err := ev.Message()
		if err != nil {
			continue // not ours to judge
		}
		if m.Type != protocol.TypeTaskResult && m.Type != protocol.TypeToolResult {
			continue
		}
		if _, err := p.ReflectOn(ctx, m); err != nil && ctx.Err() == nil {
			return err
		}
	}
	return nil
}
