package agui_test

import (
	"testing"
)

func TestPostStreamsRun(t *testing.T) {
	e := newEnv(t, nil)
	resp := e.do(t, "POST", "/", testKey, input("thread-1", "run-1", "nordic payments"))
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for _, f := range readSSE(t, resp.Body) {
		t.Log(f.ID, summary(f.Event))
	}
}
