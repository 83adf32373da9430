package router

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// stepLog is an Observer that records every call as a line and gives
// attempt n the trace {trace_id: "t", span_id: "s<n>"}.
type stepLog struct {
	mu    sync.Mutex
	lines []string
}

type ctxAttemptKey struct{}

func (l *stepLog) add(format string, args ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

func (l *stepLog) StartAttempt(ctx context.Context, req *protocol.Message, n int) (context.Context, *protocol.Trace) {
	prev, _ := ctx.Value(ctxAttemptKey{}).(int)
	l.add("start %d (previous %d)", n, prev)
	return context.WithValue(ctx, ctxAttemptKey{}, n), &protocol.Trace{TraceID: "t", SpanID: fmt.Sprintf("s%d", n)}
}

func (l *stepLog) Observe(ctx context.Context, s Step) {
	n, _ := ctx.Value(ctxAttemptKey{}).(int)
	line := fmt.Sprintf("%d/%d", s.Kind, n)
	if s.Event != nil {
		line += " " + string(s.Event.Type)
	}
	if s.Err != nil {
		line += " " + string(s.Err.Code)
	}
	if s.Agent != nil {
		line += " " + s.Agent.AgentID
	}
	if s.Decision != nil {
		line += " decision:" + s.Decision.Selected
	}
	l.add("%s", line)
}

func (l *stepLog) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// TestObserver: the observer sees each attempt's steps in order, its
// context reaches the handler, and its trace is on every event the router
// stores for the attempt and on delegated requests.
func TestObserver(t *testing.T) {
	log := &stepLog{}
	e := newEnv(t, &Options{Observer: log})
	calls := 0
	e.register(card("agent:ken", skill("skill:research")), func(ctx context.Context, t *Task) (*Result, error) {
		calls++
		if calls == 1 {
			return nil, Fail(protocol.CodeToolUnavailable, "down", true, nil)
		}
		if n, _ := ctx.Value(ctxAttemptKey{}).(int); n != 2 {
			return nil, fmt.Errorf("the handler's context has attempt %d", n)
		}
		if _, err := t.Emit(ctx, protocol.TypeToolCall, "", map[string]any{"tool": "mcp:x", "name": "y"}); err != nil {
			return nil, err
		}
		if err := t.Progress(ctx, map[string]any{"step": 1}); err != nil {
			return nil, err
		}
		sub, err := t.NewSubtask("", map[string]any{})
		if err != nil {
			return nil, err
		}
		if sub.Trace == nil || sub.Trace.SpanID != "s2" {
			return nil, fmt.Errorf("the subtask's request carries %+v", sub.Trace)
		}
		if t.Trace().SpanID != "s2" {
			return nil, fmt.Errorf("Task.Trace is %+v", t.Trace())
		}
		return summary("x"), nil
	})
	h := e.submit(e.request("skill:research"))
	_, err := e.wait(h)
	require.NoError(t, err)
	routed, retry, event, end := StepRouted, StepRetry, StepEvent, StepEnd
	assert.Equal(t, strings.Join([]string{
		"start 1 (previous 0)",
		fmt.Sprintf("%d/1 routing.decision agent:ken decision:agent:ken", routed),
		fmt.Sprintf("%d/1 task.error TOOL_UNAVAILABLE agent:ken", retry),
		"start 2 (previous 1)",
		fmt.Sprintf("%d/2 routing.decision agent:ken decision:agent:ken", routed),
		fmt.Sprintf("%d/2 tool.call agent:ken", event),
		fmt.Sprintf("%d/2 task.progress agent:ken", event),
		fmt.Sprintf("%d/2 task.result agent:ken", end),
	}, "\n"), log.all())
	for ev, err := range e.st.Read(context.Background(), store.Query{TaskID: h.TaskID()}) {
		require.NoError(t, err)
		m, err := ev.Message()
		require.NoError(t, err)
		if m.Type == protocol.TypeTaskRequest {
			assert.Nil(t, m.Trace, "the request keeps what its sender gave it")
			continue
		}
		require.NotNil(t, m.Trace, m.Type)
		assert.Equal(t, fmt.Sprintf("s%d", m.Attempt), m.Trace.SpanID, "%s of attempt %d", m.Type, m.Attempt)
	}

	// No match: the attempt is unrouted, then the task ends.
	log2 := &stepLog{}
	e2 := newEnv(t, &Options{Observer: log2})
	_, err = e2.wait(e2.submit(e2.request("skill:none")))
	require.ErrorIs(t, err, protocol.CodeNoMatch)
	assert.Equal(t, strings.Join([]string{
		"start 1 (previous 0)",
		fmt.Sprintf("%d/1 routing.failure NO_MATCH", StepUnrouted),
		fmt.Sprintf("%d/1 task.error NO_MATCH", StepEnd),
	}, "\n"), log2.all())
}
