package router

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
)

// fakeTeam is a Team that owns nothing remote: it stores an owner event
// with each request and counts tasks as told.
type fakeTeam struct {
	r      *Router
	past   atomic.Bool
	counts atomic.Int32
}

func (f *fakeTeam) Handler(string) Handler               { return nil }
func (f *fakeTeam) Dispatch(TeamTask) *protocol.Message  { return nil }
func (f *fakeTeam) Recover(context.Context) (int, error) { return 0, nil }
func (f *fakeTeam) Redelivered(context.Context, *protocol.Message) (*Handle, bool, error) {
	return nil, false, errors.New("not asked in this test")
}

func (f *fakeTeam) Owner(t TeamTask, retry bool) *protocol.Message {
	m := f.r.ids.Reply(t.Request, "x.test.owner", f.r.opts.AgentID)
	m.To = []protocol.Participant{}
	return m
}

func (f *fakeTeam) Count(_ context.Context, t TeamTask, max int) (bool, error) {
	f.counts.Add(1)
	if t.Seq == 0 || max != 1 {
		return false, errors.New("want the request's seq and MaxTasks")
	}
	return f.past.Load(), nil
}

// A Team plugged in with SetTeam stores its event with each request and
// counts Budget.MaxTasks in the router's place; one team at a time;
// Member.Leave unplugs it and the router counts again.
func TestSetTeam(t *testing.T) {
	e := newEnv(t, &Options{Budget: Budget{MaxTasks: 1}})
	e.register(card("agent:a", skill("skill:x")), ok("x"))
	f := &fakeTeam{r: e.r}
	m, err := e.r.SetTeam(f)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.r.SetTeam(&fakeTeam{r: e.r}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("a second SetTeam: %v, want ErrInvalidOptions", err)
	}
	req := e.request("skill:x")
	if out, err := e.wait(e.submit(req)); err != nil || !out.OK() {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	if got := e.types(req.TaskID); len(got) < 2 || got[1] != "x.test.owner" {
		t.Fatalf("events %v: want the team's event stored with the request", got)
	}
	f.past.Store(true)
	if _, err := e.wait(e.submit(e.request("skill:x"))); !errors.Is(err, protocol.CodeBudget) {
		t.Fatalf("a task the team counts past the budget: %v, want BUDGET", err)
	}
	if n := f.counts.Load(); n != 2 {
		t.Fatalf("the team counted %d tasks, want 2", n)
	}
	m.Leave()
	// Without the team, the router counts: a new run's first task fits.
	req = e.request("skill:x")
	if out, err := e.wait(e.submit(req)); err != nil || !out.OK() {
		t.Fatalf("after Leave: %+v, %v", out, err)
	}
	if got := e.types(req.TaskID); len(got) > 1 && got[1] == "x.test.owner" {
		t.Fatalf("events %v: the team's event after Leave", got)
	}
	if _, err := e.r.SetTeam(f); err != nil {
		t.Fatalf("SetTeam after Leave: %v", err)
	}
}
