package langchaingo_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tmc/langchaingo/tools"

	"github.com/clutchprotocol/clutch/adapters/langchaingo"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/router/routertest"
)

// registerResearcher registers a plain Clutch agent with the capability
// skill:research, answering with answer or failing with err.
func registerResearcher(t *testing.T, r *router.Router, answer string, err error) {
	t.Helper()
	card := &protocol.AgentCard{V: protocol.Version, AgentID: "agent:researcher", Capabilities: []protocol.Capability{{ID: "skill:research"}}}
	if e := r.Register(context.Background(), card, func(_ context.Context, t *router.Task) (*router.Result, error) {
		q, e := router.Input[string](t)
		if e != nil {
			return nil, e
		}
		if err != nil {
			return nil, err
		}
		return &router.Result{Payload: answer + " (asked: " + q + ")"}, nil
	}); e != nil {
		t.Fatal(e)
	}
}

// A LangChainGo agent delegates to a Clutch agent through Tool: the call
// is a real subtask of the agent's task (parent_task_id, the same run,
// its own routing decision), recorded as a tool call whose result is the
// subtask's, and the agent goes on with it.
func TestDelegation(t *testing.T) {
	ctx := context.Background()
	r, st := newRouter(t, nil)
	registerResearcher(t, r, "42", nil)
	research, err := langchaingo.Tool(r, "skill:research", nil)
	if err != nil {
		t.Fatal(err)
	}
	if research.Name() != "skill_research" {
		t.Fatalf("tool name %q", research.Name())
	}
	register(t, r, "agent:writer", oneShot(newModel(action("skill_research", "the answer"), final("it is 42")), research), nil)
	h := submit(t, r, "skill:writer", "What is the answer?")
	out, err := h.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := router.ResultAs[string](out); err != nil || res != "it is 42" {
		t.Fatalf("result %q, %v", res, err)
	}
	msgs := events(t, st, h.Request().RunID)
	var sub *protocol.Message
	for _, m := range msgs {
		if m.Type == protocol.TypeTaskRequest && m.ParentTaskID != "" {
			sub = m
		}
	}
	if sub == nil || sub.ParentTaskID != h.TaskID() || sub.RunID != h.Request().RunID {
		t.Fatalf("subtask %+v", sub)
	}
	wantSeq(t, routertest.Sequence(t, msgs, h.TaskID()), []string{
		"task.request", "routing.decision", "task.accept",
		"x.clutch.model_call",
		"tool.call skill_research #1", "tool.result skill_research #1",
		"x.clutch.model_call",
		"task.result",
	})
	wantSeq(t, routertest.Sequence(t, msgs, sub.TaskID), []string{"task.request", "routing.decision", "task.accept", "task.result"})
	if res := payloadOf[toolEvent](t, msgs, protocol.TypeToolResult, 0); string(res.Content) != `"42 (asked: the answer)"` {
		t.Fatalf("tool.result %+v", res)
	}
}

// A subtask that fails is the tool's failure: the agent's task fails with
// TOOL_FAILED whose cause_code is the subtask's code.
func TestDelegationFails(t *testing.T) {
	ctx := context.Background()
	r, _ := newRouter(t, nil)
	registerResearcher(t, r, "", router.Fail(protocol.CodeNotFound, "no such paper", false, nil))
	research, err := langchaingo.Tool(r, "skill:research", &langchaingo.ToolOptions{Name: "research"})
	if err != nil {
		t.Fatal(err)
	}
	register(t, r, "agent:writer", oneShot(newModel(action("research", "paper 7"), final("?")), research), nil)
	_, err = submit(t, r, "skill:writer", "Find paper 7").Wait(ctx)
	if ep := wireError(t, err); ep.Code != protocol.CodeToolFailed || ep.Details["cause_code"] != "NOT_FOUND" || ep.Message != "tool research failed: no such paper" {
		t.Fatalf("error %#v", ep)
	}
}

// Outside a Clutch task the tool submits a root task and waits for it;
// JSONInput sends the input as the payload's JSON.
func TestToolOutsideATask(t *testing.T) {
	ctx := context.Background()
	r, _ := newRouter(t, nil)
	registerResearcher(t, r, "42", nil)
	var research tools.Tool
	research, err := langchaingo.Tool(r, "skill:research", nil)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := research.Call(ctx, "the answer"); err != nil || out != "42 (asked: the answer)" {
		t.Fatalf("%q, %v", out, err)
	}
	js, err := langchaingo.Tool(r, "skill:research", &langchaingo.ToolOptions{JSONInput: true})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := js.Call(ctx, `"in JSON"`); err != nil || out != "42 (asked: in JSON)" {
		t.Fatalf("%q, %v", out, err)
	}
	if _, err := js.Call(ctx, "not JSON"); protocol.CodeOf(err) != protocol.CodeValidation {
		t.Fatalf("not JSON: %v", err)
	}
	for _, c := range []struct {
		r          *router.Router
		capability string
		opts       *langchaingo.ToolOptions
	}{{nil, "skill:x", nil}, {r, "", nil}, {r, "skill:x", &langchaingo.ToolOptions{From: "user"}}} {
		if _, err := langchaingo.Tool(c.r, c.capability, c.opts); !errors.Is(err, langchaingo.ErrOptions) {
			t.Fatalf("%+v: %v", c, err)
		}
	}
}
