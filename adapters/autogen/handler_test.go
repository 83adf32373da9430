package autogen_test

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

	"github.com/clutchprotocol/clutch/adapters/autogen"
	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
)

const (
	kenKey    = "ken-key-0123456789abcdef"
	bobKey    = "bob-key-0123456789abcdef"
	readerKey = "reader-key-0123456789abcdef"
)

type endpoint struct {
	h   *autogen.Handler
	st  store.Store
	mux *http.ServeMux
	srv *httptest.Server
}

// newEndpoint serves a Handler over a router on a bbolt file, mounted at
// POST /autogen/runs/{run}.
func newEndpoint(t testing.TB, opts *autogen.HandlerOptions) *endpoint {
	t.Helper()
	return newEndpointWith(t, opts, nil)
}

func newEndpointWith(t testing.TB, opts *autogen.HandlerOptions, regOpts *registry.Options) *endpoint {
	t.Helper()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "clutch.db"), &boltstore.Options{NoSync: true})
	require.NoError(t, err)
	return newEndpointOn(t, st, opts, regOpts)
}

// newEndpointOn is newEndpointWith on st, which it closes at the end.
func newEndpointOn(t testing.TB, st store.Store, opts *autogen.HandlerOptions, regOpts *registry.Options) *endpoint {
	t.Helper()
	ctx := context.Background()
	reg, err := registry.Open(ctx, st, regOpts)
	require.NoError(t, err)
	sch, err := schema.New(nil)
	require.NoError(t, err)
	r, err := router.New(st, reg, &router.Options{Validator: sch, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	keys, err := auth.APIKeys(map[string]auth.Caller{
		kenKey:    {AgentID: "agent:ken", Scopes: []string{auth.ScopeSubmit}},
		bobKey:    {AgentID: "agent:bob", Scopes: []string{auth.ScopeSubmit}},
		readerKey: {AgentID: "agent:reader"},
	})
	require.NoError(t, err)
	if opts == nil {
		opts = &autogen.HandlerOptions{}
	}
	opts.Auth = keys
	opts.Adapter = autogen.New(&autogen.Options{Now: fixedNow})
	h, err := autogen.NewHandler(r, opts)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("POST /autogen/runs/{run}", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { srv.Close(); r.Close(); st.Close() })
	return &endpoint{h: h, st: st, mux: mux, srv: srv}
}

func (e *endpoint) post(t *testing.T, run, key, contentType string, body []byte, headers ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", e.srv.URL+"/autogen/runs/"+run, strings.NewReader(string(body)))
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	req.Header.Set("Content-Type", contentType)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

// lastSeq counts the stored events outside the reserved system runs (the
// store's secret, made when the first run id is derived, is one of those).
func (e *endpoint) lastSeq(t testing.TB) uint64 {
	var n uint64
	for ev, err := range e.st.Read(context.Background(), store.Query{}) {
		require.NoError(t, err)
		if m, err := ev.Message(); err == nil && !protocol.Reserved(m.RunID) {
			n++
		}
	}
	return n
}

func (e *endpoint) run(t *testing.T, runID string) []*protocol.Message {
	var out []*protocol.Message
	for ev, err := range e.st.Read(context.Background(), store.Query{RunID: runID}) {
		require.NoError(t, err)
		m, err := ev.Message()
		require.NoError(t, err)
		out = append(out, m)
	}
	return out
}

func answer(t *testing.T, b []byte) autogen.Answer {
	var a autogen.Answer
	require.NoError(t, json.Unmarshal(b, &a), string(b))
	return a
}

const ndjson = "application/x-ndjson"

func TestHandlerNeedsCredentials(t *testing.T) {
	e := newEndpoint(t, nil)
	body := read(t, "agentchat_tool_call_round.jsonl")
	status, _ := e.post(t, "r1", "", ndjson, body)
	assert.Equal(t, http.StatusUnauthorized, status)
	status, _ = e.post(t, "r1", "wrong-key-0123456789abcdef", ndjson, body)
	assert.Equal(t, http.StatusUnauthorized, status)
	status, b := e.post(t, "r1", readerKey, ndjson, body)
	assert.Equal(t, http.StatusForbidden, status, string(b))
	assert.Zero(t, e.lastSeq(t), "a refused request stores nothing")
}

// JSON lines: one run, in order, the agents under the caller's name.
func TestHandlerJSONLines(t *testing.T) {
	e := newEndpoint(t, nil)
	status, b := e.post(t, "r1", kenKey, ndjson, read(t, "agentchat_tool_call_round.jsonl"))
	require.Equal(t, http.StatusOK, status, string(b))
	a := answer(t, b)
	assert.Equal(t, 4, a.Stored)
	msgs := e.run(t, a.RunID)
	require.Equal(t, []protocol.Type{tReq, tCall, tRes, tChat}, types(msgs))
	for i, m := range msgs {
		assert.Equal(t, a.Events[i].ID, m.ID)
		assert.Equal(t, a.TaskID, m.TaskID)
		assert.Equal(t, a.ThreadID, m.ThreadID)
		assert.Equal(t, "agent:ken", m.Meta[autogen.MetaOwner])
	}
	// The first event of the new run is the caller's own, so the caller
	// owns the run (docs/protocol.md §6.7); the AutoGen source stays in
	// meta.
	assert.Equal(t, "agent:ken", msgs[0].From.AgentID)
	assert.Equal(t, "user", msgs[0].Meta[autogen.MetaSourceName])
	assert.Equal(t, "agent:ken/assistant", msgs[1].From.AgentID)
	owner, ok, err := auth.Owner(context.Background(), e.st, auth.KindRun, a.RunID)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "agent:ken", owner)

	// Another caller with the same run name gets another run.
	status, b = e.post(t, "r1", bobKey, ndjson, read(t, "agentchat_tool_call_round.jsonl"))
	require.Equal(t, http.StatusOK, status, string(b))
	assert.NotEqual(t, a.RunID, answer(t, b).RunID)
	assert.Equal(t, 4, answer(t, b).Stored)
}

// One message per request: the same run, in the order posted; only the
// first user message starts the task.
func TestHandlerOnePerRequest(t *testing.T) {
	e := newEndpoint(t, nil)
	var runID string
	ls := lines(t, "agentchat_streaming_chunks.jsonl")
	for _, l := range ls[:18] {
		status, b := e.post(t, "s1", kenKey, "application/json", l)
		require.Equal(t, http.StatusOK, status, string(b))
		runID = answer(t, b).RunID
	}
	msgs := e.run(t, runID)
	require.Len(t, msgs, 18)
	assert.Equal(t, tReq, msgs[0].Type)
	var text strings.Builder
	for _, m := range msgs[1:17] {
		assert.Equal(t, tProg, m.Type)
		var p struct{ Text string }
		require.NoError(t, json.Unmarshal(m.Payload, &p))
		text.WriteString(p.Text)
	}
	assert.Equal(t, "Two cities in South America are Buenos Aires in Argentina and São Paulo in Brazil.", text.String(), "the chunks are stored in order")
	// A user message after the start is a chat.message.
	status, b := e.post(t, "s1", kenKey, "application/json", ls[0])
	require.Equal(t, http.StatusOK, status, string(b))
	assert.Equal(t, tChat, answer(t, b).Events[0].Type)
}

func TestHandlerIdempotency(t *testing.T) {
	e := newEndpoint(t, nil)
	// Messages with AutoGen ids dedup by id.
	body := read(t, "agentchat_events_constructed.jsonl")
	status, b := e.post(t, "r1", kenKey, ndjson, body)
	require.Equal(t, http.StatusOK, status, string(b))
	n := e.lastSeq(t)
	status, b = e.post(t, "r1", kenKey, ndjson, body)
	require.Equal(t, http.StatusOK, status, string(b))
	a := answer(t, b)
	// TeamState has no id: without an Idempotency-Key it is new each time.
	assert.Equal(t, 1, a.Stored)
	assert.Equal(t, len(a.Events)-1, a.Duplicates)
	assert.Equal(t, n+1, e.lastSeq(t))

	// Without AutoGen ids, an Idempotency-Key makes a re-post a duplicate.
	old := read(t, "agentchat_tool_call_round.jsonl")
	status, b = e.post(t, "r2", kenKey, ndjson, old, "Idempotency-Key", "k-1")
	require.Equal(t, http.StatusOK, status, string(b))
	n = e.lastSeq(t)
	status, b = e.post(t, "r2", kenKey, ndjson, old, "Idempotency-Key", "k-1")
	require.Equal(t, http.StatusOK, status, string(b))
	assert.Equal(t, 0, answer(t, b).Stored)
	assert.Equal(t, 4, answer(t, b).Duplicates)
	assert.Equal(t, n, e.lastSeq(t), "a re-post stores nothing")
}

// A batch with one bad line stores nothing, and says which line.
func TestHandlerBadInputStoredNowhere(t *testing.T) {
	e := newEndpoint(t, &autogen.HandlerOptions{MaxBodyBytes: 1 << 16})
	good := read(t, "agentchat_tool_call_round.jsonl")
	bad := append(append([]byte{}, good...), []byte(`{"type":"TextMessage","source":"user","content":5}`+"\n")...)
	status, b := e.post(t, "r1", kenKey, ndjson, bad)
	assert.Equal(t, http.StatusBadRequest, status)
	var eb struct {
		Error, Code, Message, Path string
		Line                       int
	}
	require.NoError(t, json.Unmarshal(b, &eb), string(b))
	assert.Equal(t, "WRONG_TYPE", eb.Code)
	assert.Equal(t, 5, eb.Line)
	assert.Equal(t, "/content", eb.Path)
	assert.Zero(t, e.lastSeq(t))

	status, b = e.post(t, "r1", kenKey, "application/json", []byte(`{"type":"TextMessage",`))
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, string(b), `"code":"INVALID_JSON"`)
	status, b = e.post(t, "r1", kenKey, "application/json", []byte(`{"a":1,"a":2}`))
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, string(b), `"code":"DUPLICATE_KEY"`)

	status, b = e.post(t, "r1", kenKey, ndjson, []byte(strings.Repeat(" ", 1<<16+1)))
	assert.Equal(t, http.StatusRequestEntityTooLarge, status)
	assert.Contains(t, string(b), `"code":"TOO_LARGE"`)

	req, _ := http.NewRequest("POST", e.srv.URL+"/autogen/runs/", strings.NewReader(string(good)))
	req.Header.Set("X-API-Key", kenKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "the mux needs a run")
	assert.Zero(t, e.lastSeq(t))
}

