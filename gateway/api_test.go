package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
)

func forStores(t *testing.T, f func(t *testing.T, e *env)) {
	for _, bolt := range []bool{false, true} {
		name := "memstore"
		if bolt {
			name = "boltstore"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f(t, newEnv(t, &envOptions{bolt: bolt}))
		})
	}
}

// GET /v1/runs and /v1/threads name each run by its ask and say which
// agents took its tasks and what failed, under the JSON names of
// store.Summary; empty ones are left out.
func TestListsTitlesAgentsAndFailures(t *testing.T) {
	forStores(t, func(t *testing.T, e *env) {
		ok := e.runTask(keyAlice, `{"text":"  Compare the\nNordic payment rails "}`)
		bad := e.runTask(keyAlice, `{"query":"Book the venue","fail":"the booking site is down"}`)
		var raw struct {
			Runs []map[string]json.RawMessage `json:"runs"`
		}
		e.getJSON("/v1/runs", keyAlice, 200, &raw)
		if len(raw.Runs) != 2 {
			t.Fatalf("%d runs, want 2", len(raw.Runs))
		}
		failed, completed := raw.Runs[0], raw.Runs[1]
		for name, want := range map[string]string{
			"id": `"` + bad.RunID + `"`, "title": `"Book the venue"`, "status": `"failed"`, "agents": `["agent:echo"]`,
			"failure": `{"task_id":"` + bad.TaskID + `","agent_id":"agent:echo","code":"TOOL_FAILED","message":"the booking site is down"}`,
		} {
			if got := string(failed[name]); got != want {
				t.Errorf("failed run: %q is %s, want %s", name, got, want)
			}
		}
		if got := string(completed["title"]); got != `"Compare the Nordic payment rails"` || string(completed["id"]) != `"`+ok.RunID+`"` {
			t.Errorf("completed run: title %s", got)
		}
		var size int64 // "bytes": the stored size of the run's events
		for ev, err := range e.st.Read(t.Context(), store.Query{RunID: bad.RunID}) {
			if err != nil {
				t.Fatal(err)
			}
			size += int64(len(ev.Raw))
		}
		if got := string(failed["bytes"]); got != strconv.FormatInt(size, 10) || size == 0 {
			t.Errorf("failed run: bytes %s, its events hold %d", got, size)
		}
		for _, name := range []string{"failure", "waiting", "agents_more"} {
			if v, ok := completed[name]; ok {
				t.Errorf("completed run: %q is %s, want it left out", name, v)
			}
		}
		var threads struct {
			Threads []wireSummary `json:"threads"`
		}
		e.getJSON("/v1/threads", keyAlice, 200, &threads)
		if len(threads.Threads) != 2 || threads.Threads[0].Title != "Book the venue" || threads.Threads[0].Failure == nil ||
			threads.Threads[0].Failure.Code != protocol.CodeToolFailed {
			t.Fatalf("threads: %+v", threads.Threads)
		}
	})
}

func TestUnauthenticated(t *testing.T) {
	e := newEnv(t, nil)
	a := e.runTask(keyAlice, `{"secret":"s3cr3t"}`)
	paths := []string{
		"/v1/agents", "/v1/runs", "/v1/threads", "/v1/runs/" + a.RunID + "/events",
		"/v1/threads/" + a.ThreadID + "/events", "/v1/tasks/" + a.TaskID + "/events",
		"/v1/runs/" + a.RunID + "/tree", "/v1/tasks/" + a.TaskID + "/tree", "/v1/runs/" + a.RunID + "/decisions",
		"/v1/stream", "/v1/ws", "/v1/artifacts/artifact:sha256:" + strings.Repeat("0", 64), "/v1/nothing",
	}
	for _, key := range []string{"", "wrong-key-0123456789abcdef"} {
		for _, p := range paths {
			resp := e.resp("GET", p, key, "", nil)
			body := new(bytes.Buffer)
			body.ReadFrom(resp.Body)
			resp.Body.Close()
			wantError(t, "GET "+p, resp.StatusCode, body.Bytes(), http.StatusUnauthorized, "UNAUTHORIZED")
			if resp.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("GET %s: 401 without WWW-Authenticate", p)
			}
			for _, leak := range []string{"s3cr3t", a.RunID, "agent:alice"} {
				if bytes.Contains(body.Bytes(), []byte(leak)) {
					t.Errorf("GET %s: the 401 body %s holds %q", p, body, leak)
				}
			}
		}
		status, body := e.do("POST", "/v1/messages", key, `{"type":"chat.message","payload":{"text":"hi"}}`)
		wantError(t, "POST unauthenticated", status, body, 401, "UNAUTHORIZED")
	}
	if n, _ := e.st.LastSeq(t.Context()); n == 0 {
		t.Fatal("no events")
	}
	// /healthz needs nothing and says nothing.
	status, body := e.do("GET", "/healthz", "", "")
	if status != 200 || string(body) != "ok" {
		t.Fatalf("/healthz: %d %q", status, body)
	}
}

