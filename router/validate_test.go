package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
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

// countingValidator counts the calls per message id and checks that each
// message's envelope was validated and encoded before its payload.
type countingValidator struct {
	next  Validator
	mu    sync.Mutex
	calls map[string]int
	raw   bool // every message seen had its bytes
}

func (v *countingValidator) ValidateMessage(m *protocol.Message) error {
	v.mu.Lock()
	v.calls[m.ID]++
	v.raw = v.raw && m.Raw() != nil
	v.mu.Unlock()
	return v.next.ValidateMessage(m)
}

// TestOneValidationPerMessage: the router validates each request and each
// result once, after its envelope (which has bytes by then).
func TestOneValidationPerMessage(t *testing.T) {
	sch, err := schema.New(nil)
	require.NoError(t, err)
	v := &countingValidator{next: sch, calls: map[string]int{}, raw: true}
	e := newEnv(t, &Options{Validator: v})
	e.register(card("agent:lead", skill("skill:plan")), func(ctx context.Context, t *Task) (*Result, error) {
		sub, err := t.NewSubtask("research.query.v1", schema.ResearchQuery{Query: "sub"})
		if err != nil {
			return nil, err
		}
		sub.Requires = []string{"skill:research"}
		if _, err := t.Delegate(ctx, sub); err != nil {
			return nil, err
		}
		return summary("x"), nil
	})
	e.register(card("agent:ken", skill("skill:research")), ok("x"))
	for range 3 {
		_, err := e.wait(e.submit(e.request("skill:research")))
		require.NoError(t, err)
	}
	_, err = e.wait(e.submit(e.request("skill:plan")))
	require.NoError(t, err)

	// Every stored request and result was validated once; nothing else was.
	want := map[string]int{}
	for ev, err := range e.st.Read(context.Background(), store.Query{}) {
		require.NoError(t, err)
		m, err := ev.Message()
		require.NoError(t, err)
		if m.Type == protocol.TypeTaskRequest || m.Type == protocol.TypeTaskResult {
			want[m.ID] = 1
		}
	}
	assert.Len(t, want, 10) // 3 + 2 (the lead's task and its subtask) requests, as many results
	v.mu.Lock()
	defer v.mu.Unlock()
	assert.Equal(t, want, v.calls)
	assert.True(t, v.raw, "a payload was validated before its envelope was encoded")
}

// TestNilValidatorChecksEnvelopeOnly: without a Validator, payloads are
// not checked against schemas, but the envelope still is.
func TestNilValidatorChecksEnvelopeOnly(t *testing.T) {
	st, err := memstore.New(nil)
	require.NoError(t, err)
	reg, err := registry.Open(context.Background(), st, nil)
	require.NoError(t, err)
	r, err := New(st, reg, &Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	defer r.Close()
	assert.Nil(t, r.Validator())
	require.NoError(t, r.Register(context.Background(), card("agent:ken", skill("skill:research")), func(ctx context.Context, t *Task) (*Result, error) {
		return &Result{PayloadType: "research.summary.v1", Payload: map[string]any{"no": "findings"}}, nil
	}))

	// research.query.v1 wants a string query: not checked.
	req, err := r.NewRequest("agent:ui", "research.query.v1", map[string]any{"query": 42})
	require.NoError(t, err)
	req.Requires = []string{"skill:research"}
	h, err := r.Submit(context.Background(), req)
	require.NoError(t, err)
	out, err := h.Wait(context.Background())
	require.NoError(t, err)
	assert.Equal(t, protocol.TypeTaskResult, out.Type)

	// An envelope whose schema_ref is malformed is refused all the same.
	bad, err := r.NewRequest("agent:ui", "research.query.v1", map[string]any{"query": "q"})
	require.NoError(t, err)
	bad.SchemaRef = "not a schema ref"
	_, err = r.Submit(context.Background(), bad)
	assert.ErrorIs(t, err, ErrInvalidRequest)
}

// detailedError is a validation error of a Validator outside package
// schema that carries wire details.
type detailedError struct{}

func (detailedError) Error() string { return "no good" }
func (detailedError) ErrorDetails() map[string]any {
	return map[string]any{"why": "the validator says so"}
}

// refuseResults refuses every task.result with a detailedError.
type refuseResults struct{}

func (refuseResults) ValidateMessage(m *protocol.Message) error {
	if m.Type == protocol.TypeTaskResult {
		return fmt.Errorf("checking: %w", detailedError{})
	}
	return nil
}

// TestValidatorErrorDetails: the details a validation error exposes reach
// the task.error of the refused result, next to the result itself.
func TestValidatorErrorDetails(t *testing.T) {
	e := newEnv(t, &Options{Validator: refuseResults{}, MaxAttempts: 1})
	e.register(card("agent:ken", skill("skill:research")), ok("x"))
	out, err := e.wait(e.submit(e.request("skill:research")))
	require.ErrorIs(t, err, protocol.CodeValidation)
	assert.Equal(t, "the validator says so", out.Err.Details["why"])
	assert.NotNil(t, out.Err.Details["result"])
}

// TestInvalidResultViolationsOnTheWire pins the wire form of a refused
// result's violations in the stored task.error: one {path, keyword,
// message} object per violation.
func TestInvalidResultViolationsOnTheWire(t *testing.T) {
	e := newEnv(t, &Options{MaxAttempts: 1})
	e.register(card("agent:sloppy", skill("skill:r")), func(ctx context.Context, t *Task) (*Result, error) {
		return &Result{PayloadType: "research.summary.v1", Payload: map[string]any{"title": "no findings"}}, nil
	})
	h := e.submit(e.request("skill:r"))
	_, err := e.wait(h)
	require.ErrorIs(t, err, protocol.CodeValidation)
	var stored *protocol.Message
	for ev, err := range e.st.Read(context.Background(), store.Query{TaskID: h.TaskID()}) {
		require.NoError(t, err)
		if m, err := ev.Message(); err == nil && m.Type == protocol.TypeTaskError {
			stored = m
		}
	}
	require.NotNil(t, stored)
	var wire struct {
		Details struct {
			Violations []map[string]string `json:"violations"`
		} `json:"details"`
	}
	require.NoError(t, json.Unmarshal(stored.Payload, &wire))
	require.NotEmpty(t, wire.Details.Violations)
	for _, v := range wire.Details.Violations {
		assert.Len(t, v, 3, "%v", v)
		assert.NotEmpty(t, v["keyword"], "%v", v)
		assert.NotEmpty(t, v["message"], "%v", v)
	}
	assert.Contains(t, wire.Details.Violations, map[string]string{
		"path": "/payload/findings", "keyword": "required", "message": "findings is required"})
}
