package multiagent_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sync"
	"testing"

	"github.com/clutchprotocol/clutch/adapters/multiagent"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/router/routertest"
	"github.com/clutchprotocol/clutch/store"
)

const (
	gpt5   = "agent:gpt5"
	claude = "agent:claude"
	gemini = "agent:gemini"
)

// team registers the three models of docs/protocol.md §12 as agents. Each answers with a
// multiagent payload whose confidence is scores[agent] (0.9 by default)
// and records the intents it was asked for.
type team struct {
	mu     sync.Mutex
	asked  map[string][]string
	scores map[string]float64
}

func newTeam(t *testing.T, env *routertest.Env) *team {
	tm := &team{asked: map[string][]string{}, scores: map[string]float64{}}
	for _, id := range []string{gpt5, claude, gemini} {
		env.Agent(id, []string{"model:" + id[len("agent:"):]}, func(ctx context.Context, task *router.Task) (*router.Result, error) {
			intent := multiagent.IntentOf(task.Request())
			tm.mu.Lock()
			tm.asked[id] = append(tm.asked[id], intent)
			score, ok := tm.scores[id]
			tm.mu.Unlock()
			if !ok {
				score = 0.9
			}
			if intent == multiagent.Reflect {
				score = 0.2 // a reflection is not reflected on again
			}
			return &router.Result{PayloadType: multiagent.PayloadType(intent), Payload: multiagent.Payload{
				Task:       "answer to " + intent,
				Content:    &multiagent.Content{Type: "text"},
				Confidence: &multiagent.Confidence{Score: score},
			}}, nil
		})
	}
	if err := multiagent.RegisterSchemas(env.Schemas); err != nil {
		t.Fatal(err)
	}
	return tm
}