func TestSubmitTaskAndRead(t *testing.T) {
	forStores(t, func(t *testing.T, e *env) {
		a := e.runTask(keyAlice, `{"q":"hello"}`)
		if a.Seq == 0 || a.RunID == "" || a.TaskID == "" || a.Type != protocol.TypeTaskRequest {
			t.Fatalf("accepted: %+v", a)
		}
		// The request is stamped with the caller.
		ev, err := e.st.Get(t.Context(), a.ID)
		if err != nil || ev.Seq != a.Seq {
			t.Fatalf("Get(%s): %d %v; want seq %d", a.ID, ev.Seq, err, a.Seq)
		}
		m, _ := ev.Message()
		if m.From.AgentID != "agent:alice" {
			t.Fatalf("from = %s, want agent:alice", m.From.AgentID)
		}

		var page eventsPage
		e.getJSON("/v1/runs/"+a.RunID+"/events", keyAlice, 200, &page)
		want := []string{"task.request", "routing.decision", "task.accept", "task.result"}
		if got := page.types(t); !slices.Equal(got, want) {
			t.Fatalf("run events %v, want %v", got, want)
		}
		if page.NextAfter != 0 || page.Events[0].Seq != a.Seq || len(page.Events[0].Time) != len("2006-01-02T15:04:05.000Z") {
			t.Fatalf("page: next %d, first %+v", page.NextAfter, page.Events[0])
		}
		// The message is the stored bytes, exactly.
		if !bytes.Equal(page.Events[0].Message, ev.Raw) {
			t.Fatalf("message %s\nstored %s", page.Events[0].Message, ev.Raw)
		}
		// Paging with after and limit, and a type prefix.
		var p1, p2 eventsPage
		e.getJSON("/v1/tasks/"+a.TaskID+"/events?limit=2", keyAlice, 200, &p1)
		e.getJSON("/v1/tasks/"+a.TaskID+"/events?limit=2&after="+itoa(p1.NextAfter), keyAlice, 200, &p2)
		if got := append(p1.types(t), p2.types(t)...); !slices.Equal(got, want) || p1.NextAfter == 0 {
			t.Fatalf("paged: %v (next %d)", got, p1.NextAfter)
		}
		var pt eventsPage
		e.getJSON("/v1/threads/"+a.ThreadID+"/events?type=task.re", keyAlice, 200, &pt)
		if got := pt.types(t); !slices.Equal(got, []string{"task.request", "task.result"}) {
			t.Fatalf("type=task.re: %v", got)
		}
		var dec eventsPage
		e.getJSON("/v1/runs/"+a.RunID+"/decisions", keyAlice, 200, &dec)
		if got := dec.types(t); !slices.Equal(got, []string{"routing.decision"}) {
			t.Fatalf("decisions: %v", got)
		}

		// Lists.
		var runs struct {
			Runs       []wireSummary `json:"runs"`
			NextBefore uint64        `json:"next_before"`
		}
		e.getJSON("/v1/runs", keyAlice, 200, &runs)
		if len(runs.Runs) != 1 || runs.Runs[0].ID != a.RunID || runs.Runs[0].Status != store.StatusCompleted ||
			runs.Runs[0].Owner != "agent:alice" || runs.Runs[0].Events != 4 || runs.NextBefore != 0 {
			t.Fatalf("runs: %+v", runs)
		}
		var threads struct {
			Threads []wireSummary `json:"threads"`
		}
		e.getJSON("/v1/threads", keyAlice, 200, &threads)
		if len(threads.Threads) != 1 || threads.Threads[0].ID != a.ThreadID {
			t.Fatalf("threads: %+v", threads)
		}

		// Tree.
		var tree struct {
			RunID string     `json:"run_id"`
			Tasks []wireTask `json:"tasks"`
		}
		e.getJSON("/v1/runs/"+a.RunID+"/tree", keyAlice, 200, &tree)
		if tree.RunID != a.RunID || len(tree.Tasks) != 1 || tree.Tasks[0].TaskID != a.TaskID ||
			tree.Tasks[0].Status != store.StatusCompleted || tree.Tasks[0].AgentID != "agent:echo" || tree.Tasks[0].Attempts != 1 {
			t.Fatalf("tree: %+v", tree)
		}
		e.getJSON("/v1/tasks/"+a.TaskID+"/tree", keyAlice, 200, &tree)
		if len(tree.Tasks) != 1 || tree.Tasks[0].TaskID != a.TaskID {
			t.Fatalf("task tree: %+v", tree)
		}
	})
}

