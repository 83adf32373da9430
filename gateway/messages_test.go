package gateway

import (
	"bytes"
	"net/http"
	"testing"
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
