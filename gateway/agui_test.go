package gateway

import (
	"bufio"
	"net/http"
	"strings"
	"testing"

	"github.com/clutchprotocol/clutch/gateway/agui"
)

// TestAGUIMounted: package agui's handler, mounted by the gateway, starts
// a run from a RunAgentInput as the authenticated caller and streams it
// as AG-UI events; the run is then the caller's in the gateway's lists.
func TestAGUIMounted(t *testing.T) {
	e := newEnv(t, nil)
	h, err := agui.New(e.r, &agui.Options{Agent: "agent:echo"})
	if err != nil {
		t.Fatal(err)
	}
	e = newEnvOver(t, e, &Options{AGUI: h})
	resp := e.resp("POST", "/v1/agui", keyAlice, `{"threadId":"t1","runId":"r1","messages":[{"id":"u1","role":"user","content":"hello"}]}`,
		http.Header{"Content-Type": {"application/json"}, "Accept": {"text/event-stream"}})
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("POST /v1/agui: %d", resp.StatusCode)
	}
	var types []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			_, rest, _ := strings.Cut(d, `"type":"`)
			typ, _, _ := strings.Cut(rest, `"`)
			types = append(types, typ)
		}
	}
	if len(types) < 2 || types[0] != "RUN_STARTED" || types[len(types)-1] != "RUN_FINISHED" {
		t.Fatalf("AG-UI events %v", types)
	}
	var runs struct{ Runs []wireSummary }
	e.getJSON("/v1/runs", keyAlice, 200, &runs)
	if len(runs.Runs) != 1 || runs.Runs[0].Owner != "agent:alice" || runs.Runs[0].ID != resp.Header.Get("X-Clutch-Run-Id") {
		t.Fatalf("alice's runs after the AG-UI run: %+v (header %q)", runs.Runs, resp.Header.Get("X-Clutch-Run-Id"))
	}
	resp = e.resp("POST", "/v1/agui", "", `{}`, nil)
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("AG-UI without a key: %d", resp.StatusCode)
	}
}
