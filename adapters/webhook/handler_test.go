package webhook

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/router/routertest"
	"github.com/clutchprotocol/clutch/store"
)

var orderMapping = &Mapping{
	TypeFrom: "/event",
	Types:    map[string]protocol.Type{"order.created": protocol.TypeTaskRequest, "order.note": "x.shop.note"},
	Payload:  "/data",
	Requires: []string{"skill:echo"},
	Meta:     map[string]string{"order": "/data/order_id"},
}

func TestHandlerSubmitsTaskRequest(t *testing.T) {
	env := routertest.New(t, nil)
	echoAgent(env)
	secret := newSecret(t)
	h, err := NewHandler(env.Router, orderMapping, map[string]auth.Caller{secret: submitter}, nil)
	require.NoError(t, err)

	status, out := serve(t, h, delivery(t, secret, "msg_2a", env.Clock.Now(), `{"event":"order.created","data":{"order_id":42,"sku":"A-1"}}`))
	require.Equal(t, http.StatusOK, status, out)
	taskID := out["task_id"].(string)
	res := env.Await(store.Query{TaskID: taskID}, func(m *protocol.Message) bool { return m.Type == protocol.TypeTaskResult })
	assert.JSONEq(t, `{"order_id":42,"sku":"A-1"}`, string(res.Payload))

	req, err := env.Store.Get(context.Background(), out["id"].(string))
	require.NoError(t, err)
	m, err := req.Message()
	require.NoError(t, err)
	assert.Equal(t, "agent:shop", m.From.AgentID, "the signing sender is from")
	assert.Equal(t, "msg_2a", m.Meta[MetaID])
	assert.Equal(t, "order.created", m.Meta[MetaEvent])
	assert.Equal(t, "webhook", m.Meta["src"])
	assert.Equal(t, "42", m.Meta["order"].(interface{ String() string }).String())
	assert.True(t, strings.HasPrefix(m.IdempotencyKey, "webhook:"), m.IdempotencyKey)
}

func TestHandlerReplayWindow(t *testing.T) {
	env := routertest.New(t, nil)
	secret := newSecret(t)
	h, err := NewHandler(env.Router, &Mapping{Type: "x.shop.note"}, map[string]auth.Caller{secret: submitter}, &HandlerOptions{Tolerance: 5 * time.Minute})
	require.NoError(t, err)
	now := env.Clock.Now()
	for _, c := range []struct {
		name string
		ts   time.Time
		ok   bool
	}{
		{"now", now, true},
		{"4m59s old", now.Add(-4*time.Minute - 59*time.Second), true},
		{"4m59s ahead", now.Add(4*time.Minute + 59*time.Second), true},
		{"5m1s old", now.Add(-5*time.Minute - time.Second), false},
		{"5m1s ahead", now.Add(5*time.Minute + time.Second), false},
		{"a day old", now.Add(-24 * time.Hour), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := lastSeq(t, env)
			status, out := serve(t, h, delivery(t, secret, "id-"+strings.ReplaceAll(c.name, " ", "-"), c.ts, `{"n":1}`))
			if c.ok {
				assert.Equal(t, http.StatusOK, status, out)
				return
			}
			assert.Equal(t, http.StatusUnauthorized, status, out)
			assert.Equal(t, "BAD_SIGNATURE", out["code"])
			assert.Contains(t, out["message"], "tolerance")
			assert.Equal(t, before, lastSeq(t, env), "a refused delivery stores nothing")
		})
	}
	// The window follows the router's clock: a delivery signed now is too
	// old once the clock has moved on.
	req := delivery(t, secret, "late", now, `{"n":2}`)
	env.Clock.Advance(6 * time.Minute)
	status, _ := serve(t, h, req)
	assert.Equal(t, http.StatusUnauthorized, status)
}