func newPolicy(t *testing.T, env *routertest.Env) *multiagent.Policy {
	p, err := multiagent.NewPolicy(env.Router, &multiagent.PolicyOptions{Routes: multiagent.ProtocolRoutes(gpt5, claude, gemini), IDs: env.IDs})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func userRequest(intent string) []byte {
	return env("user", intent, `{"type":"text","text":"please"}`)
}

// Every intent goes to the agent of the rules of §12; route, which has no
// rule, to the fallback (the reflect agent, as in the mux of §12).
func TestPolicyRoutesEveryIntent(t *testing.T) {
	e := routertest.New(t, nil)
	newTeam(t, e)
	p := newPolicy(t, e)
	a := multiagent.New(nil)
	want := map[string]string{"plan": gpt5, "reflect": gpt5, "finalize": gpt5, "route": gpt5,
		"decompose": claude, "summarize": claude, "analyze": claude,
		"execute": gemini, "retrieve": gemini}
	for intent, agent := range want {
		req := inbound(t, a, userRequest(intent))[0]
		h, err := p.Submit(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Wait(h); err != nil {
			t.Errorf("%s: %v", intent, err)
		}
		e.AssertRoutedTo(req.TaskID, agent)
		stored := e.Events(store.Query{TaskID: req.TaskID, TypePrefix: "task.request"})[0]
		if stored.Meta[multiagent.MetaRoutedBy] != multiagent.RoutedBy || stored.Meta[multiagent.MetaRouteReason] == nil {
			t.Errorf("%s: meta %v", intent, stored.Meta)
		}
	}
	// tool.call: a user's tool call is a tool.call message, which the
	// router does not run; a proposed one is a task.request.
	m := &protocol.Message{Type: protocol.TypeTaskRequest, Meta: map[string]any{"intent": "tool.call"}}
	if agent, _, ok := p.Route(m); !ok || agent != gemini {
		t.Errorf("tool.call → %s", agent)
	}
	// An explicit recipient wins over the policy.
	req := inbound(t, a, userRequest("plan"))[0]
	req.To = []protocol.Participant{{AgentID: claude}}
	if p.Apply(req) || req.To[0].AgentID != claude {
		t.Error("policy overrode an explicit recipient")
	}
}

// The planner's next actions are proposed requests, each routed by its
// intent (fixture 01: decompose → Claude, retrieve → Gemini).
func TestPolicyRoutesNextActions(t *testing.T) {
	e := routertest.New(t, nil)
	tm := newTeam(t, e)
	p := newPolicy(t, e)
	msgs := inbound(t, multiagent.New(nil), examples(t)[0].Raw)
	if len(msgs) != 3 {
		t.Fatalf("%d messages", len(msgs))
	}
	for _, r := range msgs[1:] {
		h, err := p.Submit(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Wait(h); err != nil {
			t.Fatal(err)
		}
	}
	e.AssertRoutedTo(msgs[1].TaskID, claude)
	e.AssertRoutedTo(msgs[2].TaskID, gemini)
	if tm.asked[claude][0] != "decompose" || tm.asked[gemini][0] != "retrieve" {
		t.Errorf("asked %v", tm.asked)
	}
}

// A result below 0.5 triggers a reflect task to a different agent with
// parents = [the result's id]; the reflection itself is not reflected on.
func TestPolicyReflectsOnLowConfidence(t *testing.T) {
	e := routertest.New(t, nil)
	tm := newTeam(t, e)
	tm.scores[claude] = 0.3
	tm.scores[gpt5] = 0.4
	p := newPolicy(t, e)
	ctx, cancel := context.WithCancel(context.Background())
	watched := make(chan error, 1)
	from, err := e.Store.LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	go func() { watched <- p.Watch(ctx, e.Store, from) }()
	defer func() {
		cancel()
		if err := <-watched; err != nil {
			t.Errorf("Watch: %v", err)
		}
	}()
	a := multiagent.New(nil)
	req := inbound(t, a, userRequest("decompose"))[0]
	out, err := e.Run(applied(p, req))
	if err != nil {
		t.Fatal(err)
	}
	e.AssertRoutedTo(req.TaskID, claude)
	reflect := waitForReflect(t, e, out.Message.ID)
	if reflect.ParentTaskID != req.TaskID || reflect.RunID != req.RunID || reflect.To[0].AgentID != gpt5 {
		t.Errorf("reflect task: %+v", reflect)
	}
	if ps, _ := reflect.Meta[multiagent.MetaParents].([]any); len(ps) != 1 || ps[0] != out.Message.ID {
		t.Errorf("parents %v", reflect.Meta[multiagent.MetaParents])
	}
	waitForEnd(t, e, reflect.TaskID)
	e.AssertRoutedTo(reflect.TaskID, gpt5)

	// The planner's own low-confidence plan is reflected on by another
	// model than the planner (the reflect route is the planner itself).
	plan := inbound(t, a, userRequest("plan"))[0]
	out, err = e.Run(applied(p, plan))
	if err != nil {
		t.Fatal(err)
	}
	reflect = waitForReflect(t, e, out.Message.ID)
	// gpt5 reflected with 0.2, and Watch handles events in order: having
	// reflected on the plan, it has passed the reflection's result without
	// reflecting on it.
	if n := countReflects(e); n != 2 {
		t.Errorf("%d reflect tasks, want 2 (no reflection of a reflection)", n)
	}
	if reflect.To[0].AgentID != claude {
		t.Errorf("reflect of gpt5's plan went to %s", reflect.To[0].AgentID)
	}
	waitForEnd(t, e, reflect.TaskID)
	e.AssertRoutedTo(reflect.TaskID, claude)
}

func TestReflectOn(t *testing.T) {
	e := routertest.New(t, nil)
	tm := newTeam(t, e)
	tm.scores[gemini] = 0.1
	p := newPolicy(t, e)
	a := multiagent.New(nil)
	ok, err := e.Run(applied(p, inbound(t, a, userRequest("analyze"))[0])) // claude, 0.9
	if err != nil {
		t.Fatal(err)
	}
	if h, err := p.ReflectOn(context.Background(), ok.Message); h != nil || err != nil {
		t.Errorf("confident result reflected: %v %v", h, err)
	}
	low, err := e.Run(applied(p, inbound(t, a, userRequest("execute"))[0])) // gemini, 0.1
	if err != nil {
		t.Fatal(err)
	}
	h1, err := p.ReflectOn(context.Background(), low.Message)
	if err != nil || h1 == nil {
		t.Fatalf("ReflectOn: %v %v", h1, err)
	}
	h2, err := p.ReflectOn(context.Background(), low.Message)
	if err != nil || h2.TaskID() != h1.TaskID() {
		t.Errorf("second ReflectOn started another task: %v %v", h2, err)
	}
	if _, err := e.Wait(h1); err != nil {
		t.Fatal(err)
	}
	e.AssertRoutedTo(h1.TaskID(), gpt5)
	// No score, not a result: nothing to do.
	noScore := protocol.NewMessage(protocol.TypeTaskResult, "agent:x")
	_ = noScore.SetPayload(map[string]any{"ok": true})
	if h, err := p.ReflectOn(context.Background(), noScore); h != nil || err != nil {
		t.Errorf("no score: %v %v", h, err)
	}
	// Every reflector is the author: an error, not a loop.
	solo, err := multiagent.NewPolicy(e.Router, &multiagent.PolicyOptions{Routes: map[string]string{"reflect": gemini}, IDs: e.IDs})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := solo.ReflectOn(context.Background(), low.Message); !errors.Is(err, multiagent.ErrNoRoute) {
		t.Errorf("solo reflector: %v", err)
	}
	if _, err := multiagent.NewPolicy(e.Router, &multiagent.PolicyOptions{Routes: map[string]string{"plan": "gpt5"}}); !errors.Is(err, multiagent.ErrInvalidPolicy) {
		t.Errorf("bad route: %v", err)
	}
}

func applied(p *multiagent.Policy, m *protocol.Message) *protocol.Message {
	p.Apply(m)
	return m
}

func waitForReflect(t *testing.T, e *routertest.Env, resultID string) *protocol.Message {
	t.Helper()
	return e.Await(store.Query{TypePrefix: "task.request"}, func(m *protocol.Message) bool { return m.Meta[multiagent.MetaReflectOf] == resultID })
}

func waitForEnd(t *testing.T, e *routertest.Env, taskID string) {
	t.Helper()
	e.Await(store.Query{TaskID: taskID}, func(m *protocol.Message) bool { return m.Type.Terminal() })
}

func countReflects(e *routertest.Env) int {
	n := 0
	for _, m := range e.Events(store.Query{TypePrefix: "task.request"}) {
		if m.Meta[multiagent.MetaReflectOf] != nil {
			n++
		}
	}
	return n
}

// A translated message comes from outside: Policy.Submit refuses one that
// claims a keyed agent as its sender (multiagent-1.0 carries no Clutch
// signature), and stores nothing.
func TestPolicySubmitVerifiesSignatures(t *testing.T) {
	a := multiagent.New(nil)
	req := inbound(t, a, userRequest("decompose"))[0]
	pub, _, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	e := routertest.New(t, &routertest.Options{Registry: registry.Options{
		Keys: map[string][]protocol.CardKey{req.From.AgentID: {protocol.NewCardKey("key_1", pub)}},
	}})
	newTeam(t, e)
	p := newPolicy(t, e)
	before, err := e.Store.LastSeq(context.Background())
	require.NoError(t, err)
	_, err = p.Submit(context.Background(), req)
	require.ErrorIs(t, err, registry.ErrSignature)
	after, err := e.Store.LastSeq(context.Background())
	require.NoError(t, err)
	assert.Equal(t, before, after, "a refused message leaves nothing in the store")

	// The same message from a sender without keys goes through.
	ok := inbound(t, a, env("user", "decompose", `{"type":"text","text":"please"}`))[0]
	ok.From.AgentID = "agent:unkeyed"
	ok.Reset()
	h, err := p.Submit(context.Background(), ok)
	require.NoError(t, err)
	_, err = e.Wait(h)
	require.NoError(t, err)
}
