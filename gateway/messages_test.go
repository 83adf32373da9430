package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
)

// TestNoHTMLEscaping: the API's JSON carries "<", ">" and "&" as they
// are — in a summary's title, in an error message and on the stream —
// never as \u003c.
func TestNoHTMLEscaping(t *testing.T) {
	e := newEnv(t, nil)
	e.runTask(keyAlice, `{"text":"Compare <A> & <B>"}`)
	status, body := e.do("GET", "/v1/runs", keyAlice, "")
	if status != http.StatusOK || !bytes.Contains(body, []byte(`"title":"Compare <A> & <B>"`)) {
		t.Errorf("GET /v1/runs: %d %s; want the title with its brackets as they are", status, body)
	}
	status, body = e.do("GET", "/v1/runs/run_<x>/events", keyAlice, "")
	wantError(t, "an unknown run", status, body, http.StatusNotFound, "NOT_FOUND")
	if !bytes.Contains(body, []byte("run_<x>")) || bytes.Contains(body, []byte(`\u003c`)) {
		t.Errorf("the error names the run with its brackets escaped: %s", body)
	}
}

// TestUnauthenticatedSaysWhy: no key and a wrong key are both 401
// UNAUTHORIZED with the same challenge, and each says what to do; the
// streams' access_token counts as a key.
func TestUnauthenticatedSaysWhy(t *testing.T) {
	e := newEnv(t, nil)
	for _, c := range []struct {
		name, path, key string
		hdr             http.Header
		want            string
	}{
		{"no key", "/v1/runs", "", nil, msgNoKey},
		{"a wrong key", "/v1/runs", "wrong-key-0123456789abcdef", nil, msgKeyNotAccepted},
		{"a wrong X-API-Key", "/v1/runs", "", http.Header{"X-Api-Key": {"wrong-key-0123456789abcdef"}}, msgKeyNotAccepted},
		{"a malformed header", "/v1/runs", "", http.Header{"Authorization": {"Basic eDp5"}}, msgKeyNotAccepted},
		{"a wrong access_token", "/v1/stream?access_token=wrong-key-0123456789abcdef", "", nil, msgKeyNotAccepted},
	} {
		resp := e.resp("GET", c.path, c.key, "", c.hdr)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		apiErr := wantError(t, c.name, resp.StatusCode, b, http.StatusUnauthorized, "UNAUTHORIZED")
		if apiErr.Error.Message != c.want || apiErr.Error.Retryable {
			t.Errorf("%s: %s; want the message %q", c.name, b, c.want)
		}
		if got := resp.Header.Get("WWW-Authenticate"); got == "" {
			t.Errorf("%s: no WWW-Authenticate challenge", c.name)
		}
	}
	if msgNoKey != "no API key given (set --key or CLUTCH_API_KEY, or send Authorization: Bearer KEY)" || msgKeyNotAccepted != "API key not accepted" {
		t.Errorf("the 401 messages changed: %q, %q", msgNoKey, msgKeyNotAccepted)
	}
}

// TestUnknownPayloadTypeSaidOnce: a strict schema registry refuses an
// unknown payload_type with VALIDATION naming it once, in words; a payload
// that breaks its schema lists its violations with lower-case members.
func TestUnknownPayloadTypeSaidOnce(t *testing.T) {
	e := newEnv(t, &envOptions{strict: true})
	status, body := e.do("POST", "/v1/messages", keyAlice, `{"type":"task.request","payload_type":"research.query.v2","payload":{}}`)
	apiErr := wantError(t, "an unknown payload type", status, body, http.StatusUnprocessableEntity, "VALIDATION")
	if apiErr.Error.Message != `unknown payload type "research.query.v2"` {
		t.Errorf("unknown payload type: %s", body)
	}
	status, body = e.do("POST", "/v1/messages", keyAlice, `{"type":"task.request","payload_type":"research.query.v1","payload":{}}`)
	apiErr = wantError(t, "an invalid payload", status, body, http.StatusUnprocessableEntity, "VALIDATION")
	if strings.Count(apiErr.Error.Message, "research.query.v1") != 1 || strings.Contains(apiErr.Error.Message, "schema: ") {
		t.Errorf("invalid payload: %s; want the payload type once and no package prefix", body)
	}
	var details struct {
		Error struct {
			Details struct {
				Violations []map[string]string `json:"violations"`
			} `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &details); err != nil {
		t.Fatal(err)
	}
	vs := details.Error.Details.Violations
	if len(vs) != 1 || vs[0]["path"] != "/payload/query" || vs[0]["keyword"] != "required" || vs[0]["message"] == "" || len(vs[0]) != 3 {
		t.Errorf("violations %v; want one {path, keyword, message} for /payload/query", vs)
	}
}

// TestUnknownMembersRefused: every body of the API refuses a member it
// does not define — 400 UNKNOWN_FIELD naming it — rather than ignoring
// it; a task.cancel takes its reason in payload.message only.
func TestUnknownMembersRefused(t *testing.T) {
	e := newEnv(t, nil)
	a := e.submit(keyAlice, `{"type":"task.request","requires":["skill:echo"],"payload":{"block":true}}`)
	task := `"task_id":"` + a.TaskID + `"`
	for _, c := range []struct{ path, body, name string }{
		{"/v1/messages", `{"type":"task.cancel",` + task + `,"reason":"stop"}`, `"reason"`},
		{"/v1/messages", `{"type":"task.cancel",` + task + `,"payload":{"reason":"stop"}}`, `"reason"`},
		{"/v1/messages", `{"type":"task.cancel",` + task + `,"requires":["skill:echo"]}`, `"requires"`},
		{"/v1/messages", `{"type":"task.request","requires":["skill:echo"],"colour":"red"}`, `"colour"`},
		{"/v1/tasks/" + a.TaskID + "/cancel", `{"reason":"stop","why":"x"}`, `"why"`},
		{"/v1/tasks/" + a.TaskID + "/retry", `{"now":true}`, `"now"`},
		{"/v1/questions/q_1/answer", `{"value":"yes","comment":"x"}`, `"comment"`},
	} {
		status, body := e.do("POST", c.path, keyAlice, c.body)
		apiErr := wantError(t, "POST "+c.path+" "+c.body, status, body, http.StatusBadRequest, "UNKNOWN_FIELD")
		if !strings.Contains(apiErr.Error.Message, c.name) || apiErr.Error.Retryable {
			t.Errorf("POST %s %s: %s; want the member %s named", c.path, c.body, body, c.name)
		}
	}
	if e.lastOf(a.TaskID, protocol.TypeTaskCancel) != nil {
		t.Fatal("a refused cancel cancelled the task")
	}
	// The reason where it goes is stored, after the caller.
	e.submit(keyAlice, `{"type":"task.cancel",`+task+`,"payload":{"message":"enough"}}`)
	end := e.lastOf(a.TaskID, protocol.TypeTaskCancel)
	if end == nil || !strings.Contains(string(end.Payload), "cancelled by agent:alice: enough") {
		t.Fatalf("the task.cancel: %v", end)
	}
}
