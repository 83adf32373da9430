package rulesmcp_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/clutchprotocol/clutch/adapters/mcp"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/rules"
	"github.com/clutchprotocol/clutch/rules/rulesmcp"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
	"github.com/clutchprotocol/clutch/store/memstore"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var quiet = slog.New(slog.DiscardHandler)

func memHost(t *testing.T) (*host, store.Store) {
	t.Helper()
	st, err := memstore.New(nil)
	require.NoError(t, err)
	h, err := newHost(context.Background(), st, quiet)
	require.NoError(t, err)
	t.Cleanup(func() {
		h.router.Close()
		st.Close()
	})
	return h, st
}

// connect serves one session of h over the in-memory transport (as Run
// serves stdio: the caller is ServerOptions.Caller) and returns a go-sdk
// client session to it.
func connect(t *testing.T, h *host) *sdk.ClientSession {
	t.Helper()
	st, ct := sdk.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = h.srv.Run(ctx, st)
	}()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test-host", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		cs.Close()
		cancel()
		<-done
	})
	return cs
}

// call calls a tool and returns its structuredContent and isError, after
// checking the envelope: one text block holding the same JSON, and the
// error members on an error.
func call(t *testing.T, cs *sdk.ClientSession, name string, args any) (map[string]any, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, name)
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var sc map[string]any
	require.NoError(t, json.Unmarshal(raw, &sc), "%s: structuredContent %s", name, raw)
	require.Len(t, res.Content, 1, name)
	var fromText map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Content[0].(*sdk.TextContent).Text), &fromText))
	assert.Equal(t, sc, fromText, "%s: the text block is the structured content", name)
	if res.IsError {
		for _, k := range []string{"error", "code", "retryable", "retryAction"} {
			assert.Contains(t, sc, k, "%s: error member", name)
		}
	}
	return sc, res.IsError
}

// callErr calls a tool that must fail and returns the error's
// structuredContent.
func callErr(t *testing.T, cs *sdk.ClientSession, name string, args any) map[string]any {
	t.Helper()
	sc, isErr := call(t, cs, name, args)
	require.True(t, isErr, "%s %v must fail: %v", name, args, sc)
	return sc
}

func callOK(t *testing.T, cs *sdk.ClientSession, name string, args any) map[string]any {
	t.Helper()
	sc, isErr := call(t, cs, name, args)
	require.False(t, isErr, "%s %v: %v", name, args, sc)
	return sc
}

func TestToolList(t *testing.T) {
	h, _ := memHost(t)
	cs := connect(t, h)
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	for _, n := range []string{rulesmcp.ToolSetup, rulesmcp.ToolDiscover, rulesmcp.ToolLoad, rulesmcp.ToolRefer, rulesmcp.ToolReport,
		rulesmcp.ToolRejected, rulesmcp.ToolArtifact, mcp.ToolSubmitTask} {
		assert.Contains(t, names, n, "served alongside the task tools")
	}
	for _, n := range []string{"memory.begin", "memory.complete", "memory.startup", "memory.list", "memory.activate", "draft", "rule.propose_update"} {
		assert.NotContains(t, names, n)
	}
	_, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "memory.begin", Arguments: map[string]any{}})
	require.Error(t, err)
	assert.Contains(t, strings.ToLower(err.Error()), "unknown tool")

	_, err = mcp.NewServer(h.router, &mcp.ServerOptions{Caller: ide, Expose: []string{"agent:x"},
		ExtraTools: []mcp.ServerTool{{Name: mcp.ToolSubmitTask, Call: func(context.Context, *mcp.ServerToolCall) (any, error) { return nil, nil }}}})
	assert.ErrorIs(t, err, mcp.ErrInvalidConfig, "a tool name served already")
}

