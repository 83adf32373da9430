package autogen_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/adapters/adaptertest"
	"github.com/clutchprotocol/clutch/adapters/autogen"
	"github.com/clutchprotocol/clutch/protocol"
)

// fixedNow is the clock of test adapters, so that translating the same
// input twice gives the same envelopes.
func fixedNow() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }

func newAdapter() *autogen.Adapter { return autogen.New(&autogen.Options{Now: fixedNow}) }

func read(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(tb, err)
	return b
}

// lines returns the JSON lines of a .jsonl fixture.
func lines(tb testing.TB, name string) [][]byte {
	tb.Helper()
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(read(tb, name)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if l := bytes.TrimSpace(sc.Bytes()); len(l) > 0 {
			out = append(out, append([]byte(nil), l...))
		}
	}
	require.NoError(tb, sc.Err())
	return out
}

// coreMessages returns the two worker messages of
// core_grpc_worker_messages_constructed.json in their wire form (the
// fixture groups them under "publish" and "rpc_request", with the decoded
// data beside the cloud event for readers).
func coreMessages(tb testing.TB) (publish, request []byte) {
	tb.Helper()
	var f struct {
		Publish struct {
			CloudEvent json.RawMessage `json:"cloudEvent"`
		} `json:"publish"`
		RPCRequest json.RawMessage `json:"rpc_request"`
	}
	require.NoError(tb, json.Unmarshal(read(tb, "core_grpc_worker_messages_constructed.json"), &f))
	publish, err := json.Marshal(map[string]json.RawMessage{"cloudEvent": f.Publish.CloudEvent})
	require.NoError(tb, err)
	return publish, f.RPCRequest
}

// agentchatCases are every fixture in agentchat form, one case per JSON
// value (each line of a .jsonl file, each .json file).
func agentchatCases(tb testing.TB) []adaptertest.Case {
	tb.Helper()
	var cases []adaptertest.Case
	jsonl, _ := filepath.Glob("testdata/agentchat_*.jsonl")
	require.Len(tb, jsonl, 4)
	for _, p := range jsonl {
		for i, l := range lines(tb, filepath.Base(p)) {
			cases = append(cases, adaptertest.Case{Name: filepath.Base(p) + "#" + strconv.Itoa(i+1), Raw: l})
		}
	}
	cases = append(cases, adaptertest.Files(tb, "testdata/agentchat_*.json", 4)...)
	return cases
}

// coreCases are the worker-runtime fixtures.
func coreCases(tb testing.TB) []adaptertest.Case {
	publish, request := coreMessages(tb)
	return []adaptertest.Case{
		{Name: "core publish", Raw: publish},
		{Name: "core rpc_request", Raw: request},
		{Name: "core termination error", Raw: read(tb, "core_groupchat_termination_error_constructed.json")},
	}
}

func inbound(tb testing.TB, a *autogen.Adapter, raw []byte) []*protocol.Message {
	tb.Helper()
	msgs, err := a.Inbound(context.Background(), raw)
	require.NoError(tb, err)
	return msgs
}

func types(msgs []*protocol.Message) []protocol.Type {
	out := make([]protocol.Type, len(msgs))
	for i, m := range msgs {
		out[i] = m.Type
	}
	return out
}
