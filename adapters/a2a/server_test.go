package a2a

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
)

func TestServerCards(t *testing.T) {
	e := newTestEnv(t, nil)
	status, hdr, body := httpDo(t, "GET", e.hs.URL+CardPath, "")
	if status != 200 || hdr.Get("Content-Type") != "application/json" || hdr.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("team card: %d %v %s", status, hdr, body)
	}
	var team a2a.AgentCard
	if err := json.Unmarshal([]byte(body), &team); err != nil {
		t.Fatal(err)
	}
	if team.Name != "clutch" || !team.Capabilities.Streaming || team.Capabilities.PushNotifications || team.Capabilities.ExtendedAgentCard {
		t.Errorf("team card capabilities: %+v", team)
	}
	if len(team.SupportedInterfaces) != 1 || team.SupportedInterfaces[0].URL != e.hs.URL+RPCPath ||
		team.SupportedInterfaces[0].ProtocolBinding != a2a.TransportProtocolJSONRPC || team.SupportedInterfaces[0].ProtocolVersion != "1.0" {
		t.Errorf("team interfaces: %+v", team.SupportedInterfaces[0])
	}
	var ids []string
	for _, s := range team.Skills {
		ids = append(ids, s.ID)
	}
	if !slices.Equal(ids, []string{"skill:echo", "skill:quick", "skill:research"}) {
		t.Errorf("team skills = %v", ids)
	}

	_, _, body = httpDo(t, "GET", e.hs.URL+"/agents/research"+CardPath, "")
	var one a2a.AgentCard
	if err := json.Unmarshal([]byte(body), &one); err != nil {
		t.Fatal(err)
	}
	if one.Name != "research" || one.Description != "test agent agent:research" || len(one.Skills) != 1 ||
		one.Skills[0].ID != "skill:research" || !slices.Equal(one.Skills[0].Tags, []string{"test"}) ||
		one.SupportedInterfaces[0].URL != e.hs.URL+"/agents/research/a2a" {
		t.Errorf("agent card: %s", body)
	}
	if status, _, body := httpDo(t, "GET", e.hs.URL+"/agents/nobody"+CardPath, ""); status != 404 || !strings.Contains(body, `"agent_not_found"`) {
		t.Errorf("unknown agent card: %d %s", status, body)
	}

	// Streaming is declared only when it is on.
	off := newTestEnv(t, &ServerOptions{DisableStreaming: true, BaseURL: "https://agents.example.com/x/", Name: "team"})
	_, _, body = httpDo(t, "GET", off.hs.URL+CardPath, "")
	var c a2a.AgentCard
	if err := json.Unmarshal([]byte(body), &c); err != nil {
		t.Fatal(err)
	}
	if c.Capabilities.Streaming || c.Name != "team" || c.SupportedInterfaces[0].URL != "https://agents.example.com/x/a2a" {
		t.Errorf("card without streaming: %s", body)
	}
	if strings.Contains(body, `"streaming"`) {
		t.Errorf("streaming must not be claimed: %s", body)
	}
}

