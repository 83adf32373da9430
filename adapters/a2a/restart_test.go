package a2a

import (
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store/boltstore"
)

// process is one run of a program serving agents over A2A from a
// boltstore file.
type process struct {
	st  *boltstore.Store
	r   *router.Router
	srv *Server
	hs  *httptest.Server
}

func startProcess(t *testing.T, path string, recovery router.Recovery) *process {
	t.Helper()
	ctx := context.Background()
	st, err := boltstore.Open(path, &boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.Open(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	sch, err := schema.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := router.New(st, reg, &router.Options{Validator: sch, Logger: quiet, Recovery: recovery})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Register(ctx, card("agent:echo", nil, "skill:echo"), echo); err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(r, testOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	p := &process{st: st, r: r, srv: srv, hs: httptest.NewServer(srv)}
	t.Cleanup(p.stop)
	return p
}

func (p *process) stop() {
	p.hs.Close()
	p.r.Close()
	p.st.Close()
}

// TestTasksSurviveRestart: tasks live in the Clutch store, so a second
// process over the same boltstore file answers GetTask and ListTasks for
// the first one's tasks, and SubscribeToTask follows a task the first
// process left unfinished as the second runs it again.
func TestTasksSurviveRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clutch.db")
	ctx := ctxT(t)

	p1 := startProcess(t, path, router.RecoverFail)
	cl := newSDKClient(t, p1.hs.URL+"/agents/echo")
	done := send(t, cl, textMsg("hello"))
	// A task whose process died right after storing its request (as a
	// kill -9 would leave it): appended the way the Server submits.
	m, err := p1.r.NewRequest(tester, PayloadContent, Content{Text: "slow:3"})
	if err != nil {
		t.Fatal(err)
	}
	m.To = []protocol.Participant{{AgentID: "agent:echo"}}
	m.ThreadID = "ctx-restart"
	m.Meta = map[string]any{metaSource: SourceA2A, metaMessageID: "m-crash"}
	if _, err := p1.st.Append(ctx, m); err != nil {
		t.Fatal(err)
	}
	p1.stop()

	p2 := startProcess(t, path, router.RecoverRedispatch)
	cl2 := newSDKClient(t, p2.hs.URL+"/agents/echo")
	got, err := cl2.GetTask(ctx, &a2a.GetTaskRequest{ID: done.ID})
	if err != nil {
		t.Fatal(err)
	}
	if mustJSON(t, got) != mustJSON(t, done) {
		t.Errorf("GetTask after restart:\n got %s\nwant %s", mustJSON(t, got), mustJSON(t, done))
	}
	list, err := cl2.ListTasks(ctx, &a2a.ListTasksRequest{})
	if err != nil || list.TotalSize != 2 {
		t.Fatalf("ListTasks after restart: %v %+v", err, list)
	}

	var states []a2a.TaskState
	for ev, err := range cl2.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: a2a.TaskID(m.TaskID)}) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev := ev.(type) {
		case *a2a.Task:
			states = append(states, ev.Status.State)
			if ev.History[0].ID != "m-crash" || ev.ContextID != "ctx-restart" {
				t.Errorf("snapshot: %s", mustJSON(t, ev))
			}
			// Now recover: the unfinished task runs again, here.
			if n, err := p2.r.Recover(ctx); err != nil || n != 1 {
				t.Fatalf("Recover: %d %v", n, err)
			}
		case *a2a.TaskStatusUpdateEvent:
			states = append(states, ev.Status.State)
		}
	}
	want := []a2a.TaskState{a2a.TaskStateSubmitted, a2a.TaskStateWorking, a2a.TaskStateWorking, a2a.TaskStateWorking, a2a.TaskStateWorking, a2a.TaskStateCompleted}
	if mustJSON(t, states) != mustJSON(t, want) {
		t.Errorf("subscription after restart: %v", states)
	}
	if _, err := cl2.CancelTask(ctx, &a2a.CancelTaskRequest{ID: done.ID}); !errors.Is(err, a2a.ErrTaskNotCancelable) {
		t.Errorf("cancel a finished task: %v", err)
	}
}