// TestEveryToolAndErrorRow goes through each tool's inputs and every row
// of docs/protocol.md §15.10 with the go-sdk client.
func TestEveryToolAndErrorRow(t *testing.T) {
	h, st := memHost(t)
	cs := connect(t, h)
	wf, rule, ctxDoc := h.docs["workflow/CODING.md"], h.docs["rules/REVIEW.md"], h.docs["context/SETUP.md"]

	// memsetup
	e := callErr(t, cs, "memsetup", map[string]any{"session_id": "s-1", "knownHashes": map[string]any{}})
	assert.Contains(t, e["error"], "invalid params")
	assert.Contains(t, e["error"], "META_PROMPT.md")
	e = callErr(t, cs, "memsetup", map[string]any{"session_id": "s-1"})
	assert.Contains(t, e["error"], "invalid params")
	callErr(t, cs, "memsetup", map[string]any{"session_id": 7, "knownHashes": map[string]any{"META_PROMPT.md": ""}})
	callErr(t, cs, "memsetup", map[string]any{"session_id": "", "knownHashes": map[string]any{"META_PROMPT.md": ""}})
	callErr(t, cs, "memsetup", map[string]any{"session_id": "s", "knownHashes": map[string]any{"META_PROMPT.md": 1}})
	sc := callOK(t, cs, "memsetup", map[string]any{"session_id": "s-1", "knownHashes": map[string]any{"META_PROMPT.md": ""}})
	assert.Equal(t, h.lib.WorkspaceID(), sc["workspaceId"])
	assert.Equal(t, "s-1", sc["sessionId"])
	mpf := sc["mpf"].(map[string]any)
	assert.Equal(t, rules.DefaultMetaPrompt, mpf["content"])
	assert.Equal(t, true, mpf["changed"])
	sc = callOK(t, cs, "memsetup", map[string]any{"session_id": "s-1", "knownHashes": map[string]any{"META_PROMPT.md": mpf["hash"]}})
	assert.Equal(t, false, sc["mpf"].(map[string]any)["changed"])
	assert.NotContains(t, sc["mpf"], "content")

	// memdisc
	sc = callOK(t, cs, "memdisc", map[string]any{})
	assert.Len(t, sc["items"], 3)
	item := sc["items"].([]any)[2].(map[string]any)
	assert.Equal(t, map[string]any{"id": wf.ID, "kind": "workflow", "path": "workflow/CODING.md", "name": "CODING", "group": "workflow",
		"hash": wf.Hash, "description": "how we code", "hasDraft": false}, item)
	sc = callOK(t, cs, "memdisc", map[string]any{"kind": "context"})
	assert.Len(t, sc["items"], 1)
	sc = callOK(t, cs, "memdisc", map[string]any{"group": "rules", "query": "review"})
	assert.Len(t, sc["items"], 1)
	sc = callOK(t, cs, "memdisc", map[string]any{"query": "nothing-matches"})
	assert.Equal(t, []any{}, sc["items"])
	callErr(t, cs, "memdisc", map[string]any{"kind": "mpf"})
	callErr(t, cs, "memdisc", map[string]any{"kind": 3})

	// memload
	e = callErr(t, cs, "memload", map[string]any{"ids": []string{wf.ID}})
	assert.Contains(t, e["error"], "invalid params")
	e = callErr(t, cs, "memload", map[string]any{"ids": []string{wf.ID, ctxDoc.ID}, "knownHashes": map[string]any{wf.ID: ""}})
	assert.Contains(t, e["error"], "invalid params")
	callErr(t, cs, "memload", map[string]any{"ids": []string{}, "knownHashes": map[string]any{}})
	callErr(t, cs, "memload", map[string]any{"ids": wf.ID, "knownHashes": map[string]any{wf.ID: ""}})
	e = callErr(t, cs, "memload", map[string]any{"ids": []string{"p-nope"}, "knownHashes": map[string]any{"p-nope": ""}})
	assert.Contains(t, e["error"], "Unknown rule id")
	assert.Equal(t, "NOT_FOUND", e["code"])
	sc = callOK(t, cs, "memload", map[string]any{"ids": []string{wf.ID, ctxDoc.ID}, "knownHashes": map[string]any{wf.ID: "", ctxDoc.ID: ctxDoc.Hash}})
	assert.Equal(t, h.lib.WorkspaceID(), sc["workspaceId"])
	items := sc["items"].([]any)
	w0, c0 := items[0].(map[string]any), items[1].(map[string]any)
	assert.Equal(t, true, w0["changed"])
	assert.Equal(t, codingMD+rules.ReferReminder(wf.ID), w0["content"])
	assert.Equal(t, []any{
		map[string]any{"id": "Steps", "name": "Steps", "text": "Inspect the diff and suggest a commit message.", "textHash": rules.HashContent([]byte("Inspect the diff and suggest a commit message."))},
		map[string]any{"id": "Checks", "name": "Checks", "text": "1. Run the tests.\n2. Run go vet.", "textHash": rules.HashContent([]byte("1. Run the tests.\n2. Run go vet."))},
		map[string]any{"id": "Checks/1", "name": "Checks", "text": "Run the tests.", "textHash": rules.HashContent([]byte("Run the tests."))},
		map[string]any{"id": "Checks/2", "name": "Checks", "text": "Run go vet.", "textHash": rules.HashContent([]byte("Run go vet."))},
	}, w0["constraints"])
	assert.Equal(t, false, c0["changed"])
	assert.Contains(t, c0, "content")
	assert.Nil(t, c0["content"], "null when unchanged")
	sc = callOK(t, cs, "memload", map[string]any{"ids": []string{wf.ID}, "knownHashes": map[string]any{wf.ID: wf.Hash}})
	w1 := sc["items"].([]any)[0].(map[string]any)
	assert.Nil(t, w1["content"])
	assert.Equal(t, w0["constraints"], w1["constraints"], "constraints still returned under delta loading")

	// memref
	callErr(t, cs, "memref", map[string]any{})
	callErr(t, cs, "memref", map[string]any{"refs": []any{}})
	callErr(t, cs, "memref", map[string]any{"refs": []any{map[string]any{"ruleId": wf.ID}}})
	callErr(t, cs, "memref", map[string]any{"refs": []any{map[string]any{"ruleId": wf.ID, "constraintId": 1}}})
	e = callErr(t, cs, "memref", map[string]any{"refs": []any{map[string]any{"ruleId": "p-gone", "constraintId": "Steps"}}})
	assert.Equal(t, "unknown_rule_or_workflow", e["code"])
	assert.Equal(t, true, e["retryable"])
	assert.Equal(t, "rediscover_and_reload", e["retryAction"])
	e = callErr(t, cs, "memref", map[string]any{"refs": []any{map[string]any{"ruleId": ctxDoc.ID, "constraintId": "Steps"}}})
	assert.Equal(t, "unknown_rule_or_workflow", e["code"], "a context id is not a refer target")
	e = callErr(t, cs, "memref", map[string]any{"refs": []any{map[string]any{"ruleId": wf.ID, "constraintId": "Step"}}})
	assert.Equal(t, "memref constraintId 'Step' is not valid for ruleId '"+wf.ID+"'; retry with one of: Steps, Checks, Checks/1, Checks/2", e["error"])
	assert.Equal(t, "unknown_constraint", e["code"])
	assert.Equal(t, true, e["retryable"])
	assert.Equal(t, "retry_with_valid_constraint", e["retryAction"])
	assert.Equal(t, map[string]any{"id": "Steps", "name": "Steps", "text": "Inspect the diff and suggest a commit message."}, e["validConstraints"].([]any)[0])
	sc = callOK(t, cs, "memref", map[string]any{"refs": []any{
		map[string]any{"ruleId": wf.ID, "constraintId": "Steps", "ruleHash": wf.Hash, "reason": "wrote the message"},
		map[string]any{"ruleId": rule.ID, "constraintId": "Tone/2"}}})
	assert.Equal(t, map[string]any{"ok": true, "count": float64(2)}, sc)

	// agentreport, agentrejected
	callErr(t, cs, "agentreport", map[string]any{})
	callErr(t, cs, "agentreport", map[string]any{"summary": 5})
	e = callErr(t, cs, "agentreport", map[string]any{"summary": ""})
	assert.Contains(t, e["error"], "summary must not be empty")
	assert.Equal(t, map[string]any{"ok": true}, callOK(t, cs, "agentreport", map[string]any{"summary": "done"}))
	assert.Equal(t, map[string]any{"ok": true}, callOK(t, cs, "agentrejected", map[string]any{}))
	assert.Equal(t, map[string]any{"ok": true}, callOK(t, cs, "agentrejected", map[string]any{"reason": "ignored Checks/1"}))
	callErr(t, cs, "agentrejected", map[string]any{"reason": false})

	// artifact
	art := func(resource string, op string, body map[string]any) map[string]any {
		return map[string]any{"resource": resource, "op": map[string]any{op: body}}
	}
	sc = callOK(t, cs, "artifact", art("context", "create", map[string]any{"path": "spec/new-context.md", "body": "# New\n", "description": "notes"}))
	assert.Equal(t, true, sc["ok"])
	assert.Equal(t, "spec/new-context.md", sc["draft_path"])
	tmp := sc["id"].(string)
	assert.True(t, strings.HasPrefix(tmp, "tmp-"))
	e = callErr(t, cs, "artifact", art("context", "create", map[string]any{"path": "spec/new-context.md", "body": "again"}))
	assert.Contains(t, e["error"], "draft already exists")
	e = callErr(t, cs, "artifact", art("context", "create", map[string]any{"path": "../outside.md", "body": "x"}))
	assert.Contains(t, e["error"], "unsafe path")
	e = callErr(t, cs, "artifact", art("rule", "update", map[string]any{"id": "p-missing", "body": "x"}))
	assert.Contains(t, e["error"], "file not found in cache")
	callOK(t, cs, "artifact", art("rule", "rename", map[string]any{"id": rule.ID, "new_path": "rules/REVIEWING.md"}))
	e = callErr(t, cs, "artifact", art("rule", "update", map[string]any{"id": rule.ID, "body": "x"}))
	assert.Contains(t, e["error"], "artifact already has an incompatible local change")
	assert.Equal(t, "CONFLICT", e["code"])
	e = callErr(t, cs, "artifact", art("context", "delete", map[string]any{"id": "spec/new-context.md"}))
	assert.Contains(t, e["error"], "file not found in cache", "a create-only draft by path")
	sc = callOK(t, cs, "memdisc", map[string]any{"group": "spec"})
	assert.Equal(t, tmp, sc["items"].([]any)[0].(map[string]any)["id"], "memdisc shows the tmp id")
	sc = callOK(t, cs, "artifact", art("context", "delete", map[string]any{"id": tmp}))
	assert.Equal(t, true, sc["discarded"])
	callOK(t, cs, "artifact", art("mpf", "update", map[string]any{"id": "META_PROMPT.md", "body": "# Ours\n"}))
	e = callErr(t, cs, "artifact", art("mpf", "rename", map[string]any{"id": "META_PROMPT.md", "new_path": "x.md"}))
	assert.Contains(t, e["error"], "cannot be renamed")
	callOK(t, cs, "artifact", art("rule", "discard", map[string]any{"id": rule.ID}))
	callErr(t, cs, "artifact", map[string]any{"resource": "rule", "op": map[string]any{}})
	callErr(t, cs, "artifact", map[string]any{"resource": "rule", "op": map[string]any{"discard": map[string]any{"id": "a"}, "delete": map[string]any{"id": "a"}}})
	callErr(t, cs, "artifact", map[string]any{"resource": "workflow", "op": map[string]any{"discard": map[string]any{"id": "a"}}})
	callErr(t, cs, "artifact", map[string]any{"resource": "rule", "op": map[string]any{"create": map[string]any{"path": "a.md"}}})

	// Every call is recorded as a host call, and the session's attestation
	// events carry the caller and the session.
	hosts := 0
	for _, err := range st.Read(context.Background(), store.Query{AgentID: "agent:ide", TypePrefix: string(mcp.TypeHostCall)}) {
		require.NoError(t, err)
		hosts++
	}
	assert.Greater(t, hosts, 50)
}

