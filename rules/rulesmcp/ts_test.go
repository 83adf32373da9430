package rulesmcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/internal/nodepeer"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/rules"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type tsCall struct {
	IsError          bool           `json:"isError"`
	SC               map[string]any `json:"sc"`
	TextIsStructured bool           `json:"textIsStructured"`
	Blocks           int            `json:"blocks"`
}

type tsReport struct {
	Tools       []string          `json:"tools"`
	UnknownTool string            `json:"unknownTool"`
	Calls       map[string]tsCall `json:"calls"`
}

// TestTypeScriptClient runs testdata/tsclient/client.mjs, a client on the
// TypeScript MCP SDK, against the rules tools over Streamable HTTP and over
// stdio (this test binary as the server process), checks every result it
// reports and the attestation events in the log; over stdio it then
// reopens the server's boltstore file and finds the library rebuilt.
func TestTypeScriptClient(t *testing.T) {
	dir, _ := filepath.Abs(filepath.Join("testdata", "tsclient"))
	node := nodepeer.Need(t, "the TypeScript MCP SDK client", filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json"))
	script := filepath.Join(dir, "client.mjs")
	run := func(t *testing.T, env []string, args ...string) tsReport {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, append([]string{script}, args...)...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("client: %v\n%s", err, ee.Stderr)
			}
			t.Fatalf("client: %v", err)
		}
		var rep tsReport
		require.NoError(t, json.Unmarshal(out, &rep), "%s", out)
		return rep
	}

	t.Run("http", func(t *testing.T) {
		h, st := memHost(t)
		hs := httptest.NewServer(h.srv.Handler())
		t.Cleanup(hs.Close)
		rep := run(t, []string{"MCP_API_KEY=" + ideKey}, "--url", hs.URL)
		checkTSReport(t, rep)
		checkTSLog(t, h.lib, st)
	})

	t.Run("stdio", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "clutch.db")
		rep := run(t, []string{serveStdioEnv + "=1", dbEnv + "=" + file}, "--stdio", os.Args[0])
		checkTSReport(t, rep)
		// The server process has exited: open its file as a restart would.
		st, err := boltstore.Open(file, nil)
		require.NoError(t, err)
		defer st.Close()
		lib, err := rules.Open(context.Background(), st, &rules.Options{Workspace: "team"})
		require.NoError(t, err)
		checkTSLog(t, lib, st)
		require.Len(t, lib.Drafts(), 1, "the rename draft survived the restart")
		assert.Equal(t, "rename", lib.Drafts()[0].Op)
		assert.Equal(t, "rules/REVIEWING.md", lib.Drafts()[0].NewPath)
		assert.Len(t, lib.Documents(), 3)
	})
}

func checkTSReport(t *testing.T, rep tsReport) {
	t.Helper()
	for _, n := range []string{"memsetup", "memdisc", "memload", "memref", "agentreport", "agentrejected", "artifact", "submit_task"} {
		assert.Contains(t, rep.Tools, n)
	}
	assert.Contains(t, strings.ToLower(rep.UnknownTool), "unknown tool")
	for label, c := range rep.Calls {
		assert.True(t, c.TextIsStructured, "%s: the text block is the structured content", label)
		assert.Equal(t, 1, c.Blocks, label)
		if c.IsError {
			for _, k := range []string{"error", "code", "retryable", "retryAction"} {
				assert.Contains(t, c.SC, k, label)
			}
		}
	}
	fails := map[string]string{ // label → text the error must hold
		"setup_missing_mpf": "invalid params", "setup_no_hashes": "invalid params", "setup_bad_type": "invalid params",
		"disc_bad_kind": "invalid params", "load_no_hashes": "invalid params", "load_missing_entry": "invalid params",
		"load_bad_type": "invalid params", "load_unknown": "Unknown rule id", "ref_missing": "invalid params",
		"ref_unknown_rule": "rediscover", "ref_context": "not a rule or workflow", "ref_unknown_constraint": "retry with one of: Steps",
		"art_create_again": "draft already exists", "art_unsafe": "unsafe path", "art_missing": "file not found in cache",
		"art_update_incompatible": "artifact already has an incompatible local change", "art_delete_by_path": "file not found in cache",
		"art_two_ops": "invalid params", "report_empty": "summary must not be empty", "report_missing": "invalid params",
	}
	for label, c := range rep.Calls {
		want, fail := fails[label]
		require.Equal(t, fail, c.IsError, "%s: %v", label, c.SC)
		if fail {
			assert.Contains(t, c.SC["error"], want, label)
		}
	}
	assert.Equal(t, "unknown_rule_or_workflow", rep.Calls["ref_unknown_rule"].SC["code"])
	assert.Equal(t, "rediscover_and_reload", rep.Calls["ref_unknown_rule"].SC["retryAction"])
	assert.Equal(t, true, rep.Calls["ref_unknown_rule"].SC["retryable"])
	uc := rep.Calls["ref_unknown_constraint"].SC
	assert.Equal(t, "unknown_constraint", uc["code"])
	assert.Equal(t, "retry_with_valid_constraint", uc["retryAction"])
	assert.Len(t, uc["validConstraints"], 4)
	assert.Equal(t, map[string]any{"ok": true, "count": float64(1)}, rep.Calls["ref"].SC)
	assert.Equal(t, true, rep.Calls["setup"].SC["mpf"].(map[string]any)["changed"])
	assert.Equal(t, false, rep.Calls["setup2"].SC["mpf"].(map[string]any)["changed"])
	load := rep.Calls["load"].SC["items"].([]any)
	assert.Contains(t, load[0].(map[string]any)["content"], "Refer reminder")
	assert.Nil(t, load[1].(map[string]any)["content"], "context unchanged under delta loading")
	delta := rep.Calls["load_delta"].SC["items"].([]any)[0].(map[string]any)
	assert.Nil(t, delta["content"])
	assert.Len(t, delta["constraints"], 4)
	assert.Equal(t, true, rep.Calls["art_delete_tmp"].SC["discarded"])
}

// checkTSLog checks the attestation events of the client's two sessions.
func checkTSLog(t *testing.T, lib *rules.Library, st store.Store) {
	t.Helper()
	ctx := context.Background()
	want := map[string][]protocol.Type{
		"ts-1": {rules.TypeSetup, rules.TypeDiscover, rules.TypeDiscover, rules.TypeLoad, rules.TypeLoad, rules.TypeRefer,
			rules.TypeArtifact, rules.TypeArtifact, rules.TypeArtifact, rules.TypeReport},
		"ts-2": {rules.TypeSetup, rules.TypeLoad, rules.TypeReject},
	}
	for id, types := range want {
		s, err := lib.Session(ctx, "agent:ide", id)
		require.NoError(t, err)
		var got []protocol.Type
		for ev, err := range st.Read(ctx, store.Query{RunID: s.Ref().RunID}) {
			require.NoError(t, err)
			m, err := ev.Message()
			require.NoError(t, err)
			assert.Equal(t, "agent:ide", m.From.AgentID)
			got = append(got, m.Type)
			if m.Type == rules.TypeRefer {
				p, err := protocol.DecodePayload[rules.ReferEvent](m)
				require.NoError(t, err)
				assert.Equal(t, "Steps", p.Refs[0].ConstraintID)
				assert.Equal(t, "from TypeScript", p.Refs[0].Reason)
			}
		}
		assert.Equal(t, types, got, id)
	}
}