func TestListPaging(t *testing.T) {
	e := newEnv(t, nil)
	var mine []string
	for i := range 7 {
		key := keyAlice
		if i%2 == 1 {
			key = keyBob
		}
		a := e.submit(key, `{"type":"chat.message","payload":{"text":"hi"}}`)
		if key == keyAlice {
			mine = append(mine, a.RunID)
		}
	}
	slices.Reverse(mine)
	type list struct {
		Runs       []wireSummary `json:"runs"`
		NextBefore uint64        `json:"next_before"`
	}
	var got []string
	before := uint64(0)
	for {
		var l list
		e.getJSON("/v1/runs?limit=2&before="+itoa(before), keyAlice, 200, &l)
		for _, s := range l.Runs {
			got = append(got, s.ID)
		}
		if l.NextBefore == 0 {
			break
		}
		before = l.NextBefore
	}
	if !slices.Equal(got, mine) {
		t.Fatalf("alice's runs paged: %v, want %v", got, mine)
	}
	var all list
	e.getJSON("/v1/runs", keyAudit, 200, &all)
	// The registry's own run (agent registrations) is reserved: read:all sees everybody's runs but not those
	// (docs/protocol.md §6.7); an admin sees them too.
	if len(all.Runs) != 7 || slices.ContainsFunc(all.Runs, func(s wireSummary) bool { return protocol.Reserved(s.ID) }) {
		t.Fatalf("read:all sees %d runs, want the 7 of the callers and no reserved one", len(all.Runs))
	}
	// An admin sees them only when it asks (system=1); anybody else never.
	var admin list
	e.getJSON("/v1/runs", keyAdmin, 200, &admin)
	if len(admin.Runs) != 7 || slices.ContainsFunc(admin.Runs, func(s wireSummary) bool { return protocol.Reserved(s.ID) }) {
		t.Fatalf("an admin sees %d runs by default, want the 7 of the callers and no reserved one", len(admin.Runs))
	}
	e.getJSON("/v1/runs?system=1", keyAdmin, 200, &admin)
	if len(admin.Runs) != 8 || !slices.ContainsFunc(admin.Runs, func(s wireSummary) bool { return s.ID == registry.DefaultRunID }) {
		t.Fatalf("an admin sees %d runs with system=1, want 7 and the registry's", len(admin.Runs))
	}
	e.getJSON("/v1/runs?system=1", keyAudit, 200, &all)
	if len(all.Runs) != 7 || slices.ContainsFunc(all.Runs, func(s wireSummary) bool { return protocol.Reserved(s.ID) }) {
		t.Fatalf("read:all with system=1 sees %d runs, want the 7 and no reserved one", len(all.Runs))
	}
	var threads struct {
		Threads []wireSummary `json:"threads"`
	}
	e.getJSON("/v1/threads", keyAdmin, 200, &threads)
	if slices.ContainsFunc(threads.Threads, func(s wireSummary) bool { return protocol.Reserved(s.ID) }) {
		t.Fatal("an admin lists a reserved thread without system=1")
	}
	e.getJSON("/v1/threads?system=1", keyAdmin, 200, &threads)
	if !slices.ContainsFunc(threads.Threads, func(s wireSummary) bool { return protocol.Reserved(s.ID) }) {
		t.Fatal("an admin does not list the reserved threads with system=1")
	}
	e.getJSON("/v1/runs/"+registry.DefaultRunID+"/events", keyAudit, 404, nil)
	e.getJSON("/v1/runs/"+registry.DefaultRunID+"/events", keyAdmin, 200, nil)
	for _, bad := range []string{"limit=0", "limit=1001", "limit=x", "before=-1", "before=1&before=2", "colour=red", "system=yes"} {
		status, body := e.do("GET", "/v1/runs?"+bad, keyAlice, "")
		wantError(t, bad, status, body, 400, "INVALID_FIELD")
	}
}