func TestHandlerKeyRotation(t *testing.T) {
	env := routertest.New(t, nil)
	oldS, newS, stranger := newSecret(t), newSecret(t), newSecret(t)
	h, err := NewHandler(env.Router, &Mapping{Type: "x.shop.note"}, map[string]auth.Caller{oldS: submitter, newS: submitter}, nil)
	require.NoError(t, err)
	now := env.Clock.Now()

	for i, s := range []string{oldS, newS} {
		status, out := serve(t, h, delivery(t, s, "rot-"+string(rune('a'+i)), now, `{}`))
		assert.Equal(t, http.StatusOK, status, out)
	}
	status, out := serve(t, h, delivery(t, stranger, "rot-x", now, `{}`))
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.Equal(t, "BAD_SIGNATURE", out["code"])

	// A sender mid-rotation sends several signatures; one match is enough.
	req := delivery(t, stranger, "rot-multi", now, `{}`)
	good, err := Sign(newS, "rot-multi", now, []byte(`{}`))
	require.NoError(t, err)
	req.Header.Set(HeaderSignature, req.Header.Get(HeaderSignature)+" v1a,AAAA "+good)
	status, out = serve(t, h, req)
	assert.Equal(t, http.StatusOK, status, out)
}

func TestHandlerRefusesTamperedAndMalformed(t *testing.T) {
	env := routertest.New(t, nil)
	secret := newSecret(t)
	h, err := NewHandler(env.Router, &Mapping{Type: "x.shop.note"}, map[string]auth.Caller{secret: submitter}, nil)
	require.NoError(t, err)
	now := env.Clock.Now()
	cases := []struct {
		name   string
		edit   func(r *http.Request)
		status int
		code   string
	}{
		{"tampered body", func(r *http.Request) { r.Body = nopBody(`{"n":2}`) }, 401, "BAD_SIGNATURE"},
		{"other id", func(r *http.Request) { r.Header.Set(HeaderID, "other") }, 401, "BAD_SIGNATURE"},
		{"other timestamp", func(r *http.Request) { r.Header.Set(HeaderTimestamp, itoa(now.Unix()-1)) }, 401, "BAD_SIGNATURE"},
		{"no signature", func(r *http.Request) { r.Header.Del(HeaderSignature) }, 401, "BAD_SIGNATURE"},
		{"no id", func(r *http.Request) { r.Header.Del(HeaderID) }, 400, "MISSING_FIELD"},
		{"no timestamp", func(r *http.Request) { r.Header.Del(HeaderTimestamp) }, 400, "MISSING_FIELD"},
		{"timestamp not digits", func(r *http.Request) { r.Header.Set(HeaderTimestamp, "1e9") }, 400, "INVALID_FIELD"},
		{"only v1a", func(r *http.Request) { r.Header.Set(HeaderSignature, "v1a,AAAA") }, 401, "BAD_SIGNATURE"},
		{"no comma", func(r *http.Request) { r.Header.Set(HeaderSignature, "v1") }, 401, "BAD_SIGNATURE"},
		{"GET", func(r *http.Request) { r.Method = http.MethodGet }, 405, "INVALID_FIELD"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := delivery(t, secret, "t1", now, `{"n":1}`)
			c.edit(req)
			status, out := serve(t, h, req)
			assert.Equal(t, c.status, status, out)
			assert.Equal(t, c.code, out["code"])
			assert.Equal(t, uint64(0), lastSeq(t, env))
		})
	}
}

func TestHandlerDedupByWebhookID(t *testing.T) {
	env := routertest.New(t, nil)
	echoAgent(env)
	s1, s2 := newSecret(t), newSecret(t)
	h, err := NewHandler(env.Router, orderMapping, map[string]auth.Caller{s1: submitter, s2: other}, nil)
	require.NoError(t, err)
	now := env.Clock.Now()

	// A task.request delivered twice runs once; the answer names the first.
	body := `{"event":"order.created","data":{"order_id":1}}`
	st1, first := serve(t, h, delivery(t, s1, "evt_1", now, body))
	require.Equal(t, 200, st1, first)
	env.Await(store.Query{TaskID: first["task_id"].(string)}, func(m *protocol.Message) bool { return m.Type == protocol.TypeTaskResult })
	st2, again := serve(t, h, delivery(t, s1, "evt_1", now.Add(time.Second), body))
	require.Equal(t, 200, st2, again)
	assert.Equal(t, true, again["duplicate"])
	assert.Equal(t, first["task_id"], again["task_id"])
	assert.Equal(t, first["id"], again["id"])
	assert.Len(t, env.Events(store.Query{TypePrefix: "task.request"}), 1)

	// An extension event delivered twice is stored once.
	note := `{"event":"order.note","data":{"text":"hi"}}`
	_, n1 := serve(t, h, delivery(t, s1, "evt_2", now, note))
	_, n2 := serve(t, h, delivery(t, s1, "evt_2", now, note))
	assert.Equal(t, nil, n1["duplicate"])
	assert.Equal(t, true, n2["duplicate"])
	assert.Equal(t, n1["seq"], n2["seq"])
	assert.Equal(t, n1["id"], n2["id"])

	// The same webhook-id from another sender is another delivery.
	_, n3 := serve(t, h, delivery(t, s2, "evt_2", now, note))
	assert.Equal(t, nil, n3["duplicate"])
	assert.Len(t, env.Events(store.Query{TypePrefix: "x.shop.note"}), 2)
}