// attestation reads the rules events of a session's run as type and
// payload.
func attestation(t *testing.T, st store.Store, runID string) []string {
	t.Helper()
	var out []string
	for ev, err := range st.Read(context.Background(), store.Query{RunID: runID, TypePrefix: "x.clutch.rules."}) {
		require.NoError(t, err)
		m, err := ev.Message()
		require.NoError(t, err)
		out = append(out, string(m.Type)+" "+m.From.AgentID+" "+string(m.Payload))
	}
	return out
}

// TestScriptedSessions runs a full cycle (setup → discover → load → refer
// → report) and a rejected one through the go-sdk client over a boltstore,
// asserts the exact attestation events, then restarts on the same file and
// finds the library rebuilt.
func TestScriptedSessions(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "clutch.db")
	st, err := boltstore.Open(file, nil)
	require.NoError(t, err)
	h, err := newHost(ctx, st, quiet)
	require.NoError(t, err)
	cs := connect(t, h)
	wf := h.docs["workflow/CODING.md"]

	setup := callOK(t, cs, "memsetup", map[string]any{"session_id": "host-thread-1", "knownHashes": map[string]any{"META_PROMPT.md": ""}})
	mpfHash := setup["mpf"].(map[string]any)["hash"].(string)
	callOK(t, cs, "memdisc", map[string]any{"kind": "workflow"})
	callOK(t, cs, "memload", map[string]any{"ids": []string{wf.ID}, "knownHashes": map[string]any{wf.ID: ""}})
	callOK(t, cs, "memref", map[string]any{"refs": []any{map[string]any{"ruleId": wf.ID, "constraintId": "Checks/1", "reason": "ran them"}}})
	callOK(t, cs, "artifact", map[string]any{"resource": "rule", "op": map[string]any{"update": map[string]any{"id": wf.ID, "body": codingMD + "3. Run the linter.\n"}}})
	callOK(t, cs, "agentreport", map[string]any{"summary": "suggested a commit message"})
	run1 := setup["runId"].(string)

	rejected := callOK(t, cs, "memsetup", map[string]any{"session_id": "host-thread-2", "knownHashes": map[string]any{"META_PROMPT.md": mpfHash}})
	callOK(t, cs, "memload", map[string]any{"ids": []string{wf.ID}, "knownHashes": map[string]any{wf.ID: wf.Hash}})
	callOK(t, cs, "agentrejected", map[string]any{"reason": "skipped the checks"})
	run2 := rejected["runId"].(string)
	require.NotEqual(t, run1, run2)

	drafted := ""
	for ev, err := range st.Read(ctx, store.Query{TypePrefix: string(rules.TypeDrafted)}) {
		require.NoError(t, err)
		m, _ := ev.Message()
		drafted = m.ID
	}
	ws := h.lib.WorkspaceID()
	newHash := rules.HashContent([]byte(codingMD + "3. Run the linter.\n"))
	assert.Equal(t, []string{
		`x.clutch.rules.setup agent:ide {"session_id":"host-thread-1","workspace_id":"` + ws + `","mpf_hash":"` + mpfHash + `","mpf_changed":true}`,
		`x.clutch.rules.discover agent:ide {"session_id":"host-thread-1","kind":"workflow","ids":["` + wf.ID + `"]}`,
		`x.clutch.rules.load agent:ide {"session_id":"host-thread-1","items":[{"id":"` + wf.ID + `","path":"workflow/CODING.md","hash":"` + wf.Hash + `","changed":true,"has_draft":false}]}`,
		`x.clutch.rules.refer agent:ide {"session_id":"host-thread-1","refs":[{"rule_id":"` + wf.ID + `","path":"workflow/CODING.md","constraint_id":"Checks/1","text_hash":"` +
			rules.HashContent([]byte("Run the tests.")) + `","hash":"` + wf.Hash + `","reason":"ran them"}]}`,
		`x.clutch.rules.artifact agent:ide {"session_id":"host-thread-1","resource":"rule","op":"update","id":"` + wf.ID + `","path":"workflow/CODING.md","event_id":"` + drafted + `"}`,
		`x.clutch.rules.report agent:ide {"session_id":"host-thread-1","summary":"suggested a commit message"}`,
	}, attestation(t, st, run1))
	assert.Equal(t, []string{
		`x.clutch.rules.setup agent:ide {"session_id":"host-thread-2","workspace_id":"` + ws + `","mpf_hash":"` + mpfHash + `","mpf_changed":false}`,
		// the caller's own draft is what it loads now
		`x.clutch.rules.load agent:ide {"session_id":"host-thread-2","items":[{"id":"` + wf.ID + `","path":"workflow/CODING.md","hash":"` + newHash + `","changed":true,"has_draft":true}]}`,
		`x.clutch.rules.reject agent:ide {"session_id":"host-thread-2","reason":"skipped the checks"}`,
	}, attestation(t, st, run2))

	// Review the draft, then restart on the same file.
	doc, err := h.lib.Approve(ctx, "agent:lead", "agent:ide", wf.ID)
	require.NoError(t, err)
	assert.Equal(t, 2, doc.Version)
	wantDocs := h.lib.Documents()
	cs.Close()
	require.NoError(t, h.router.Close())
	require.NoError(t, st.Close())

	st, err = boltstore.Open(file, nil)
	require.NoError(t, err)
	h2, err := newHost(ctx, st, quiet)
	require.NoError(t, err)
	t.Cleanup(func() {
		h2.router.Close()
		st.Close()
	})
	assert.Equal(t, wantDocs, h2.lib.Documents(), "the library is rebuilt from the log")
	cs2 := connect(t, h2)
	sc := callOK(t, cs2, "memload", map[string]any{"ids": []string{wf.ID}, "knownHashes": map[string]any{wf.ID: wf.Hash}})
	it := sc["items"].([]any)[0].(map[string]any)
	assert.Equal(t, newHash, it["hash"])
	assert.Equal(t, codingMD+"3. Run the linter.\n"+rules.ReferReminder(wf.ID), it["content"])
}