// TestScopes: a caller sees only what it started, unless it holds
// read:all; what it may not see is a 404, as if it did not exist.
func TestScopes(t *testing.T) {
	forStores(t, func(t *testing.T, e *env) {
		a := e.runTask(keyAlice, `{"q":"alice's"}`)
		for _, p := range []string{
			"/v1/runs/" + a.RunID + "/events", "/v1/threads/" + a.ThreadID + "/events", "/v1/tasks/" + a.TaskID + "/events",
			"/v1/runs/" + a.RunID + "/tree", "/v1/tasks/" + a.TaskID + "/tree", "/v1/runs/" + a.RunID + "/decisions",
			"/v1/stream?run=" + a.RunID, "/v1/stream?thread=" + a.ThreadID, "/v1/stream?task=" + a.TaskID,
			"/v1/runs/run_nonexistent/events",
		} {
			status, body := e.do("GET", p, keyBob, "")
			wantError(t, "bob GET "+p, status, body, 404, "NOT_FOUND")
			if bytes.Contains(body, []byte("alice")) {
				t.Errorf("bob GET %s: %s", p, body)
			}
			status, body = e.do("GET", p, keyNone, "")
			wantError(t, "no scope GET "+p, status, body, 403, "POLICY_DENIED")
		}
		for _, key := range []string{keyAudit, keyAdmin} {
			var page eventsPage
			e.getJSON("/v1/runs/"+a.RunID+"/events", key, 200, &page)
			if len(page.Events) != 4 {
				t.Fatalf("read:all sees %d events", len(page.Events))
			}
		}
		var runs struct{ Runs []wireSummary }
		e.getJSON("/v1/runs", keyBob, 200, &runs)
		if len(runs.Runs) != 0 {
			t.Fatalf("bob lists %+v", runs.Runs)
		}
		// Agents need the agents scope.
		status, body := e.do("GET", "/v1/agents", keyAlice, "")
		wantError(t, "alice GET /v1/agents", status, body, 403, "POLICY_DENIED")
		var agents struct {
			Agents []wireAgent `json:"agents"`
		}
		e.getJSON("/v1/agents", keyAudit, 200, &agents)
		if len(agents.Agents) != 1 || agents.Agents[0].Card.AgentID != "agent:echo" || !agents.Agents[0].Online || agents.Agents[0].SuccessRate != 1 {
			t.Fatalf("agents: %+v", agents)
		}
		// Submitting needs submit; writing into another caller's run or
		// thread, or under its task, is refused as not found.
		status, body = e.do("POST", "/v1/messages", keyAudit, `{"type":"chat.message","payload":{}}`)
		wantError(t, "audit submits", status, body, 403, "POLICY_DENIED")
		for _, b := range []string{
			`{"type":"chat.message","thread_id":"` + a.ThreadID + `","payload":{"text":"x"}}`,
			`{"type":"chat.message","run_id":"` + a.RunID + `","payload":{"text":"x"}}`,
			`{"type":"task.request","parent_task_id":"` + a.TaskID + `","requires":["skill:echo"],"payload":{}}`,
			`{"type":"task.cancel","task_id":"` + a.TaskID + `"}`,
		} {
			status, body = e.do("POST", "/v1/messages", keyBob, b)
			wantError(t, "bob posts "+b, status, body, 404, "NOT_FOUND")
		}
		// Alice may post into her own thread.
		c := e.submit(keyAlice, `{"type":"chat.message","thread_id":"`+a.ThreadID+`","payload":{"text":"more"}}`)
		if c.ThreadID != a.ThreadID {
			t.Fatalf("chat: %+v", c)
		}
	})
}

