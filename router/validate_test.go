package router

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
)

// eventCount is the number of events in the store.
func (e *env) eventCount() int {
	e.t.Helper()
	n := 0
	for _, err := range e.st.Read(context.Background(), store.Query{}) {
		require.NoError(e.t, err)
		n++
	}
	return n
}

func TestSubmitRefusesInvalidPayload(t *testing.T) {
	e := newEnv(t, nil)
	var calls atomic.Int32
	e.register(card("agent:ken", skill("skill:research")), func(ctx context.Context, t *Task) (*Result, error) {
		calls.Add(1)
		return summary("x"), nil
	})
	before := e.eventCount()

	// research.query.v1 requires a string "query".
	bad, err := e.r.NewRequest("agent:ui", "research.query.v1", map[string]any{"query": 42})
	require.NoError(t, err)
	bad.Requires = []string{"skill:research"}
	h, err := e.r.Submit(context.Background(), bad)
	require.Error(t, err)
	assert.Nil(t, h)
	assert.ErrorIs(t, err, ErrInvalidPayload)
	assert.ErrorIs(t, err, protocol.CodeValidation)
	assert.Equal(t, protocol.CodeValidation, protocol.CodeOf(err))
	var ve *schema.ValidationError
	require.True(t, errors.As(err, &ve), "%v does not wrap a *schema.ValidationError", err)
	assert.NotEmpty(t, ve.Violations)

	// An unknown payload type is refused the same way.
	unknown, err := e.r.NewRequest("agent:ui", "acme.unknown.v1", map[string]any{"a": 1})
	require.NoError(t, err)
	unknown.Requires = []string{"skill:research"}
	_, err = e.r.Submit(context.Background(), unknown)
	assert.ErrorIs(t, err, ErrInvalidPayload)
	assert.ErrorIs(t, err, protocol.CodeValidation)

	// Nothing stored, nothing ran.
	assert.Equal(t, before, e.eventCount())
	assert.Empty(t, e.types(bad.TaskID))
	assert.Zero(t, calls.Load())

	// A valid request still runs.
	_, err = e.wait(e.submit(e.request("skill:research")))
	require.NoError(t, err)
	assert.EqualValues(t, 1, calls.Load())
}

func TestSubmitValidatesAgainstTheRunsWorkflow(t *testing.T) {
	sch, err := schema.New(nil)
	require.NoError(t, err)
	binder := schema.NewBinder(sch)
	e := newEnv(t, &Options{Validator: binder})
	wf, err := e.sch.LoadWorkflow([]byte(`
workflow: strict-research
steps:
  - id: ask
    expects:
      type: task.request
      payload_type: research.query.v1
      required: [query, max_sources]
`))
	require.NoError(t, err)
	e.register(card("agent:ken", skill("skill:research")), ok("x"))

	req := e.request("skill:research") // no max_sources
	require.NoError(t, binder.Bind(req.RunID, wf))
	defer binder.Unbind(req.RunID)
	_, err = e.r.Submit(context.Background(), req)
	require.ErrorIs(t, err, ErrInvalidPayload)
	var ve *schema.ValidationError
	require.True(t, errors.As(err, &ve), "%v", err)
	assert.Equal(t, "strict-research", ve.Workflow)
	assert.Empty(t, e.types(req.TaskID))

	// The same request in an unbound run meets the registry's schema.
	_, err = e.wait(e.submit(e.request("skill:research")))
	require.NoError(t, err)
}

func TestDelegateRefusesInvalidSubtask(t *testing.T) {
	e := newEnv(t, nil)
	var subErr error
	var subID string
	e.register(card("agent:lead", skill("skill:plan")), func(ctx context.Context, t *Task) (*Result, error) {
		sub, err := t.NewSubtask("research.query.v1", map[string]any{"query": []int{1}})
		if err != nil {
			return nil, err
		}
		subID = sub.TaskID
		sub.Requires = []string{"skill:research"}
		_, subErr = t.Delegate(ctx, sub)
		return summary("x"), nil
	})
	e.register(card("agent:ken", skill("skill:research")), ok("x"))
	_, err := e.wait(e.submit(e.request("skill:plan")))
	require.NoError(t, err)
	assert.ErrorIs(t, subErr, ErrInvalidPayload)
	assert.Empty(t, e.types(subID))
}

func TestNewRequestRefusesMalformedPayloadType(t *testing.T) {
	e := newEnv(t, nil)
	for _, pt := range []string{"research", "research.query", "research.query.vx", " research.query.v1"} {
		_, err := e.r.NewRequest("agent:ui", pt, map[string]any{})
		assert.ErrorIs(t, err, ErrInvalidRequest, pt)
		assert.Equal(t, protocol.CodeInvalidField, protocol.CodeOf(err), pt)
	}
	m, err := e.r.NewRequest("agent:ui", "", map[string]any{"free": "form"})
	require.NoError(t, err, "an untyped request")
	assert.Empty(t, m.PayloadType)

	var subErr error
	e.register(card("agent:lead", skill("skill:plan")), func(ctx context.Context, t *Task) (*Result, error) {
		_, subErr = t.NewSubtask("not a type", nil)
		return summary("x"), nil
	})
	_, err = e.wait(e.submit(e.request("skill:plan")))
	require.NoError(t, err)
	assert.ErrorIs(t, subErr, ErrInvalidRequest)
}
