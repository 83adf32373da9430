package mcp_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/adapters/mcp"
	"github.com/clutchprotocol/clutch/egress"
	"github.com/clutchprotocol/clutch/protocol"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpPeer serves the go peer over Streamable HTTP on 127.0.0.1 and
// counts the requests that reach it.
func httpPeer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	p := newGoPeer(t)
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return p.srv }, &sdk.StreamableHTTPOptions{Stateless: true})
	var n atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs, &n
}

func port(t *testing.T, hs *httptest.Server) string {
	_, p, err := net.SplitHostPort(hs.Listener.Addr().String())
	require.NoError(t, err)
	return p
}

// policyError asserts a POLICY_DENIED tool.error as the only tool event.
func policyError(t *testing.T, err error, evs []*protocol.Message) protocol.ErrorPayload {
	t.Helper()
	require.ErrorIs(t, err, protocol.CodePolicyDenied)
	tev := toolEvents(evs)
	require.Equal(t, []protocol.Type{protocol.TypeToolError}, types(tev))
	ep := errorPayload(t, tev[0])
	assert.Equal(t, protocol.CodePolicyDenied, ep.Code)
	assert.False(t, ep.Retryable)
	id, _ := protocol.ToolCallID(tev[0])
	assert.True(t, strings.HasPrefix(id, protocol.IDPrefixCall), "a refused call's call id is its own: %q", id)
	return ep
}

// TestEgressDefaultRefusesLoopback: with no ClientOptions.Egress, a server
// on loopback is refused — by IP literal before any I/O, by a name that
// resolves there at the dial — and recorded as tool.error POLICY_DENIED.
func TestEgressDefaultRefusesLoopback(t *testing.T) {
	hs, hits := httpPeer(t)
	c := newClient(t, []mcp.ServerConfig{
		{Name: "literal", URL: hs.URL},
		{Name: "named", URL: "http://localhost:" + port(t, hs)},
	}, &mcp.ClientOptions{Egress: egress.Default()})
	tr := newTaskRunner(t, "mcp:literal", "mcp:named")

	_, err, evs := tr.call(c, "literal", "echo", map[string]any{"text": "x"}, nil)
	ep := policyError(t, err, evs)
	assert.Contains(t, ep.Message, "loopback")
	assert.Equal(t, "127.0.0.1", ep.Details["host"])

	_, err, evs = tr.call(c, "named", "echo", map[string]any{"text": "x"}, nil)
	require.ErrorIs(t, err, protocol.CodePolicyDenied, "the dial through the policy refuses localhost's address")
	require.ErrorIs(t, err, egress.ErrDenied)
	tev := toolEvents(evs)
	require.NotEmpty(t, tev)
	ep = errorPayload(t, tev[len(tev)-1])
	assert.Equal(t, protocol.CodePolicyDenied, ep.Code)
	assert.Equal(t, "localhost", ep.Details["host"])
	assert.Contains(t, ep.Details["rule"], "loopback")
	assert.Zero(t, hits.Load(), "no request reached the server")
}

// TestEgressCardNetwork: the calling agent's security.network is enforced
// for HTTP servers, before any I/O.
func TestEgressCardNetwork(t *testing.T) {
	hs, hits := httpPeer(t)
	named := "http://localhost:" + port(t, hs)
	loop, err := egress.New(&egress.Options{Allow: []string{"127.0.0.1"}})
	require.NoError(t, err)
	c := newClient(t, []mcp.ServerConfig{{Name: "literal", URL: hs.URL}, {Name: "named", URL: named}}, &mcp.ClientOptions{Egress: loop})

	for _, level := range []string{"", "none"} {
		tr := newTaskRunnerNet(t, level, "mcp:literal")
		_, err, evs := tr.call(c, "literal", "echo", map[string]any{"text": "x"}, nil)
		ep := policyError(t, err, evs)
		assert.Contains(t, ep.Message, "none", "level %q", level)
	}
	tr := newTaskRunnerNet(t, "everywhere", "mcp:literal")
	_, err, evs := tr.call(c, "literal", "echo", map[string]any{"text": "x"}, nil)
	assert.Contains(t, policyError(t, err, evs).Message, "unknown security.network")
	assert.Zero(t, hits.Load(), "refused calls do no I/O")

	// egress-restricted: the IP literal is on the allowlist; the name is not.
	tr = newTaskRunnerNet(t, "egress-restricted", "mcp:literal", "mcp:named")
	res, err, _ := tr.call(c, "literal", "echo", map[string]any{"text": "restricted"}, nil)
	require.NoError(t, err)
	assert.Equal(t, "restricted", res.Text())
	before := hits.Load()
	_, err, evs = tr.call(c, "named", "echo", map[string]any{"text": "x"}, nil)
	ep := policyError(t, err, evs)
	assert.Contains(t, ep.Details["rule"], "egress-restricted")
	assert.Equal(t, before, hits.Load())

	// open: the name resolves to 127.0.0.1, which the policy allows.
	tr = newTaskRunnerNet(t, "open", "mcp:named")
	res, err, _ = tr.call(c, "named", "echo", map[string]any{"text": "open"}, nil)
	require.NoError(t, err)
	assert.Equal(t, "open", res.Text())

	// A card of level none may still use servers that are not connections.
	p := newGoPeer(t)
	c2 := newClient(t, []mcp.ServerConfig{goServer(p)}, nil)
	tr = newTaskRunnerNet(t, "none", "mcp:go")
	_, err, _ = tr.call(c2, "go", "echo", map[string]any{"text": "x"}, nil)
	require.NoError(t, err)
}

// TestEgressRedirect: a redirect is dialled through the policy too.
func TestEgressRedirect(t *testing.T) {
	hs, hits := httpPeer(t)
	redir := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://localhost:"+port(t, hs)+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redir.Close)
	only, err := egress.New(&egress.Options{Allow: []string{strings.TrimPrefix(redir.URL, "http://")}})
	require.NoError(t, err)
	c := newClient(t, []mcp.ServerConfig{{Name: "r", URL: redir.URL}}, &mcp.ClientOptions{Egress: only})
	tr := newTaskRunner(t, "mcp:r")
	_, err, evs := tr.call(c, "r", "echo", map[string]any{"text": "x"}, nil)
	require.ErrorIs(t, err, protocol.CodePolicyDenied)
	tev := toolEvents(evs)
	assert.Equal(t, protocol.CodePolicyDenied, errorPayload(t, tev[len(tev)-1]).Code)
	assert.Zero(t, hits.Load())
}

func TestEgressHTTPClientTransport(t *testing.T) {
	_, err := mcp.NewClient([]mcp.ServerConfig{{Name: "x", URL: "https://example.com/mcp",
		HTTPClient: &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, nil })}}}, nil)
	assert.ErrorIs(t, err, mcp.ErrInvalidConfig)

	// An *http.Transport of the caller's is used with the policy's dialer.
	// (localhost: a name, so that the refusal comes from the dial).
	hs, hits := httpPeer(t)
	c := newClient(t, []mcp.ServerConfig{{Name: "own", URL: "http://localhost:" + port(t, hs), HTTPClient: &http.Client{Transport: &http.Transport{}}}},
		&mcp.ClientOptions{Egress: egress.Default()})
	tr := newTaskRunner(t, "mcp:own")
	_, err, _ = tr.call(c, "own", "echo", map[string]any{"text": "x"}, nil)
	require.ErrorIs(t, err, egress.ErrDenied)
	assert.Zero(t, hits.Load())
	assert.True(t, slices.Contains(c.Servers(), "own"))
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