func TestHandlerMappingErrors(t *testing.T) {
	env := routertest.New(t, nil)
	secret := newSecret(t)
	m := &Mapping{TypeFrom: "/event", Types: map[string]protocol.Type{"a": "x.shop.a"}, Payload: "/data", RunID: "/run", Meta: map[string]string{"opt": "/missing/ok"}}
	h, err := NewHandler(env.Router, m, map[string]auth.Caller{secret: submitter}, nil)
	require.NoError(t, err)
	for _, c := range []struct {
		name, body, code, path string
	}{
		{"not JSON", `{"event":`, "INVALID_JSON", ""},
		{"duplicate key", `{"event":"a","event":"a","data":{},"run":"r"}`, "DUPLICATE_KEY", "/event"},
		{"invalid UTF-8", "{\"event\":\"a\xff\",\"data\":{},\"run\":\"r\"}", "INVALID_UTF8", ""},
		{"event missing", `{"data":{},"run":"r"}`, "MISSING_FIELD", "/event"},
		{"event not mapped", `{"event":"b","data":{},"run":"r"}`, "UNKNOWN_TYPE", "/event"},
		{"event an object", `{"event":{},"data":{},"run":"r"}`, "WRONG_TYPE", "/event"},
		{"payload missing", `{"event":"a","run":"r"}`, "MISSING_FIELD", "/data"},
		{"run missing", `{"event":"a","data":{}}`, "MISSING_FIELD", "/run"},
		{"run empty", `{"event":"a","data":{},"run":""}`, "INVALID_FIELD", "/run"},
		{"run a bool", `{"event":"a","data":{},"run":true}`, "WRONG_TYPE", "/run"},
		{"body an array", `[1]`, "WRONG_TYPE", ""},
		{"run too long", `{"event":"a","data":{},"run":"` + strings.Repeat("r", 300) + `"}`, "INVALID_FIELD", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, out := serve(t, h, delivery(t, secret, "m-"+strings.ReplaceAll(c.name, " ", "-"), env.Clock.Now(), c.body))
			assert.Equal(t, 400, status, out)
			assert.Equal(t, c.code, out["code"], out)
			if c.path != "" {
				assert.Equal(t, c.path, out["path"], out)
			}
			assert.Equal(t, uint64(0), lastSeq(t, env), "bad input is never stored")
		})
	}
	status, out := serve(t, h, delivery(t, secret, "ok", env.Clock.Now(), `{"event":"a","data":{"x":[1,2]},"run":7}`))
	require.Equal(t, 200, status, out)
	assert.Equal(t, "7", out["run_id"], "a number is kept as written")
}