func TestSubmitStamping(t *testing.T) {
	e := newEnv(t, nil)
	for _, b := range []string{
		`{"type":"chat.message","from":{"agent_id":"agent:admin"},"payload":{}}`,
		`{"from":{"agent_id":"agent:admin"},"type":"task.request","payload":{}}`,
		`{"type":"chat.message","from":null,"payload":{}}`,
	} {
		status, body := e.do("POST", "/v1/messages", keyAlice, b)
		r := wantError(t, b, status, body, 400, "INVALID_FIELD")
		if !strings.Contains(r.Error.Message, "from") {
			t.Errorf("%s: message %q does not name from", b, r.Error.Message)
		}
	}
	for _, b := range []string{
		``, `[]`, `{"type":"task.result","payload":{}}`, `{"type":"chat.message","payload":[1]}`,
		`{"type":"chat.message","payload":{},"payload":{}}`, `{"type":"chat.message","colour":1}`,
		`{"type":"task.cancel"}`, `{"type":"chat.message","meta":"x"}`, "{\"type\":\"chat.message\",\"thread_id\":\"\xff\"}",
		`{"type":"chat.message","to":[{"agent_id":"bob"}]}`,
	} {
		status, body := e.do("POST", "/v1/messages", keyAlice, b)
		if status != 400 {
			t.Errorf("%q: %d %s, want 400", b, status, body)
		}
	}
	a := e.submit(keyAlice, `{"type":"chat.message","thread_id":"thr_mine","meta":{"ui_channel":"general","n":12345678901234567890},"payload":{"text":"<script>alert(1)</script>"}}`)
	ev, err := e.st.Get(t.Context(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := ev.Message()
	if m.From.AgentID != "agent:alice" || m.ThreadID != "thr_mine" || m.Meta["ui_channel"] != "general" || m.Meta["n"] != json.Number("12345678901234567890") {
		t.Fatalf("stored chat: %+v", m)
	}
	var threads struct{ Threads []wireSummary }
	e.getJSON("/v1/threads", keyAlice, 200, &threads)
	if len(threads.Threads) != 1 || threads.Threads[0].Channel != "general" {
		t.Fatalf("threads: %+v", threads)
	}
	// An idempotency key makes a re-post the same task.
	b := `{"type":"task.request","requires":["skill:echo"],"idempotency_key":"k1","payload":{"n":1}}`
	first, again := e.submit(keyAlice, b), e.submit(keyAlice, b)
	if again.ID != first.ID || again.TaskID != first.TaskID || again.Seq != first.Seq || !again.Duplicate || first.Duplicate {
		t.Fatalf("re-post: %+v then %+v", first, again)
	}
	// The same key from another caller is another task.
	if other := e.submit(keyBob, b); other.TaskID == first.TaskID || other.RunID == first.RunID {
		t.Fatalf("bob's post with alice's key joined her task: %+v", other)
	}
	// Body limit.
	big := `{"type":"chat.message","payload":{"text":"` + strings.Repeat("x", DefaultMaxBodyBytes) + `"}}`
	status, body := e.do("POST", "/v1/messages", keyAlice, big)
	wantError(t, "big body", status, body, 413, "TOO_LARGE")
}

func TestCancel(t *testing.T) {
	forStores(t, func(t *testing.T, e *env) {
		a := e.submit(keyAlice, `{"type":"task.request","requires":["skill:echo"],"payload":{"block":true}}`)
		status, body := e.do("POST", "/v1/messages", keyBob, `{"type":"task.cancel","task_id":"`+a.TaskID+`"}`)
		wantError(t, "bob cancels", status, body, 404, "NOT_FOUND")
		c := e.submit(keyAlice, `{"type":"task.cancel","task_id":"`+a.TaskID+`","payload":{"message":"changed my mind"}}`)
		if c.Type != protocol.TypeTaskCancel || c.Seq == 0 || c.TaskID != a.TaskID {
			t.Fatalf("cancel: %+v", c)
		}
		var runs struct{ Runs []wireSummary }
		e.getJSON("/v1/runs", keyAlice, 200, &runs)
		if runs.Runs[0].Status != store.StatusCancelled {
			t.Fatalf("run after cancel: %+v", runs.Runs[0])
		}
		// Cancelling an ended task is a conflict.
		status, body = e.do("POST", "/v1/messages", keyAlice, `{"type":"task.cancel","task_id":"`+a.TaskID+`"}`)
		wantError(t, "cancel again", status, body, 409, "CONFLICT")
		// read:all may cancel anybody's task; the event says who asked.
		b := e.submit(keyBob, `{"type":"task.request","requires":["skill:echo"],"payload":{"block":true}}`)
		c = e.submit(keyAdmin, `{"type":"task.cancel","task_id":"`+b.TaskID+`"}`)
		ev, err := e.st.Get(t.Context(), c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(ev.Raw, []byte("agent:admin")) {
			t.Fatalf("the cancel does not say who asked: %s", ev.Raw)
		}
	})
}

func TestArtifacts(t *testing.T) {
	e := newEnv(t, nil)
	ref, err := e.st.PutArtifact(t.Context(), "text/html", []byte("<script>alert(1)</script>"))
	if err != nil {
		t.Fatal(err)
	}
	resp := e.resp("GET", "/v1/artifacts/"+ref, keyAlice, "", nil)
	body := new(bytes.Buffer)
	body.ReadFrom(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || body.String() != "<script>alert(1)</script>" || resp.Header.Get("Content-Type") != "text/html" ||
		!strings.Contains(resp.Header.Get("Content-Security-Policy"), "sandbox") || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("artifact: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	status, b := e.do("GET", "/v1/artifacts/artifact:sha256:"+strings.Repeat("a", 64), keyAlice, "")
	wantError(t, "unknown artifact", status, b, 404, "NOT_FOUND")
	status, b = e.do("GET", "/v1/artifacts/nope", keyAlice, "")
	wantError(t, "bad ref", status, b, 400, "INVALID_FIELD")
	status, b = e.do("GET", "/v1/artifacts/"+ref, keyNone, "")
	wantError(t, "no scope", status, b, 403, "POLICY_DENIED")
}

func TestCORS(t *testing.T) {
	off := newEnv(t, nil)
	resp := off.resp("GET", "/v1/runs", keyAlice, "", http.Header{"Origin": {"https://evil.example"}})
	resp.Body.Close()
	if h := resp.Header.Get("Access-Control-Allow-Origin"); h != "" {
		t.Fatalf("CORS off, yet Allow-Origin %q", h)
	}
	on := newEnv(t, &envOptions{gw: &Options{CORS: []string{"https://app.example"}}})
	pre := on.resp("OPTIONS", "/v1/runs", "", "", http.Header{"Origin": {"https://app.example"}, "Access-Control-Request-Method": {"GET"}})
	pre.Body.Close()
	if pre.StatusCode != 204 || pre.Header.Get("Access-Control-Allow-Origin") != "https://app.example" ||
		!strings.Contains(pre.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Fatalf("preflight: %d %v", pre.StatusCode, pre.Header)
	}
	resp = on.resp("GET", "/v1/runs", keyAlice, "", http.Header{"Origin": {"https://evil.example"}})
	resp.Body.Close()
	if h := resp.Header.Get("Access-Control-Allow-Origin"); h != "" {
		t.Fatalf("an origin not listed got Allow-Origin %q", h)
	}
	resp = on.resp("GET", "/v1/runs", keyAlice, "", http.Header{"Origin": {"https://app.example"}})
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example" {
		t.Fatalf("listed origin: %d %v", resp.StatusCode, resp.Header)
	}
	if _, err := New(on.r, &Options{Auth: testAuth(t), CORS: []string{"*"}}); err == nil {
		t.Fatal(`CORS "*" accepted`)
	}
	if _, err := New(on.r, &Options{}); err == nil {
		t.Fatal("no Auth accepted")
	}
	if _, err := New(on.r, nil); err == nil {
		t.Fatal("nil Options accepted")
	}
}

// TestLimits: package auth's limits apply, with the gateway's error body:
// a caller over its rate gets 429, a request past MaxInFlight (a stream
// holds its slot while it lasts) gets 503, both with Retry-After.
func TestLimits(t *testing.T) {
	e := newEnv(t, &envOptions{gw: &Options{Limits: &auth.Options{Rate: 0.001, Burst: 2}}})
	for i := range 3 {
		resp := e.resp("GET", "/v1/runs", keyAlice, "", nil)
		body := new(bytes.Buffer)
		body.ReadFrom(resp.Body)
		resp.Body.Close()
		if i < 2 {
			if resp.StatusCode != 200 {
				t.Fatalf("request %d: %d %s", i, resp.StatusCode, body)
			}
			continue
		}
		wantError(t, "over the rate", resp.StatusCode, body.Bytes(), 429, "RATE_LIMITED")
		if resp.Header.Get("Retry-After") == "" {
			t.Fatal("429 without Retry-After")
		}
	}
	// Bob has his own bucket.
	if status, body := e.do("GET", "/v1/runs", keyBob, ""); status != 200 {
		t.Fatalf("bob: %d %s", status, body)
	}

	e = newEnv(t, &envOptions{gw: &Options{Limits: &auth.Options{MaxInFlight: 1}}})
	a := e.submit(keyAlice, `{"type":"chat.message","payload":{}}`)
	s, _ := e.openSSE("?thread="+a.ThreadID, keyAlice, nil)
	if _, err := s.nextEvent(); err != nil {
		t.Fatal(err)
	}
	status, body := e.do("GET", "/v1/runs", keyAlice, "")
	wantError(t, "past MaxInFlight", status, body, 503, "CAPACITY")
	s.body.Close()
}

// TestMounts: Options.AGUI is served at /v1/agui behind the gateway's
// authentication, with the prefix stripped and the caller in the context;
// Options.UI at the root, without authentication.
func TestMounts(t *testing.T) {
	agui := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := auth.FromContext(r.Context())
		if !ok {
			http.Error(w, "no caller", 500)
			return
		}
		w.Write([]byte(r.Method + " " + r.URL.Path + " " + c.AgentID))
	})
	ui := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("page " + r.URL.Path)) })
	e := newEnv(t, &envOptions{gw: &Options{AGUI: agui, Rules: agui, UI: ui}})
	for path, want := range map[string]string{"/v1/agui": "POST / agent:alice", "/v1/agui/": "POST / agent:alice", "/v1/agui/x": "POST /x agent:alice",
		"/v1/rules": "POST / agent:alice", "/v1/rules/drafts/approve": "POST /drafts/approve agent:alice"} {
		if status, body := e.do("POST", path, keyAlice, `{}`); status != 200 || string(body) != want {
			t.Errorf("POST %s: %d %q, want %q", path, status, body, want)
		}
	}
	status, body := e.do("POST", "/v1/agui", "", `{}`)
	wantError(t, "agui without a key", status, body, 401, "UNAUTHORIZED")
	status, body = e.do("GET", "/v1/rules/documents", "", "")
	wantError(t, "rules without a key", status, body, 401, "UNAUTHORIZED")
	for _, p := range []string{"/", "/ui/app.js"} {
		if status, body := e.do("GET", p, "", ""); status != 200 || string(body) != "page "+p {
			t.Errorf("GET %s: %d %q", p, status, body)
		}
	}
	// Without UI, "/" is not found; the API is unaffected.
	status, _ = newEnv(t, nil).do("GET", "/", "", "")
	if status != 404 {
		t.Fatalf("GET / without a UI: %d", status)
	}
}