func TestSendMessage(t *testing.T) {
	e := newTestEnv(t, nil)
	cl := e.client(t, "echo")
	req := &a2a.SendMessageRequest{Message: &a2a.Message{ID: "m-1", Role: a2a.MessageRoleUser, ContextID: "ctx-42",
		Parts: a2a.ContentParts{a2a.NewTextPart("hello"), a2a.NewDataPart(map[string]any{"n": 1})}}}
	task := send(t, cl, req)
	if task.Status.State != a2a.TaskStateCompleted || task.ContextID != "ctx-42" || !strings.HasPrefix(string(task.ID), "task_") {
		t.Fatalf("task: %s", mustJSON(t, task))
	}
	if task.Metadata[MetaAgentID] != "agent:echo" || task.Metadata[MetaRunID] == "" {
		t.Errorf("metadata: %v", task.Metadata)
	}
	if len(task.History) != 1 || task.History[0].ID != "m-1" || task.History[0].Role != a2a.MessageRoleUser || textOf(task.History[0].Parts) != "hello" {
		t.Errorf("history: %s", mustJSON(t, task.History))
	}
	if len(task.Artifacts) != 1 || len(task.Artifacts[0].Parts) != 2 {
		t.Fatalf("artifacts: %s", mustJSON(t, task.Artifacts))
	}
	parts := task.Artifacts[0].Parts
	if parts[0].Text() != "echo: hello" || mustJSON(t, parts[1].Data()) != `{"n":1}` {
		t.Errorf("artifact parts: %s", mustJSON(t, parts))
	}

	// The Clutch side: the caller's context's thread (the contextId kept in
	// meta), task = A2A task id, typed payload.
	reqs := e.Events(store.Query{TaskID: string(task.ID), TypePrefix: "task.request"})
	if len(reqs) != 1 || reqs[0].Meta[metaContextID] != "ctx-42" || !strings.HasPrefix(reqs[0].ThreadID, "thr_") || reqs[0].ThreadID == "ctx-42" || reqs[0].PayloadType != PayloadContent ||
		string(reqs[0].Payload) != `{"text":"hello","data":[{"n":1}]}` || reqs[0].Meta[metaSource] != SourceA2A {
		t.Errorf("task.request: %s", reqs[0].Raw())
	}

	// GetTask reads the same task back from the store.
	got, err := cl.GetTask(ctxT(t), &a2a.GetTaskRequest{ID: task.ID})
	if err != nil {
		t.Fatal(err)
	}
	if mustJSON(t, got) != mustJSON(t, task) {
		t.Errorf("GetTask differs:\n got %s\nwant %s", mustJSON(t, got), mustJSON(t, task))
	}
	zero := 0
	got, _ = cl.GetTask(ctxT(t), &a2a.GetTaskRequest{ID: task.ID, HistoryLength: &zero})
	if len(got.History) != 0 {
		t.Errorf("historyLength 0 kept %d messages", len(got.History))
	}
}

func TestSendMessageTyped(t *testing.T) {
	e := newTestEnv(t, nil)
	cl := e.client(t, "") // the team: routed by clutch.requires
	part := a2a.NewDataPart(map[string]any{"query": "fintech"})
	part.Metadata = map[string]any{MetaPayloadType: schema.PayloadResearchQuery}
	req := &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, part),
		Metadata: map[string]any{MetaRequires: []any{"skill:research"}}}
	task := send(t, cl, req)
	if task.Status.State != a2a.TaskStateCompleted || task.Metadata[MetaAgentID] != "agent:research" {
		t.Fatalf("task: %s", mustJSON(t, task))
	}
	parts := task.Artifacts[0].Parts
	if len(parts) != 2 || parts[0].Text() != "About fintech" || parts[1].Metadata[MetaPayloadType] != schema.PayloadResearchSummary {
		t.Errorf("result artifact: %s", mustJSON(t, parts))
	}
	data, _ := parts[1].Data().(map[string]any)
	if data["title"] != "About fintech" {
		t.Errorf("result data: %v", data)
	}
}