func TestNewHandlerValidates(t *testing.T) {
	env := routertest.New(t, nil)
	secret := newSecret(t)
	good := map[string]auth.Caller{secret: submitter}
	for _, c := range []struct {
		name    string
		m       *Mapping
		secrets map[string]auth.Caller
		opts    *HandlerOptions
	}{
		{"nil mapping", nil, good, nil},
		{"no type", &Mapping{}, good, nil},
		{"lifecycle type", &Mapping{Type: protocol.TypeTaskResult}, good, nil},
		{"own record type", &Mapping{Type: TypeDelivery}, good, nil},
		{"bad extension", &Mapping{Type: "x.nope"}, good, nil},
		{"types without from", &Mapping{Type: "x.a.b", Types: map[string]protocol.Type{"e": "x.a.c"}}, good, nil},
		{"bad types entry", &Mapping{TypeFrom: "/e", Types: map[string]protocol.Type{"e": protocol.TypeToolCall}}, good, nil},
		{"pointer without slash", &Mapping{Type: "x.a.b", RunID: "run"}, good, nil},
		{"bad escape", &Mapping{Type: "x.a.b", Payload: "/a~2"}, good, nil},
		{"bad payload type", &Mapping{Type: "x.a.b", PayloadType: "Not A Type"}, good, nil},
		{"bad recipient", &Mapping{Type: "x.a.b", To: []string{"ken"}}, good, nil},
		{"reserved meta", &Mapping{Type: "x.a.b", Meta: map[string]string{MetaID: "/id"}}, good, nil},
		{"no secrets", &Mapping{Type: "x.a.b"}, nil, nil},
		{"secret without prefix", &Mapping{Type: "x.a.b"}, map[string]auth.Caller{"c2VjcmV0c2VjcmV0c2VjcmV0": submitter}, nil},
		{"short secret", &Mapping{Type: "x.a.b"}, map[string]auth.Caller{"whsec_c2hvcnQ=": submitter}, nil},
		{"secret not base64", &Mapping{Type: "x.a.b"}, map[string]auth.Caller{"whsec_!!!!": submitter}, nil},
		{"caller without agent id", &Mapping{Type: "x.a.b"}, map[string]auth.Caller{secret: {AgentID: "shop"}}, nil},
		{"negative tolerance", &Mapping{Type: "x.a.b"}, good, &HandlerOptions{Tolerance: -1}},
		{"limits without auth", &Mapping{Type: "x.a.b"}, good, &HandlerOptions{Limits: &auth.Options{Rate: 1}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewHandler(env.Router, c.m, c.secrets, c.opts)
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrInvalidOptions), "%v", err)
			assert.Equal(t, protocol.CodeInvalidField, protocol.CodeOf(err))
		})
	}
}

func TestHandlerLimitsAndAuth(t *testing.T) {
	env := routertest.New(t, nil)
	secret, crmSecret := newSecret(t), newSecret(t)
	keys, err := auth.APIKeys(map[string]auth.Caller{"shop-proxy-key-0123456789": submitter})
	require.NoError(t, err)
	h, err := NewHandler(env.Router, &Mapping{Type: "x.shop.note"},
		map[string]auth.Caller{secret: submitter, crmSecret: other},
		&HandlerOptions{MaxBodyBytes: 64, Auth: keys})
	require.NoError(t, err)
	now := env.Clock.Now()

	status, out := serve(t, h, delivery(t, secret, "a1", now, `{}`))
	assert.Equal(t, 401, status, "the authenticator comes first")
	assert.Equal(t, "UNAUTHORIZED", out["code"])

	req := delivery(t, secret, "a2", now, `{}`)
	req.Header.Set("X-API-Key", "shop-proxy-key-0123456789")
	status, out = serve(t, h, req)
	assert.Equal(t, 200, status, out)

	req = delivery(t, crmSecret, "a3", now, `{}`)
	req.Header.Set("X-API-Key", "shop-proxy-key-0123456789")
	status, out = serve(t, h, req)
	assert.Equal(t, 403, status, "signed by another sender than the authenticated one")
	assert.Equal(t, "POLICY_DENIED", out["code"])

	req = delivery(t, secret, "a4", now, `{"pad":"`+strings.Repeat("x", 100)+`"}`)
	req.Header.Set("X-API-Key", "shop-proxy-key-0123456789")
	status, out = serve(t, h, req)
	assert.Equal(t, 413, status)
	assert.Equal(t, "TOO_LARGE", out["code"])
	assert.Equal(t, uint64(1), lastSeq(t, env))
}

func TestHandlerNeedsSubmitScope(t *testing.T) {
	env := routertest.New(t, nil)
	secret := newSecret(t)
	h, err := NewHandler(env.Router, &Mapping{Type: "x.shop.note"}, map[string]auth.Caller{secret: {AgentID: "agent:reader"}}, nil)
	require.NoError(t, err)
	status, out := serve(t, h, delivery(t, secret, "s1", env.Clock.Now(), `{}`))
	assert.Equal(t, 403, status)
	assert.Equal(t, "POLICY_DENIED", out["code"])
	assert.Equal(t, uint64(0), lastSeq(t, env))
}

