package a2a

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/egress"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/router/routertest"
	"github.com/clutchprotocol/clutch/store"
)

// loopback is an egress policy that allows 127.0.0.1, for the test
// servers.
var loopback = func() *egress.Policy {
	p, err := egress.New(&egress.Options{Allow: []string{"127.0.0.1"}})
	if err != nil {
		panic(err)
	}
	return p
}()

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// countingEnv wraps the test env's server and counts the requests that reach
// it, and those that are not card fetches.
func countingEnv(t *testing.T) (*testEnv, *atomic.Int32, *atomic.Int32) {
	var all, calls atomic.Int32
	b := newTestEnv(t, nil, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			all.Add(1)
			if !strings.HasSuffix(r.URL.Path, CardPath) {
				calls.Add(1)
			}
			h.ServeHTTP(w, r)
		})
	})
	return b, &all, &calls
}

func portOf(t *testing.T, hs *httptest.Server) string {
	_, p, err := net.SplitHostPort(hs.Listener.Addr().String())
	require.NoError(t, err)
	return p
}

func policyDenied(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	assert.ErrorIs(t, err, protocol.CodePolicyDenied)
	assert.Equal(t, protocol.CodePolicyDenied, protocol.CodeOf(err))
}

// TestRemoteEgressDefault: with no Egress, a remote on loopback is refused
// — by IP literal before any I/O, by name at the dial.
func TestRemoteEgressDefault(t *testing.T) {
	b, all, _ := countingEnv(t)
	_, err := NewRemote(context.Background(), b.hs.URL+"/agents/echo", &RemoteOptions{Logger: quiet})
	policyDenied(t, err)
	assert.ErrorIs(t, err, egress.ErrDenied)
	assert.ErrorIs(t, err, ErrCard)

	_, err = NewRemote(context.Background(), "http://localhost:"+portOf(t, b.hs)+"/agents/echo", &RemoteOptions{Logger: quiet})
	policyDenied(t, err)
	var d *egress.DeniedError
	require.ErrorAs(t, err, &d)
	assert.Equal(t, "localhost", d.Host)
	assert.Contains(t, d.Rule, "loopback")
	assert.Zero(t, all.Load(), "no request reached the agent")
}

// TestRemoteEgressCardInterface: the interface URL a remote card lists is
// outside input; the dial to it goes through the policy (no SSRF through
// a card).
func TestRemoteEgressCardInterface(t *testing.T) {
	b := newTestEnv(t, nil)
	// A server that serves the echo agent's card, with its interfaces
	// pointing at the cloud metadata address.
	cardSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, err := http.Get(b.hs.URL + "/agents/echo" + CardPath)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, strings.ReplaceAll(string(body), b.hs.URL, "http://169.254.169.254"))
	}))
	t.Cleanup(cardSrv.Close)
	c := newCaller(t, cardSrv.URL, nil, 1)
	assert.Equal(t, "http://169.254.169.254/agents/echo/a2a", c.rm.Card().Endpoints["a2a"].URL)
	_, err := c.ask(t, "hi", "")
	policyDenied(t, err)
	var ep *protocol.ErrorPayload
	require.ErrorAs(t, err, &ep)
	assert.False(t, ep.Retryable)
	assert.Contains(t, ep.Details["rule"], "cloud metadata")
}

// TestRemoteEgressNetworkLevels: the card's security.network is enforced
// on the Remote: none cannot be built, egress-restricted reaches only the
// allowlist, and a task run under a card of level none (or none stated)
// is refused before any I/O, with a tool.error.
func TestRemoteEgressNetworkLevels(t *testing.T) {
	b, all, calls := countingEnv(t)
	ctx := context.Background()
	url := b.hs.URL + "/agents/echo"

	_, err := NewRemote(ctx, url, &RemoteOptions{Logger: quiet, Egress: loopback, Security: &protocol.CardSecurity{Network: "none"}})
	policyDenied(t, err)

	restricted := &protocol.CardSecurity{Network: "egress-restricted"}
	_, err = NewRemote(ctx, "http://localhost:"+portOf(t, b.hs)+"/agents/echo", &RemoteOptions{Logger: quiet, Egress: loopback, Security: restricted})
	policyDenied(t, err)
	assert.Zero(t, all.Load())

	c := newCaller(t, url, &RemoteOptions{Security: restricted}, 1)
	assert.Equal(t, "egress-restricted", c.rm.Card().Security.Network)
	out, err := c.ask(t, "restricted", "")
	require.NoError(t, err)
	assert.Contains(t, string(out.Message.Payload), "echo: restricted")

	// The same Remote's handler under cards of other levels.
	env := routertest.New(t, &routertest.Options{Router: router.Options{MaxAttempts: 1}})
	require.NoError(t, registerContent(env.Router))
	for _, level := range []string{"", "none"} {
		id := "agent:fwd-" + level
		if level == "" {
			id = "agent:fwd-absent"
		}
		cd := &protocol.AgentCard{V: protocol.Version, AgentID: id, Capabilities: []protocol.Capability{{ID: "skill:" + strings.TrimPrefix(id, "agent:")}}}
		if level != "" {
			cd.Security = &protocol.CardSecurity{Network: level}
		}
		env.Register(cd, c.rm.Handle)
		before := calls.Load()
		req := env.Request(PayloadContent, Content{Text: "hi"})
		req.To = []protocol.Participant{{AgentID: id}}
		out, err := env.Run(req)
		policyDenied(t, err)
		assert.Equal(t, before, calls.Load(), "a refused forward sends nothing")
		var tool []*protocol.Message
		for _, m := range env.Events(store.Query{TaskID: out.TaskID}) {
			if m.Type == protocol.TypeToolError {
				tool = append(tool, m)
			}
		}
		require.Len(t, tool, 1, "the refusal is recorded as a tool.error")
		ep, err := protocol.DecodePayload[protocol.ErrorPayload](tool[0])
		require.NoError(t, err)
		assert.Equal(t, protocol.CodePolicyDenied, ep.Code)
		assert.Equal(t, level, ep.Details["network"])
		require.NoError(t, protocol.CheckToolCallID(tool[0]))
		callID, _ := protocol.ToolCallID(tool[0])
		assert.True(t, strings.HasPrefix(callID, protocol.IDPrefixCall), "a refused forward's call id names no call: %q", callID)
		require.NotNil(t, out.Err)
		assert.NotContains(t, out.Err.Details, "call_id", "the task's own error names no call")
	}
}