func TestSendStreamingMessage(t *testing.T) {
	e := newTestEnv(t, nil)
	cl := e.client(t, "echo")
	var kinds []string
	var steps []float64
	var taskID a2a.TaskID
	for ev, err := range cl.SendStreamingMessage(ctxT(t), textMsg("slow:3")) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev := ev.(type) {
		case *a2a.Task:
			kinds = append(kinds, "task:"+string(ev.Status.State))
			taskID = ev.ID
		case *a2a.TaskStatusUpdateEvent:
			kinds = append(kinds, "status:"+string(ev.Status.State))
			if ev.Status.Message != nil {
				steps = append(steps, statusData(t, ev.Status, kindProgress)["step"].(float64))
				if !strings.HasPrefix(textOf(ev.Status.Message.Parts), "step ") {
					t.Errorf("progress text: %s", mustJSON(t, ev.Status.Message))
				}
			}
		case *a2a.TaskArtifactUpdateEvent:
			kinds = append(kinds, "artifact:"+ev.Artifact.Parts[0].Text())
		}
	}
	want := []string{"task:TASK_STATE_SUBMITTED", "status:TASK_STATE_WORKING",
		"status:TASK_STATE_WORKING", "status:TASK_STATE_WORKING", "status:TASK_STATE_WORKING",
		"artifact:echo: slow:3", "status:TASK_STATE_COMPLETED"}
	if !slices.Equal(kinds, want) {
		t.Errorf("stream:\n got %v\nwant %v", kinds, want)
	}
	if !slices.Equal(steps, []float64{1, 2, 3}) {
		t.Errorf("progress steps %v, want in order", steps)
	}
	// Every progress event of the store was on the stream.
	if n := len(e.Events(store.Query{TaskID: string(taskID), TypePrefix: "task.progress"})); n != 3 {
		t.Errorf("%d progress events stored", n)
	}
}

func TestTaskStates(t *testing.T) {
	t.Parallel() // waits for a max_runtime_sec of 1 s
	e := newTestEnv(t, nil)
	cl := e.client(t, "")
	for _, tc := range []struct {
		text, agent string
		state       a2a.TaskState
		code        protocol.Code
	}{
		{"fail:disk full", "echo", a2a.TaskStateFailed, protocol.CodeToolFailed},
		// Failing with INPUT_REQUIRED is not asking (Task.Ask): the task ended.
		{"input:which market?", "echo", a2a.TaskStateFailed, protocol.CodeInputRequired},
		{"block:", "quick", a2a.TaskStateFailed, protocol.CodeTimeout},
		{"panic:x", "echo", a2a.TaskStateFailed, protocol.CodeInternal},
	} {
		t.Run(tc.text, func(t *testing.T) {
			req := textMsg(tc.text)
			req.Metadata = map[string]any{MetaRequires: []any{"skill:" + tc.agent}}
			task := send(t, cl, req)
			if task.Status.State != tc.state {
				t.Fatalf("state %s, want %s: %s", task.Status.State, tc.state, mustJSON(t, task.Status))
			}
			ep := statusData(t, task.Status, kindError)
			if ep["code"] != string(tc.code) {
				t.Errorf("error data %v, want code %s", ep, tc.code)
			}
			if tc.code == protocol.CodeInputRequired && textOf(task.Status.Message.Parts) != "which market?" {
				t.Errorf("question: %s", mustJSON(t, task.Status.Message))
			}
			if strings.Contains(mustJSON(t, task), "secret") {
				t.Errorf("internal detail leaked: %s", mustJSON(t, task.Status))
			}
		})
	}
}

func TestCancelTask(t *testing.T) {
	e := newTestEnv(t, nil)
	cl := e.client(t, "echo")
	ctx := ctxT(t)
	var states []a2a.TaskState
	for ev, err := range cl.SendStreamingMessage(ctx, textMsg("slow:500:20")) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev := ev.(type) {
		case *a2a.TaskStatusUpdateEvent:
			states = append(states, ev.Status.State)
			if ev.Status.Message != nil && len(states) == 3 { // after two progress events
				task, err := cl.CancelTask(ctx, &a2a.CancelTaskRequest{ID: ev.TaskID})
				if err != nil {
					t.Fatal(err)
				}
				if task.Status.State != a2a.TaskStateCanceled {
					t.Errorf("CancelTask answered %s", task.Status.State)
				}
				if _, err := cl.CancelTask(ctx, &a2a.CancelTaskRequest{ID: ev.TaskID}); !errors.Is(err, a2a.ErrTaskNotCancelable) {
					t.Errorf("second cancel: %v", err)
				}
			}
		}
	}
	if last := states[len(states)-1]; last != a2a.TaskStateCanceled {
		t.Errorf("stream ended with %s (%v)", last, states)
	}
}