// TestDelegation: a subtask (requested by the agent, in the caller's run)
// is the caller's to see; its tree is the subtree; a run in flight lists
// as running.
func TestDelegation(t *testing.T) {
	e := newEnv(t, nil)
	card := &protocol.AgentCard{V: protocol.Version, AgentID: "agent:helper", Capabilities: []protocol.Capability{{ID: "skill:help"}}}
	err := e.r.Register(t.Context(), card, func(ctx context.Context, task *router.Task) (*router.Result, error) {
		return &router.Result{Payload: json.RawMessage(`{"helped":true}`)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	a := e.runTask(keyAlice, `{"delegate":true}`)
	var tree struct {
		Tasks []wireTask `json:"tasks"`
	}
	e.getJSON("/v1/runs/"+a.RunID+"/tree", keyAlice, 200, &tree)
	if len(tree.Tasks) != 1 || len(tree.Tasks[0].Children) != 1 {
		t.Fatalf("tree: %+v", tree)
	}
	sub := tree.Tasks[0].Children[0]
	if sub.ParentTaskID != a.TaskID || sub.Status != store.StatusCompleted {
		t.Fatalf("subtask: %+v", sub)
	}
	e.getJSON("/v1/tasks/"+sub.TaskID+"/tree", keyAlice, 200, &tree)
	if len(tree.Tasks) != 1 || tree.Tasks[0].TaskID != sub.TaskID || len(tree.Tasks[0].Children) != 0 {
		t.Fatalf("subtree: %+v", tree)
	}
	var page eventsPage
	e.getJSON("/v1/tasks/"+sub.TaskID+"/events", keyAlice, 200, &page)
	if got := page.types(t); len(got) != 4 || mustDecode(t, page.Events[0].Message).From.AgentID != "agent:echo" || sub.AgentID != "agent:helper" {
		t.Fatalf("subtask events %v", got)
	}
	status, body := e.do("GET", "/v1/tasks/"+sub.TaskID+"/events", keyBob, "")
	wantError(t, "bob reads the subtask", status, body, 404, "NOT_FOUND")

	b := e.submit(keyAlice, `{"type":"task.request","requires":["skill:echo"],"payload":{"block":true}}`)
	var runs struct{ Runs []wireSummary }
	e.getJSON("/v1/runs", keyAlice, 200, &runs)
	if runs.Runs[0].ID != b.RunID || runs.Runs[0].Status != store.StatusRunning || runs.Runs[0].Tasks != 1 || runs.Runs[0].Ended != 0 {
		t.Fatalf("run in flight: %+v", runs.Runs[0])
	}
	tree.Tasks = nil
	e.getJSON("/v1/tasks/"+b.TaskID+"/tree", keyAlice, 200, &tree)
	// Not ended yet: requested ("pending" until the agent's accept is
	// stored) or running.
	if len(tree.Tasks) != 1 || tree.Tasks[0].TaskID != b.TaskID || (tree.Tasks[0].Status != store.StatusRunning && tree.Tasks[0].Status != "pending") {
		t.Fatalf("task in flight: %+v", tree.Tasks[0])
	}
	if runs.Runs[1].ID != a.RunID || runs.Runs[1].Tasks != 2 || runs.Runs[1].Ended != 2 || runs.Runs[1].Status != store.StatusCompleted {
		t.Fatalf("delegating run: %+v", runs.Runs[1])
	}
}

// TestPageBoundedInBytes: a page of big events ends before MaxPageBytes,
// and next_after goes on from its last event until every event was read.
func TestPageBoundedInBytes(t *testing.T) {
	e := newEnv(t, nil)
	first := e.submit(keyAlice, `{"type":"chat.message","payload":{"text":"start"}}`)
	big := `{"text":"` + strings.Repeat("x", 64<<10) + `"}`
	for range 100 { // 6.4 MiB of events
		e.submit(keyAlice, `{"type":"chat.message","run_id":"`+first.RunID+`","payload":`+big+`}`)
	}
	total, pages, after := 0, 0, uint64(0)
	for {
		status, body := e.do("GET", "/v1/runs/"+first.RunID+"/events?limit=5000&after="+itoa(after), keyAlice, "")
		if status != 200 {
			t.Fatalf("%d %s", status, body)
		}
		if len(body) > MaxPageBytes+64<<10 {
			t.Fatalf("a page of %d bytes", len(body))
		}
		var p struct {
			Events    []json.RawMessage `json:"events"`
			NextAfter uint64            `json:"next_after"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			t.Fatal(err)
		}
		total += len(p.Events)
		pages++
		if p.NextAfter == 0 {
			break
		}
		after = p.NextAfter
	}
	if total != 101 || pages < 2 {
		t.Fatalf("%d events in %d pages", total, pages)
	}
}
