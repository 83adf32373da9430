package webhook

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/internal/nodepeer"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router/routertest"
	"github.com/clutchprotocol/clutch/store"
)

// The independent peer lives in testdata/peer: the `standardwebhooks` npm
// library, pinned with a committed lockfile; `make deps` installs it.
const peerDir = "testdata/peer"

// needNode returns the node binary, or fails (CI=true) or skips the test
// with the reason when node or the installed peer is missing.
func needNode(t *testing.T) string {
	t.Helper()
	return nodepeer.Need(t, "the Standard Webhooks peer (standardwebhooks)", filepath.Join(peerDir, "node_modules", "standardwebhooks", "package.json"))
}

// The library signs, the Go handler verifies.
func TestPeerSignsHandlerVerifies(t *testing.T) {
	node := needNode(t)
	env := routertest.New(t, &routertest.Options{Start: time.Now()})
	echoAgent(env)
	secret := newSecret(t)
	h, err := NewHandler(env.Router, orderMapping, map[string]auth.Caller{secret: submitter}, nil)
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "peer.mjs", "send", srv.URL, secret)
	cmd.Dir = peerDir
	out, err := cmd.Output()
	require.NoError(t, err, "peer: %s", out)

	got := map[string]struct {
		Status int
		Body   string
	}{}
	for line := range strings.Lines(string(out)) {
		var r struct {
			Name, ID, Body string
			Status         int
		}
		require.NoError(t, json.Unmarshal([]byte(line), &r), line)
		got[r.Name] = struct {
			Status int
			Body   string
		}{r.Status, r.Body}
	}
	require.Equal(t, 200, got["good"].Status, got["good"].Body)
	var rc Receipt
	require.NoError(t, json.Unmarshal([]byte(got["good"].Body), &rc))
	require.Len(t, rc.Envelopes, 1)
	res := env.Await(store.Query{TaskID: rc.Envelopes[0].TaskID}, func(m *protocol.Message) bool { return m.Type == protocol.TypeTaskResult })
	assert.JSONEq(t, `{"order_id":42,"sku":"A-1","note":"héllo ✓"}`, string(res.Payload))

	assert.Equal(t, 200, got["again"].Status)
	assert.Contains(t, got["again"].Body, `"duplicate":true`)
	assert.Equal(t, 401, got["tampered body"].Status)
	assert.Contains(t, got["tampered body"].Body, "BAD_SIGNATURE")
	assert.Equal(t, 401, got["stale"].Status)
	assert.Contains(t, got["stale"].Body, "tolerance")
	assert.Len(t, env.Events(store.Query{TypePrefix: "task.request"}), 1)
}

// The Go deliverer signs, the library verifies.
func TestPeerVerifiesDeliveries(t *testing.T) {
	node := needNode(t)
	secret, retired, wrong := newSecret(t), newSecret(t), newSecret(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "peer.mjs", "receive", secret)
	cmd.Dir = peerDir
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() { _ = stdin.Close(); _ = cmd.Wait() }()
	lines := bufio.NewScanner(stdout)
	require.True(t, lines.Scan(), "peer did not start")
	port, ok := strings.CutPrefix(lines.Text(), "LISTENING ")
	require.True(t, ok, lines.Text())
	url := "http://127.0.0.1:" + port + "/hooks"

	env := routertest.New(t, &routertest.Options{Start: time.Now()})
	d, err := NewDeliverer(env.Store, &DelivererOptions{Egress: loopback(t), MaxAttempts: 1, IDs: env.IDs, Schemas: env.Schemas})
	require.NoError(t, err)
	// Mid-rotation: the old and the new secret both sign.
	require.NoError(t, d.Subscribe(ctx, Subscription{Name: "peer", URL: url, Secrets: []string{retired, secret}, Types: []string{"x.test."}}))
	runDeliverer(t, d)
	ids := appendEvents(t, env.Store, 5)
	var oks []string
	for len(oks) < 5 && lines.Scan() {
		f := strings.Fields(lines.Text())
		require.Equal(t, "OK", f[0], "the library refused a delivery: %s", lines.Text())
		assert.Equal(t, "x.test.event", f[2])
		oks = append(oks, f[1])
	}
	assert.Equal(t, ids, oks)
	for _, r := range records(t, env.Store, "peer", 5) {
		assert.Equal(t, StatusDelivered, r.Status)
	}

	// Signed with a secret the receiver does not hold: the library refuses,
	// and the record says so.
	require.NoError(t, d.Subscribe(ctx, Subscription{Name: "wrong", URL: url, Secrets: []string{wrong}, Types: []string{"x.test."}}))
	require.True(t, lines.Scan())
	assert.True(t, strings.HasPrefix(lines.Text(), "FAIL "), lines.Text())
	recs := records(t, env.Store, "wrong", 1)
	assert.Equal(t, StatusFailed, recs[0].Status)
	assert.Equal(t, 401, recs[0].HTTPStatus)
	// The records' payload type is registered, so they validate.
	assert.NoError(t, env.Schemas.Validate(PayloadDelivery, mustJSON(t, recs[0])))
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