// TestSessionBoundToTask: a host whose session id is a task it submitted
// records its attestation in that task's run.
func TestSessionBoundToTask(t *testing.T) {
	h, st := memHost(t)
	cs := connect(t, h)
	req, err := h.router.NewRequest("agent:ide", "", map[string]any{})
	require.NoError(t, err)
	req.To = []protocol.Participant{{AgentID: "agent:orchestrator"}}
	_, err = st.Append(context.Background(), req)
	require.NoError(t, err)
	sc := callOK(t, cs, "memsetup", map[string]any{"session_id": req.TaskID, "knownHashes": map[string]any{"META_PROMPT.md": ""}})
	assert.Equal(t, req.RunID, sc["runId"])
	assert.Equal(t, req.TaskID, sc["taskId"])
	callOK(t, cs, "agentreport", map[string]any{"summary": "done"})
	evs := attestation(t, st, req.RunID)
	require.Len(t, evs, 2)
	assert.True(t, strings.HasPrefix(evs[1], "x.clutch.rules.report agent:ide"))
}

// TestHTTP serves the tools over Streamable HTTP: each request's caller is
// the authenticated one, and drafts and bindings are per caller.
func TestHTTP(t *testing.T) {
	h, _ := memHost(t)
	hs := httptest.NewServer(h.srv.Handler())
	t.Cleanup(hs.Close)
	dial := func(key string) *sdk.ClientSession {
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "http-host", Version: "1"}, nil).Connect(context.Background(),
			&sdk.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: &http.Client{Transport: keyTransport{key}}}, nil)
		require.NoError(t, err)
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	ideCS, otherCS := dial(ideKey), dial(otherKey)
	callOK(t, ideCS, "memsetup", map[string]any{"session_id": "ide-1", "knownHashes": map[string]any{"META_PROMPT.md": ""}})
	sc := callOK(t, ideCS, "artifact", map[string]any{"resource": "context", "op": map[string]any{"create": map[string]any{"path": "notes/a.md", "body": "a"}}})
	tmp := sc["id"].(string)
	sc = callOK(t, otherCS, "memdisc", map[string]any{"group": "notes"})
	assert.Empty(t, sc["items"], "another caller does not see ide's draft")
	sc = callOK(t, ideCS, "memdisc", map[string]any{"group": "notes"})
	assert.Len(t, sc["items"], 1)
	drafts := h.lib.Drafts()
	require.Len(t, drafts, 1)
	assert.Equal(t, "agent:ide", drafts[0].Author)
	assert.Equal(t, tmp, drafts[0].ID)
}

