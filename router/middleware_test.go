package router

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/protocol"
)

// recorder is a middleware that appends "<name> in" and "<name> out"
// around the handler it wraps.
func recorder(name string, mu *sync.Mutex, log *[]string) Middleware {
	return func(next Handler) Handler {
		return func(ctx context.Context, t *Task) (*Result, error) {
			mu.Lock()
			*log = append(*log, name+" in")
			mu.Unlock()
			res, err := next(ctx, t)
			mu.Lock()
			*log = append(*log, name+" out")
			mu.Unlock()
			return res, err
		}
	}
}

func TestMiddlewareOrder(t *testing.T) {
	var mu sync.Mutex
	var log []string
	e := newEnv(t, &Options{Middleware: []Middleware{recorder("outer", &mu, &log), recorder("inner", &mu, &log)}})
	e.register(card("agent:ken", skill("skill:research")), func(ctx context.Context, t *Task) (*Result, error) {
		mu.Lock()
		log = append(log, "handler")
		mu.Unlock()
		return summary("x"), nil
	})
	// Attach wraps too.
	require.NoError(t, e.r.Attach("agent:ken", func(ctx context.Context, t *Task) (*Result, error) {
		mu.Lock()
		log = append(log, "attached")
		mu.Unlock()
		return summary("x"), nil
	}))
	_, err := e.wait(e.submit(e.request("skill:research")))
	require.NoError(t, err)
	assert.Equal(t, []string{"outer in", "inner in", "attached", "inner out", "outer out"}, log)
}

func TestMiddlewareShortCircuit(t *testing.T) {
	called := false
	deny := func(next Handler) Handler {
		return func(ctx context.Context, t *Task) (*Result, error) {
			return nil, Fail(protocol.CodePolicyDenied, "denied by policy", false, nil)
		}
	}
	e := newEnv(t, &Options{Middleware: []Middleware{deny}})
	e.register(card("agent:ken", skill("skill:research")), func(ctx context.Context, t *Task) (*Result, error) {
		called = true
		return summary("x"), nil
	})
	h := e.submit(e.request("skill:research"))
	out, err := e.wait(h)
	require.ErrorIs(t, err, protocol.CodePolicyDenied)
	assert.Equal(t, protocol.TypeTaskError, out.Type)
	assert.False(t, called, "the handler ran behind a middleware that refused the task")
	ep := payloadOf[protocol.ErrorPayload](t, e, h.TaskID(), "task.error")
	assert.Equal(t, protocol.CodePolicyDenied, ep.Code)
	assert.Equal(t, "denied by policy", ep.Message)
	assert.Equal(t, []string{"task.request", "routing.decision", "task.accept", "task.error"}, e.types(h.TaskID()))
}

func TestMiddlewareSeesTask(t *testing.T) {
	type seen struct{ id, run, agent, payloadType string }
	got := make(chan seen, 1)
	spy := func(next Handler) Handler {
		return func(ctx context.Context, t *Task) (*Result, error) {
			got <- seen{t.ID(), t.RunID(), t.Agent(), t.Request().PayloadType}
			return next(ctx, t)
		}
	}
	e := newEnv(t, &Options{Middleware: []Middleware{spy}})
	e.register(card("agent:ken", skill("skill:research")), ok("x"))
	req := e.request("skill:research")
	_, err := e.wait(e.submit(req))
	require.NoError(t, err)
	assert.Equal(t, seen{req.TaskID, req.RunID, "agent:ken", "research.query.v1"}, <-got)
}

func TestMiddlewareNilRefused(t *testing.T) {
	e := newEnv(t, nil)
	_, err := New(e.st, e.reg, &Options{Validator: e.sch, Middleware: []Middleware{nil}})
	require.ErrorIs(t, err, ErrInvalidOptions)
	assert.True(t, strings.Contains(err.Error(), "middleware"), err.Error())
}
