package rulesapi_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/gateway"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/rules"
	"github.com/clutchprotocol/clutch/rules/rulesapi"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	keyAdmin = "admin-key-0123456789abcdef" // admin
	keyHost  = "host-key-0123456789abcdefg" // submit, the drafts' author
	keyBob   = "bob-key-0123456789abcdefgh" // submit
	keyAudit = "audit-key-0123456789abcdef" // read:all
	keyNone  = "none-key-0123456789abcdefg" // no scope

	reviewMD = "# Review\n\n## Checks\n\n- tests pass\n- docs updated\n"
	setupMD  = "# Setup\n\n## Install\n\n- run make deps\n"
)

// env is a rules library behind a real gateway on a real server, over a
// bbolt file.
type env struct {
	t   *testing.T
	st  store.Store
	lib *rules.Library
	srv *httptest.Server
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, nil)
}

// newEnvWith is newEnv with the gateway's options changed by with.
func newEnvWith(t *testing.T, with func(*gateway.Options)) *env {
	t.Helper()
	ctx := context.Background()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "events.db"), &boltstore.Options{NoSync: true})
	require.NoError(t, err)
	reg, err := registry.Open(ctx, st, nil)
	require.NoError(t, err)
	schemas, err := schema.New(nil)
	require.NoError(t, err)
	r, err := router.New(st, reg, &router.Options{Validator: schemas, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	lib, err := rules.Open(ctx, st, &rules.Options{Workspace: "team", Schemas: schemas})
	require.NoError(t, err)
	h, err := rulesapi.New(lib, &rulesapi.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	keys, err := auth.APIKeys(map[string]auth.Caller{
		keyAdmin: {AgentID: "agent:lead", Scopes: []string{auth.ScopeAdmin}},
		keyHost:  {AgentID: "agent:host", Scopes: []string{auth.ScopeSubmit}},
		keyBob:   {AgentID: "agent:bob", Scopes: []string{auth.ScopeSubmit}},
		keyAudit: {AgentID: "agent:audit", Scopes: []string{auth.ScopeReadAll}},
		keyNone:  {AgentID: "agent:none"},
	})
	require.NoError(t, err)
	gopts := &gateway.Options{Auth: keys, Rules: h, Logger: slog.New(slog.DiscardHandler)}
	if with != nil {
		with(gopts)
	}
	gw, err := gateway.New(r, gopts)
	require.NoError(t, err)
	srv := httptest.NewServer(gw)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		r.Close()
		st.Close()
	})
	return &env{t: t, st: st, lib: lib, srv: srv}
}

