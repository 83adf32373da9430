package mcp_test

import (
	"context"
	"log/slog"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/adapters/mcp"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/router/routertest"
	"github.com/clutchprotocol/clutch/store"
)

// askingServer is a team whose exposed agent:asker (registerAsker) asks
// which market and then for approval, and answers with both.
func askingServer(t *testing.T) (*team, *mcp.Server) {
	tm := newTeam(t)
	registerAsker(tm.env)
	srv, err := mcp.NewServer(tm.env.Router, &mcp.ServerOptions{Caller: ide, Expose: []string{"agent:asker"}, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	return tm, srv
}

// registerAsker registers agent:asker (skill:ask): it asks which market
// (a choice) and then for approval, and answers with both.
func registerAsker(env *routertest.Env) {
	env.Register(&protocol.AgentCard{V: protocol.Version, AgentID: "agent:asker", Capabilities: []protocol.Capability{{ID: "skill:ask"}}},
		func(ctx context.Context, t *router.Task) (*router.Result, error) {
			market, err := router.AskAs[string](ctx, t, protocol.Question{Text: "Which market?", Choices: []string{"fintech", "health"}})
			if err != nil {
				return nil, err
			}
			ok, err := router.AskAs[protocol.Approval](ctx, t, protocol.Question{Kind: protocol.QuestionApproval, Text: "Publish?"})
			if err != nil {
				return nil, err
			}
			return &router.Result{Payload: map[string]string{"market": market, "decision": ok.Decision, "reason": ok.Reason}}, nil
		})
}

// session connects a go-sdk client to srv in memory; elicit, when set,
// makes it a host that declares elicitation.
func session(t *testing.T, srv *mcp.Server, elicit func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error)) *sdk.ClientSession {
	return sessionAt(t, srv, "", elicit)
}

// sessionAt is session speaking the MCP revision version (the SDK's
// latest when "").
func sessionAt(t *testing.T, srv *mcp.Server, version string, elicit func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error)) *sdk.ClientSession {
	st, ct := sdk.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Run(ctx, st)
	}()
	o := &sdk.ClientOptions{ElicitationHandler: elicit}
	if version != "" && version < "2026-07-28" {
		// A client of an older revision knows no input requests: the
		// go-sdk's client would fulfil them whatever it negotiated.
		o.MultiRoundTrip = &sdk.MultiRoundTripOptions{Disabled: true}
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "host", Version: "1"}, o)
	cs, err := c.Connect(context.Background(), ct, &sdk.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err)
	t.Cleanup(func() {
		cs.Close()
		cancel()
		<-done
	})
	return cs
}

var askArgs = map[string]any{"payload_type": "research.query.v1", "payload": map[string]any{"query": "q"}, "requires": []string{"skill:ask"}}

// TestServerAskByElicitation: a host that declares elicitation is asked
// each question in a form; what the person submits is the caller's answer
// and the task runs on within the same submit_task call.
func TestServerAskByElicitation(t *testing.T) {
	tm, srv := askingServer(t)
	var asked []string
	cs := session(t, srv, func(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		asked = append(asked, req.Params.Message)
		if len(asked) == 1 {
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": "health"}}, nil
		}
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "reject", "reason": "later"}}, nil
	})
	sc, isErr := callTool(t, cs, mcp.ToolSubmitTask, askArgs, false)
	require.False(t, isErr, "%v", sc)
	assert.Equal(t, "result", sc["status"])
	assert.Equal(t, map[string]any{"market": "health", "decision": "reject", "reason": "later"}, sc["result"])
	assert.Equal(t, []string{"Which market?", "Publish?"}, asked)
	for _, m := range tm.env.Events(store.Query{TaskID: sc["task_id"].(string), TypePrefix: string(protocol.TypeTaskAnswer)}) {
		assert.Equal(t, ide.AgentID, m.From.AgentID, "the answer is the caller's")
	}
}