type keyTransport struct{ key string }

func (k keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+k.key)
	return http.DefaultTransport.RoundTrip(r)
}

// TestStdioProcess starts this test binary as a stdio MCP server, as a
// host starts one, and runs a session through the go-sdk client.
func TestStdioProcess(t *testing.T) {
	file := filepath.Join(t.TempDir(), "clutch.db")
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), serveStdioEnv+"=1", dbEnv+"="+file)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "stdio-host", Version: "1"}, nil).Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	assert.True(t, slices.ContainsFunc(res.Tools, func(tl *sdk.Tool) bool { return tl.Name == "memref" }))
	sc, isErr := callStdio(t, cs, "memsetup", map[string]any{"session_id": "stdio-1", "knownHashes": map[string]any{"META_PROMPT.md": ""}})
	require.False(t, isErr, "%v", sc)
	assert.Equal(t, "stdio-1", sc["sessionId"])
	sc, isErr = callStdio(t, cs, "memref", map[string]any{"refs": []any{map[string]any{"ruleId": "x", "constraintId": "y"}}})
	assert.True(t, isErr)
	assert.Equal(t, "unknown_rule_or_workflow", sc["code"])
	require.NoError(t, cs.Close())
}

func callStdio(t *testing.T, cs *sdk.ClientSession, name string, args any) (map[string]any, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err)
	raw, _ := json.Marshal(res.StructuredContent)
	var sc map[string]any
	require.NoError(t, json.Unmarshal(raw, &sc))
	return sc, res.IsError
}
