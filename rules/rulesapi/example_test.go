package rulesapi_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/rules"
	"github.com/clutchprotocol/clutch/rules/rulesapi"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// A reviewer approves an agent's draft through the API: the library has a
// new version of the rule.
func Example() {
	ctx := context.Background()
	st, _ := memstore.New(nil)
	defer st.Close()
	lib, _ := rules.Open(ctx, st, &rules.Options{Workspace: "team"})
	doc, _ := lib.Publish(ctx, "agent:lead", rules.Publish{Path: "rules/REVIEW.md", Content: "## Checks\n\n- tests pass\n"})
	s, _ := lib.Session(ctx, "agent:coder", "session-1")
	_, _ = s.Artifact(ctx, rules.Command{Resource: "rule", Op: "update", ID: doc.ID, Body: "## Checks\n\n- tests pass\n- docs updated\n"})

	h, _ := rulesapi.New(lib, nil)
	// The gateway mounts it behind its authentication (gateway.Options.Rules);
	// here the caller is put in the context directly.
	keys, _ := auth.APIKeys(map[string]auth.Caller{"reviewer-key-0123456789": {AgentID: "agent:lead", Scopes: []string{auth.ScopeAdmin}}})
	srv := httptest.NewServer(auth.Middleware(keys, nil)(h))
	defer srv.Close()

	req, _ := http.NewRequest("POST", srv.URL+"/drafts/approve", strings.NewReader(`{"author":"agent:coder","id":"`+doc.ID+`"}`))
	req.Header.Set("Authorization", "Bearer reviewer-key-0123456789")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	d, _ := lib.Document(doc.ID)
	fmt.Println(resp.StatusCode, "version", d.Version)
	// Output: 200 version 2
}