// The default signature policy wants task.cancel signed with the sender's
// Clutch key, which a webhook sender does not have: a host that takes
// cancels by webhook relaxes it for those senders (docs/protocol.md §6.1).
func TestHandlerCancelsTask(t *testing.T) {
	policy := registry.DefaultSignaturePolicy
	policy.Types = slices.DeleteFunc(slices.Clone(policy.Types), func(t protocol.Type) bool { return t == protocol.TypeTaskCancel })
	env := routertest.New(t, &routertest.Options{Registry: registry.Options{Signatures: &policy}})
	started := make(chan struct{})
	env.Agent("agent:slow", []string{"skill:echo"}, func(ctx context.Context, _ *router.Task) (*router.Result, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	secret := newSecret(t)
	m := &Mapping{
		TypeFrom: "/event",
		Types:    map[string]protocol.Type{"order.created": protocol.TypeTaskRequest, "order.cancelled": protocol.TypeTaskCancel},
		Payload:  "/data", TaskID: "/task", Requires: []string{"skill:echo"},
	}
	h, err := NewHandler(env.Router, m, map[string]auth.Caller{secret: submitter}, nil)
	require.NoError(t, err)
	now := env.Clock.Now()
	status, out := serve(t, h, delivery(t, secret, "c1", now, `{"event":"order.created","task":"task:order-7","data":{}}`))
	require.Equal(t, 200, status, out)
	assert.Equal(t, "task:order-7", out["task_id"], "the body's task id is kept")
	<-started
	status, out = serve(t, h, delivery(t, secret, "c2", now, `{"event":"order.cancelled","task":"task:order-7","data":{"message":"customer cancelled"}}`))
	require.Equal(t, 200, status, out)
	env.Await(store.Query{TaskID: "task:order-7"}, func(m *protocol.Message) bool { return m.Type == protocol.TypeTaskCancel })

	_, err = NewHandler(env.Router, &Mapping{Type: protocol.TypeTaskCancel}, map[string]auth.Caller{secret: submitter}, nil)
	assert.ErrorIs(t, err, ErrInvalidOptions, "cancel without a task id")
}

func TestHandlerConcurrentRedeliveries(t *testing.T) {
	env := routertest.New(t, nil)
	echoAgent(env)
	secret := newSecret(t)
	h, err := NewHandler(env.Router, orderMapping, map[string]auth.Caller{secret: submitter}, nil)
	require.NoError(t, err)
	now := env.Clock.Now()
	const n = 8
	var wg sync.WaitGroup
	tasks := make(chan string, 2*n)
	for i := range 2 * n {
		body := `{"event":"order.created","data":{}}`
		if i%2 == 1 {
			body = `{"event":"order.note","data":{}}`
		}
		req := delivery(t, secret, "same-"+strconv.Itoa(i%2), now, body)
		wg.Go(func() {
			status, out := serve(t, h, req)
			assert.Equal(t, 200, status, out)
			if out["type"] == "task.request" {
				tasks <- out["task_id"].(string)
			}
		})
	}
	wg.Wait()
	close(tasks)
	first := <-tasks
	for id := range tasks {
		assert.Equal(t, first, id)
	}
	env.Await(store.Query{TaskID: first}, func(m *protocol.Message) bool { return m.Type == protocol.TypeTaskResult })
	assert.Len(t, env.Events(store.Query{TypePrefix: "task.request"}), 1)
	assert.Len(t, env.Events(store.Query{TypePrefix: "x.shop.note"}), 1)
}

func TestHandlerCancelNeedsSignaturePolicy(t *testing.T) {
	env := routertest.New(t, nil)
	secret := newSecret(t)
	h, err := NewHandler(env.Router, &Mapping{Type: protocol.TypeTaskCancel, TaskID: "/task"}, map[string]auth.Caller{secret: submitter}, nil)
	require.NoError(t, err)
	status, out := serve(t, h, delivery(t, secret, "c1", env.Clock.Now(), `{"task":"task:x"}`))
	assert.Equal(t, 401, status)
	assert.Equal(t, "BAD_SIGNATURE", out["code"])
	assert.Equal(t, uint64(0), lastSeq(t, env))
}