func (e *env) do(method, path, key, body string) (int, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	require.NoError(e.t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := e.srv.Client().Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	return resp.StatusCode, b
}

// get GETs path as key, wants 200 and decodes the body into v.
func (e *env) get(path, key string, v any) {
	e.t.Helper()
	status, b := e.do("GET", path, key, "")
	require.Equal(e.t, 200, status, "GET %s: %s", path, b)
	require.NoError(e.t, json.Unmarshal(b, v), string(b))
}

// wantError checks an error answer: the status and the gateway's error
// body with the code.
func wantError(t *testing.T, status int, body []byte, wantStatus int, wantCode string) string {
	t.Helper()
	var eb struct {
		Error struct {
			Code      string `json:"code"`
			Message   string `json:"message"`
			Retryable *bool  `json:"retryable"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(body, &eb), "not an error body: %s", body)
	require.Equal(t, wantStatus, status, string(body))
	require.Equal(t, wantCode, eb.Error.Code, string(body))
	require.NotNil(t, eb.Error.Retryable, string(body))
	return eb.Error.Message
}

// seed publishes a rule and a context document and has agent:host draft
// an update of the rule and a new context document.
func (e *env) seed() (rule, ctxDoc rules.Document, created string) {
	e.t.Helper()
	ctx := context.Background()
	var err error
	rule, err = e.lib.Publish(ctx, "agent:lead", rules.Publish{Path: "rules/REVIEW.md", Content: reviewMD, Description: "review checks"})
	require.NoError(e.t, err)
	ctxDoc, err = e.lib.Publish(ctx, "agent:lead", rules.Publish{Path: "context/SETUP.md", Content: setupMD})
	require.NoError(e.t, err)
	s, err := e.lib.Session(ctx, "agent:host", "s1")
	require.NoError(e.t, err)
	_, err = s.Artifact(ctx, rules.Command{Resource: "rule", Op: "update", ID: rule.ID, Body: reviewMD + "- lint clean\n", Description: "add lint"})
	require.NoError(e.t, err)
	res, err := s.Artifact(ctx, rules.Command{Resource: "context", Op: "create", Path: "context/NEW.md", Body: "# New\n"})
	require.NoError(e.t, err)
	return rule, ctxDoc, res.ID
}

// events returns the payloads of the library events of type typ.
func (e *env) events(typ string) []map[string]any {
	e.t.Helper()
	var out []map[string]any
	for ev, err := range e.st.Read(context.Background(), store.Query{TypePrefix: typ}) {
		require.NoError(e.t, err)
		m, err := ev.Message()
		require.NoError(e.t, err)
		var p map[string]any
		require.NoError(e.t, json.Unmarshal(m.Payload, &p))
		p["_from"] = m.From.AgentID
		out = append(out, p)
	}
	return out
}

func TestAuthAndScopes(t *testing.T) {
	e := newEnv(t)
	rule, _, _ := e.seed()
	review := `{"author":"agent:host","id":"` + rule.ID + `"}`
	for _, c := range []struct {
		method, path, key, body string
		status                  int
		code                    string
	}{
		{"GET", "/v1/rules/documents", "", "", 401, "UNAUTHORIZED"},
		{"GET", "/v1/rules/documents", keyNone, "", 403, "POLICY_DENIED"},
		{"GET", "/v1/rules/drafts", keyNone, "", 403, "POLICY_DENIED"},
		{"POST", "/v1/rules/drafts/approve", keyHost, review, 403, "POLICY_DENIED"},
		{"POST", "/v1/rules/drafts/approve", keyAudit, review, 403, "POLICY_DENIED"},
		{"POST", "/v1/rules/drafts/reject", keyBob, review, 403, "POLICY_DENIED"},
		{"POST", "/v1/rules/import", keyHost, `{"files":{}}`, 403, "POLICY_DENIED"},
		{"GET", "/v1/rules/nothing", keyAdmin, "", 404, "NOT_FOUND"},
		{"DELETE", "/v1/rules/documents", keyAdmin, "", 404, "NOT_FOUND"},
		{"GET", "/v1/rules/documents/doc_missing", keyAdmin, "", 404, "NOT_FOUND"},
		{"GET", "/v1/rules/documents?x=1", keyAdmin, "", 400, "INVALID_FIELD"},
		{"POST", "/v1/rules/drafts/approve", keyAdmin, `{"author":"agent:host"}`, 400, "INVALID_FIELD"},
		{"POST", "/v1/rules/drafts/approve", keyAdmin, `{"author":"agent:host","id":"x","extra":1}`, 400, "INVALID_FIELD"},
		{"POST", "/v1/rules/drafts/approve", keyAdmin, `{"author":"agent:host","id":"doc_missing"}`, 404, "NOT_FOUND"},
		{"POST", "/v1/rules/import", keyAdmin, `{"files":{"../x.md":"#"}}`, 400, "INVALID_FIELD"},
		{"POST", "/v1/rules/import", keyAdmin, `{"files":{"/abs.md":"#"}}`, 400, "INVALID_FIELD"},
	} {
		status, b := e.do(c.method, c.path, c.key, c.body)
		wantError(t, status, b, c.status, c.code)
	}
	// Nothing above changed the library.
	assert.Len(t, e.lib.Drafts(), 2)
	assert.Empty(t, e.events(string(rules.TypeDraftRejected)))
}

func TestDocuments(t *testing.T) {
	e := newEnv(t)
	rule, ctxDoc, _ := e.seed()
	var list rulesapi.DocumentList
	e.get("/v1/rules/documents", keyBob, &list)
	assert.Equal(t, e.lib.WorkspaceID(), list.Workspace)
	require.Len(t, list.Documents, 2)
	assert.Equal(t, ctxDoc.ID, list.Documents[0].ID) // sorted by path
	assert.Equal(t, rule.ID, list.Documents[1].ID)
	assert.Equal(t, "review checks", list.Documents[1].Description)
	assert.Nil(t, list.Documents[1].Text)
	e.get("/v1/rules/documents?text=true", keyAudit, &list)
	require.NotNil(t, list.Documents[1].Text)
	assert.Equal(t, reviewMD, *list.Documents[1].Text)

	var doc rulesapi.DocumentView
	e.get("/v1/rules/documents/"+rule.ID, keyBob, &doc)
	assert.Equal(t, rule.Hash, doc.Hash)
	require.NotNil(t, doc.Text)
	assert.Equal(t, reviewMD, *doc.Text)
	var ids []string
	for _, c := range doc.Constraints {
		ids = append(ids, c.ID)
	}
	assert.Equal(t, []string{"Checks", "Checks/1", "Checks/2"}, ids)
}

func TestDraftsVisibility(t *testing.T) {
	e := newEnv(t)
	rule, _, created := e.seed()
	var all rulesapi.DraftList
	e.get("/v1/rules/drafts", keyAdmin, &all)
	require.Len(t, all.Drafts, 2)
	byID := map[string]rulesapi.DraftView{}
	for _, d := range all.Drafts {
		assert.Equal(t, "agent:host", d.Author)
		byID[d.ID] = d
	}
	upd := byID[rule.ID]
	assert.Equal(t, "update", upd.Op)
	assert.Equal(t, reviewMD, upd.BaseText)
	assert.Equal(t, reviewMD+"- lint clean\n", upd.Text)
	assert.Equal(t, rule.Hash, upd.BaseHash)
	assert.False(t, upd.Conflict)
	cr := byID[created]
	assert.Equal(t, "create", cr.Op)
	assert.Equal(t, "", cr.BaseText)
	assert.Equal(t, "# New\n", cr.Text)

	var mine rulesapi.DraftList
	e.get("/v1/rules/drafts", keyHost, &mine)
	assert.Len(t, mine.Drafts, 2, "the author sees its own drafts")
	var bobs rulesapi.DraftList
	e.get("/v1/rules/drafts", keyBob, &bobs)
	assert.Empty(t, bobs.Drafts, "a caller without read:all sees nobody else's")
	e.get("/v1/rules/drafts", keyAudit, &bobs)
	assert.Len(t, bobs.Drafts, 2)
}

// Approving an update publishes a new version, visible in the library
// and as a published event from the reviewer naming the draft.
func TestApprove(t *testing.T) {
	e := newEnv(t)
	rule, _, created := e.seed()
	status, b := e.do("POST", "/v1/rules/drafts/approve", keyAdmin, `{"author":"agent:host","id":"`+rule.ID+`"}`)
	require.Equal(t, 200, status, string(b))
	var ap rulesapi.Approved
	require.NoError(t, json.Unmarshal(b, &ap))
	assert.Equal(t, rule.ID, ap.Document.ID)
	assert.Equal(t, 2, ap.Document.Version)
	assert.Equal(t, rules.HashContent([]byte(reviewMD+"- lint clean\n")), ap.Document.Hash)

	d, ok := e.lib.Document(rule.ID)
	require.True(t, ok)
	assert.Equal(t, 2, d.Version)
	text, _, err := e.lib.Content(context.Background(), rule.ID)
	require.NoError(t, err)
	assert.Equal(t, reviewMD+"- lint clean\n", text)

	pubs := e.events(string(rules.TypePublished))
	last := pubs[len(pubs)-1]
	assert.Equal(t, "agent:lead", last["_from"])
	assert.Equal(t, "review", last["source"])
	assert.Equal(t, "agent:host", last["draft_author"])
	assert.Equal(t, "update", last["draft_op"])
	assert.EqualValues(t, 2, last["version"])

	// The create becomes a document of its own; the queue is empty.
	status, b = e.do("POST", "/v1/rules/drafts/approve", keyAdmin, `{"author":"agent:host","id":"`+created+`"}`)
	require.Equal(t, 200, status, string(b))
	require.NoError(t, json.Unmarshal(b, &ap))
	assert.Equal(t, "context/NEW.md", ap.Document.Path)
	var list rulesapi.DraftList
	e.get("/v1/rules/drafts", keyAdmin, &list)
	assert.Empty(t, list.Drafts)
	// Approving again: no such draft.
	status, b = e.do("POST", "/v1/rules/drafts/approve", keyAdmin, `{"author":"agent:host","id":"`+created+`"}`)
	wantError(t, status, b, 404, "NOT_FOUND")
}

func TestReject(t *testing.T) {
	e := newEnv(t)
	rule, _, _ := e.seed()
	status, b := e.do("POST", "/v1/rules/drafts/reject", keyAdmin, `{"author":"agent:host","id":"`+rule.ID+`","reason":"lint is in CI already"}`)
	require.Equal(t, 204, status, string(b))
	rej := e.events(string(rules.TypeDraftRejected))
	require.Len(t, rej, 1)
	assert.Equal(t, "agent:lead", rej[0]["_from"])
	assert.Equal(t, "agent:host", rej[0]["author"])
	assert.Equal(t, "lint is in CI already", rej[0]["reason"])
	d, _ := e.lib.Document(rule.ID)
	assert.Equal(t, 1, d.Version, "a rejection publishes nothing")
	assert.Len(t, e.lib.Drafts(), 1)
}

// A draft whose document changed since is shown as conflicting, and
// approving it is refused with 409; the draft stays.
func TestApproveConflict(t *testing.T) {
	e := newEnv(t)
	rule, _, _ := e.seed()
	_, err := e.lib.Publish(context.Background(), "agent:lead", rules.Publish{ID: rule.ID, Path: rule.Path, Content: reviewMD + "- changed meanwhile\n"})
	require.NoError(t, err)
	var list rulesapi.DraftList
	e.get("/v1/rules/drafts", keyAdmin, &list)
	var found bool
	for _, d := range list.Drafts {
		if d.ID == rule.ID {
			found = true
			assert.True(t, d.Conflict)
			assert.Equal(t, reviewMD+"- changed meanwhile\n", d.BaseText, "the base is the document as it is now")
		}
	}
	require.True(t, found)
	status, b := e.do("POST", "/v1/rules/drafts/approve", keyAdmin, `{"author":"agent:host","id":"`+rule.ID+`"}`)
	msg := wantError(t, status, b, 409, "CONFLICT")
	assert.Contains(t, msg, "changed since the draft")
	assert.Len(t, e.lib.Drafts(), 2)
	d, _ := e.lib.Document(rule.ID)
	assert.Equal(t, 2, d.Version)
}

func TestImport(t *testing.T) {
	e := newEnv(t)
	e.seed()
	body, err := json.Marshal(rulesapi.Import{Files: map[string]string{
		"rules/REVIEW.md":  reviewMD,
		"rules/STYLE.md":   "# Style\n\n## Names\n\n- short\n",
		".hidden/X.md":     "skipped",
		"context/SETUP.md": setupMD,
	}})
	require.NoError(t, err)
	status, b := e.do("POST", "/v1/rules/import", keyAdmin, string(body))
	require.Equal(t, 200, status, string(b))
	var im rulesapi.Imported
	require.NoError(t, json.Unmarshal(b, &im))
	// STYLE is new; REVIEW loses its description (no manifest says it).
	assert.Equal(t, rulesapi.Imported{Published: 2, Unchanged: 1}, im)
	var list rulesapi.DocumentList
	e.get("/v1/rules/documents", keyAdmin, &list)
	assert.Len(t, list.Documents, 3)
	pubs := e.events(string(rules.TypePublished))
	assert.Equal(t, "agent:lead", pubs[len(pubs)-1]["_from"], "the importer is the caller")
	assert.Equal(t, "import", pubs[len(pubs)-1]["source"])

	// With prune, what the folder lacks goes.
	body, _ = json.Marshal(rulesapi.Import{Files: map[string]string{"rules/STYLE.md": "# Style\n\n## Names\n\n- short\n"}, Prune: true})
	status, b = e.do("POST", "/v1/rules/import", keyAdmin, string(body))
	require.Equal(t, 200, status, string(b))
	require.NoError(t, json.Unmarshal(b, &im))
	assert.Equal(t, rulesapi.Imported{Unchanged: 1, Removed: 2}, im)
}

func TestNewRefusesNoLibrary(t *testing.T) {
	_, err := rulesapi.New(nil, nil)
	assert.ErrorIs(t, err, rulesapi.ErrInvalidOptions)
}

// A body over the gateway's limit is refused with 413 before anything is
// imported.
func TestImportTooLarge(t *testing.T) {
	e := newEnvWith(t, func(o *gateway.Options) { o.MaxBodyBytes = 1024 })
	body, err := json.Marshal(rulesapi.Import{Files: map[string]string{"rules/BIG.md": strings.Repeat("x", 2048)}})
	require.NoError(t, err)
	status, b := e.do("POST", "/v1/rules/import", keyAdmin, string(body))
	wantError(t, status, b, 413, "TOO_LARGE")
	assert.Empty(t, e.lib.Documents())
}
