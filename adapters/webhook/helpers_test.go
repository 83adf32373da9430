package webhook

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"github.com/clutchprotocol/clutch/store"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/router/routertest"
)

// newSecret returns a fresh "whsec_" secret of 32 random bytes.
func newSecret(t testing.TB) string {
	t.Helper()
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return SecretPrefix + base64.StdEncoding.EncodeToString(k)
}

var (
	submitter = auth.Caller{AgentID: "agent:shop", Scopes: []string{auth.ScopeSubmit}}
	other     = auth.Caller{AgentID: "agent:crm", Scopes: []string{auth.ScopeSubmit}}
)

// delivery builds a signed POST of body, as a Standard Webhooks sender would.
func delivery(t testing.TB, secret, id string, ts time.Time, body string) *http.Request {
	t.Helper()
	sig, err := Sign(secret, id, ts, []byte(body))
	require.NoError(t, err)
	req := httptest.NewRequest(http.MethodPost, "/hooks", bytes.NewReader([]byte(body)))
	req.Header.Set(HeaderID, id)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	req.Header.Set(HeaderSignature, sig)
	req.Header.Set("Content-Type", "application/json")
	return req
}

// serve runs req through h and returns the status and decoded body; the
// receipt of a delivery that gave one envelope is that envelope's entry.
func serve(t testing.TB, h http.Handler, req *http.Request) (int, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var out map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out), "body %q", rec.Body.String())
	if envs, ok := out["envelopes"].([]any); ok && len(envs) == 1 {
		return rec.Code, envs[0].(map[string]any)
	}
	return rec.Code, out
}

// echoAgent registers agent:echo with skill:echo answering its payload.
func echoAgent(env *routertest.Env) {
	env.Agent("agent:echo", []string{"skill:echo"}, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		return &router.Result{Payload: json.RawMessage(t.Request().Payload)}, nil
	})
}

// lastSeq counts the stored events outside the reserved system runs (the
// store's secret, made when the first run id is derived, is one of those).
func lastSeq(t testing.TB, env *routertest.Env) uint64 {
	t.Helper()
	var n uint64
	for ev, err := range env.Store.Read(context.Background(), store.Query{}) {
		require.NoError(t, err)
		if m, err := ev.Message(); err == nil && !protocol.Reserved(m.RunID) {
			n++
		}
	}
	return n
}

func typesOf(msgs []*protocol.Message) []protocol.Type {
	var out []protocol.Type
	for _, m := range msgs {
		out = append(out, m.Type)
	}
	return out
}

func nopBody(s string) io.ReadCloser { return io.NopCloser(strings.NewReader(s)) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