// TestServerAskByElicitationOlderClient: a host of the 2025-11-25
// revision, which knows no input requests, gets an elicitation/create
// for each question, all within the one submit_task call.
func TestServerAskByElicitationOlderClient(t *testing.T) {
	tm, srv := askingServer(t)
	var asked []string
	cs := sessionAt(t, srv, "2025-11-25", func(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		asked = append(asked, req.Params.Message)
		if len(asked) == 1 {
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": "fintech"}}, nil
		}
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve"}}, nil
	})
	require.Equal(t, "2025-11-25", cs.InitializeResult().ProtocolVersion)
	sc, isErr := callTool(t, cs, mcp.ToolSubmitTask, askArgs, false)
	require.False(t, isErr, "%v", sc)
	assert.Equal(t, "result", sc["status"])
	assert.Equal(t, map[string]any{"market": "fintech", "decision": "approve", "reason": ""}, sc["result"])
	assert.Equal(t, []string{"Which market?", "Publish?"}, asked)
	evs := tm.env.Events(store.Query{TaskID: sc["task_id"].(string), TypePrefix: string(protocol.TypeTaskAnswer)})
	assert.Len(t, evs, 2, "one answer per question")
}

// TestServerAskByTool: without elicitation (or when the person declines)
// the call returns the question, and answer_question answers it.
func TestServerAskByTool(t *testing.T) {
	_, srv := askingServer(t)
	cs := session(t, srv, nil)
	sc, isErr := callTool(t, cs, mcp.ToolSubmitTask, askArgs, false)
	require.False(t, isErr, "%v", sc)
	require.Equal(t, "question", sc["status"])
	assert.Equal(t, mcp.ActionAnswer, sc["next"])
	q := sc["question"].(map[string]any)
	assert.Equal(t, []any{"fintech", "health"}, q["choices"])

	bad, isErr := callTool(t, cs, mcp.ToolAnswerQuestion, map[string]any{"question_id": q["question_id"], "value": "retail"}, false)
	require.True(t, isErr, "%v", bad)
	sc, isErr = callTool(t, cs, mcp.ToolAnswerQuestion, map[string]any{"question_id": q["question_id"], "value": "fintech"}, false)
	require.False(t, isErr, "%v", sc)
	require.Equal(t, "question", sc["status"], "the approval comes next")
	q = sc["question"].(map[string]any)
	sc, isErr = callTool(t, cs, mcp.ToolAnswerQuestion, map[string]any{"question_id": q["question_id"], "value": map[string]any{"decision": "approve"}}, false)
	require.False(t, isErr, "%v", sc)
	assert.Equal(t, "result", sc["status"])
	assert.Equal(t, map[string]any{"market": "fintech", "decision": "approve", "reason": ""}, sc["result"])

	// A host whose person declines gets the question back.
	_, srv2 := askingServer(t)
	declining := session(t, srv2, func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		return &sdk.ElicitResult{Action: "decline"}, nil
	})
	sc, isErr = callTool(t, declining, mcp.ToolSubmitTask, askArgs, false)
	require.False(t, isErr, "%v", sc)
	assert.Equal(t, "question", sc["status"])
	// A waiting task is cancelled like a running one.
	sc, isErr = callTool(t, declining, mcp.ToolCancelTask, map[string]any{"task_id": sc["task_id"]}, false)
	require.False(t, isErr, "%v", sc)
	assert.Equal(t, "cancel", sc["status"])
}

// TestServerAnswerThenElicit: a person who declined the first form answers
// it with answer_question; the next question is put to them as a form
// within that call, and their response ends the task in the same call.
func TestServerAnswerThenElicit(t *testing.T) {
	tm, srv := askingServer(t)
	var asked []string
	cs := session(t, srv, func(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		asked = append(asked, req.Params.Message)
		if len(asked) == 1 {
			return &sdk.ElicitResult{Action: "decline"}, nil
		}
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve"}}, nil
	})
	sc, isErr := callTool(t, cs, mcp.ToolSubmitTask, askArgs, false)
	require.False(t, isErr, "%v", sc)
	require.Equal(t, "question", sc["status"])
	q := sc["question"].(map[string]any)
	sc, isErr = callTool(t, cs, mcp.ToolAnswerQuestion, map[string]any{"question_id": q["question_id"], "value": "health"}, false)
	require.False(t, isErr, "%v", sc)
	assert.Equal(t, "result", sc["status"])
	assert.Equal(t, map[string]any{"market": "health", "decision": "approve", "reason": ""}, sc["result"])
	assert.Equal(t, []string{"Which market?", "Publish?"}, asked)
	evs := tm.env.Events(store.Query{TaskID: sc["task_id"].(string), TypePrefix: string(protocol.TypeTaskAnswer)})
	assert.Len(t, evs, 2, "one answer per question")
}