// Mounted without {run}, the run comes from the header.
func TestHandlerRunHeader(t *testing.T) {
	keys, err := auth.APIKeys(map[string]auth.Caller{kenKey: {AgentID: "agent:ken", Scopes: []string{auth.ScopeSubmit}}})
	require.NoError(t, err)
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "h.db"), &boltstore.Options{NoSync: true})
	require.NoError(t, err)
	defer st.Close()
	reg, _ := registry.Open(context.Background(), st, nil)
	sch, _ := schema.New(nil)
	r, err := router.New(st, reg, &router.Options{Validator: sch, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	defer r.Close()
	h, err := autogen.NewHandler(r, &autogen.HandlerOptions{Auth: keys})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	post := func(hdr string) int {
		req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(string(lines(t, "agentchat_tool_call_round.jsonl")[0])))
		req.Header.Set("X-API-Key", kenKey)
		if hdr != "" {
			req.Header.Set(autogen.HeaderRun, hdr)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusBadRequest, post(""))
	assert.Equal(t, http.StatusOK, post("session-1"))

	_, err = autogen.NewHandler(r, &autogen.HandlerOptions{})
	assert.ErrorIs(t, err, autogen.ErrInvalidOptions, "no authenticator: no handler")
}

// Every message passes the router's signature policy before anything is
// stored: a policy that wants chat messages signed refuses the batch.
func TestHandlerVerifies(t *testing.T) {
	e := newEndpointWith(t, nil, &registry.Options{Signatures: &registry.SignaturePolicy{Types: []protocol.Type{protocol.TypeChatMessage}}})
	status, b := e.post(t, "r1", kenKey, ndjson, read(t, "agentchat_tool_call_round.jsonl"))
	assert.Equal(t, http.StatusUnauthorized, status, string(b))
	assert.Contains(t, string(b), `"code":"BAD_SIGNATURE"`)
	assert.Zero(t, e.lastSeq(t))
}

func TestHandlerMethod(t *testing.T) {
	e := newEndpoint(t, nil)
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("X-API-Key", kenKey)
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, req)
	assert.Equal(t, http.StatusMethodNotAllowed, w.Code)
	assert.Equal(t, "POST", w.Header().Get("Allow"))
}

// A run posted as a stream and then as its TaskResult: the messages the
// TaskResult repeats (with AutoGen ids) are duplicates; only the end of
// the task is new.
func TestHandlerStreamThenTaskResult(t *testing.T) {
	e := newEndpoint(t, nil)
	ls := lines(t, "agentchat_events_constructed.jsonl")[:4]
	for _, l := range ls {
		status, b := e.post(t, "r1", kenKey, "application/json", l)
		require.Equal(t, http.StatusOK, status, string(b))
	}
	n := e.lastSeq(t)
	tr := `{"messages":[` + string(ls[0]) + `,` + string(ls[3]) + `],"stop_reason":"Text 'TERMINATE' mentioned"}`
	status, b := e.post(t, "r1", kenKey, "application/json", []byte(tr))
	require.Equal(t, http.StatusOK, status, string(b))
	a := answer(t, b)
	assert.Equal(t, 1, a.Stored)
	assert.Equal(t, 2, a.Duplicates)
	assert.Equal(t, n+1, e.lastSeq(t))
	msgs := e.run(t, a.RunID)
	assert.Equal(t, []protocol.Type{tReq, tProg, tProg, tChat, tResult}, types(msgs))
}