func TestSubscribeToTask(t *testing.T) {
	e := newTestEnv(t, nil)
	cl := e.client(t, "echo")
	req := textMsg("slow:4:30")
	req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
	task := send(t, cl, req)
	if task.Status.State.Terminal() {
		t.Fatalf("returnImmediately answered a finished task: %s", task.Status.State)
	}
	var first a2a.Event
	var last a2a.TaskState
	for ev, err := range cl.SubscribeToTask(ctxT(t), &a2a.SubscribeToTaskRequest{ID: task.ID}) {
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = ev
		}
		if su, ok := ev.(*a2a.TaskStatusUpdateEvent); ok {
			last = su.Status.State
		}
	}
	if _, ok := first.(*a2a.Task); !ok {
		t.Errorf("first event %T, want the Task", first)
	}
	if last != a2a.TaskStateCompleted {
		t.Errorf("subscription ended with %s", last)
	}
	for _, err := range cl.SubscribeToTask(ctxT(t), &a2a.SubscribeToTaskRequest{ID: task.ID}) {
		if !errors.Is(err, a2a.ErrUnsupportedOperation) {
			t.Errorf("subscribing to a finished task: %v", err)
		}
	}
}

func TestListTasks(t *testing.T) {
	e := newTestEnv(t, nil)
	cl := e.client(t, "echo")
	var ids []a2a.TaskID
	for i := range 5 {
		req := textMsg("hi")
		req.Message.ContextID = "ctx-list"
		if i == 4 {
			req.Message.ContextID = "ctx-other"
		}
		ids = append(ids, send(t, cl, req).ID)
	}
	resp, err := cl.ListTasks(ctxT(t), &a2a.ListTasksRequest{ContextID: "ctx-list", PageSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	// Newest first; totalSize counts the context's four tasks.
	if resp.TotalSize != 4 || len(resp.Tasks) != 3 || resp.NextPageToken == "" || resp.Tasks[0].ID != ids[3] || resp.Tasks[2].ID != ids[1] || resp.Tasks[0].Artifacts != nil {
		t.Fatalf("page 1: %s", mustJSON(t, resp))
	}
	resp, err = cl.ListTasks(ctxT(t), &a2a.ListTasksRequest{ContextID: "ctx-list", PageSize: 3, PageToken: resp.NextPageToken, IncludeArtifacts: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Tasks) != 1 || resp.Tasks[0].ID != ids[0] || resp.NextPageToken != "" || len(resp.Tasks[0].Artifacts) != 1 {
		t.Fatalf("page 2: %s", mustJSON(t, resp))
	}
	all, _ := cl.ListTasks(ctxT(t), &a2a.ListTasksRequest{Status: a2a.TaskStateCompleted})
	if all.TotalSize != 5 || len(all.Tasks) != 5 {
		t.Errorf("all completed: %d", all.TotalSize)
	}
	if _, err := cl.ListTasks(ctxT(t), &a2a.ListTasksRequest{PageSize: 101}); !errors.Is(err, a2a.ErrInvalidParams) {
		t.Errorf("pageSize 101: %v", err)
	}
	// Tasks that did not come in over A2A are not listed.
	if _, err := e.Run(e.Request(PayloadContent, Content{Text: "direct"})); err != nil {
		t.Fatal(err)
	}
	all, _ = cl.ListTasks(ctxT(t), &a2a.ListTasksRequest{})
	if all.TotalSize != 5 {
		t.Errorf("a direct task was listed: %d", all.TotalSize)
	}
}

func TestServerErrors(t *testing.T) {
	e := newTestEnv(t, &ServerOptions{MaxBodyBytes: 4 << 10})
	cl := e.client(t, "echo")
	ctx := ctxT(t)
	if _, err := cl.GetTask(ctx, &a2a.GetTaskRequest{ID: "task_nope"}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("unknown task: %v", err)
	}
	if _, err := cl.CancelTask(ctx, &a2a.CancelTaskRequest{ID: "task_nope"}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("cancel unknown task: %v", err)
	}
	if _, err := cl.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: "x", URL: "http://127.0.0.1:1"}); !errors.Is(err, a2a.ErrPushNotificationNotSupported) {
		t.Errorf("push config: %v", err)
	}
	if _, err := cl.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser)}); !errors.Is(err, a2a.ErrInvalidParams) {
		t.Errorf("message without parts: %v", err)
	}
	bad := textMsg("x")
	bad.Metadata = map[string]any{MetaRequires: "skill:echo"}
	if _, err := cl.SendMessage(ctx, bad); !errors.Is(err, a2a.ErrInvalidParams) {
		t.Errorf("requires not an array: %v", err)
	}
	// A task of the echo agent is not visible through another agent's endpoint.
	task := send(t, cl, textMsg("x"))
	if _, err := e.client(t, "research").GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("task seen through another agent: %v", err)
	}
	for _, tc := range []struct{ name, body, want string }{
		{"unknown method", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}`, `"code":-32601`},
		{"extended card", `{"jsonrpc":"2.0","id":1,"method":"GetExtendedAgentCard","params":{}}`, `"code":-32004`},
		{"not JSON", `{"jsonrpc":`, `"code":-32700`},
		{"version 0.3", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}`, `"code":-32009`},
		{"version 1.1", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}`, `"code":-32001`},
		{"no version", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}`, `"code":-32001`},
	} {
		version := "1.0"
		if v, ok := strings.CutPrefix(tc.name, "version "); ok {
			version = v
		} else if tc.name == "no version" {
			version = ""
		}
		status, _, body := httpDo(t, "POST", e.hs.URL+RPCPath, tc.body, "Content-Type", "application/json", "A2A-Version", version)
		if status != 200 || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s", tc.name, status, body)
		}
	}
	big := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"` + strings.Repeat("x", 5<<10) + `"}]}}}`
	if status, _, body := httpDo(t, "POST", e.hs.URL+RPCPath, big, "Content-Type", "application/json"); status != 413 || !strings.Contains(body, `"code":-32600`) {
		t.Errorf("body over the limit: %d %s", status, body)
	}
	if status, _, _ := httpDo(t, "POST", e.hs.URL+"/agents/nobody/a2a", `{}`); status != 404 {
		t.Errorf("unknown agent endpoint: %d", status)
	}

	off := newTestEnv(t, &ServerOptions{DisableStreaming: true})
	for _, err := range off.client(t, "echo").SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: "x"}) {
		if !errors.Is(err, a2a.ErrUnsupportedOperation) {
			t.Errorf("subscribe without streaming: %v", err)
		}
	}
	// The a2a-go client sends a plain SendMessage when the card declares no streaming.
	var n int
	for ev, err := range off.client(t, "echo").SendStreamingMessage(ctx, textMsg("x")) {
		if err != nil {
			t.Fatal(err)
		}
		if task, ok := ev.(*a2a.Task); !ok || task.Status.State != a2a.TaskStateCompleted {
			t.Errorf("non-streaming answer: %T", ev)
		}
		n++
	}
	if n != 1 {
		t.Errorf("%d events", n)
	}
}

func TestStreamClientGoesAway(t *testing.T) {
	e := newTestEnv(t, nil)
	cl := e.client(t, "echo")
	ctx, cancel := contextWithCancel(t)
	var taskID a2a.TaskID
	for ev, err := range cl.SendStreamingMessage(ctx, textMsg("slow:5:20")) {
		if err != nil {
			break
		}
		if task, ok := ev.(*a2a.Task); ok {
			taskID = task.ID
			cancel() // the client leaves; the task goes on
		}
	}
	// The task finishes after its stream was dropped.
	e.Await(store.Query{TaskID: string(taskID), TypePrefix: "task.result"}, nil)
}
