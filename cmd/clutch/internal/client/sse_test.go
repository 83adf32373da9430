package client

import (
	"errors"
	"strings"
	"testing"
)

type frame struct{ event, data string }

func frames(t testing.TB, in string) ([]frame, error) {
	var out []frame
	err := readSSE(strings.NewReader(in), func(event string, data []byte) error {
		out = append(out, frame{event, string(data)})
		return nil
	})
	return out, err
}

func TestReadSSE(t *testing.T) {
	got, err := frames(t, ": ping\n\nid: 1\nevent: task.request\ndata: {\"seq\":1}\n\n"+
		"data: a\r\ndata: b\r\n\r\nevent: clutch.closed\ndata:{}\n\nevent: x\n\ndata: tail-without-blank")
	if err != nil {
		t.Fatal(err)
	}
	want := []frame{{"task.request", `{"seq":1}`}, {"", "a\nb"}, {"clutch.closed", "{}"}}
	if len(got) != len(want) {
		t.Fatalf("%q", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("frame %d: %q, want %q", i, got[i], want[i])
		}
	}
	stop := errors.New("stop")
	err = readSSE(strings.NewReader("data: 1\n\ndata: 2\n\n"), func(string, []byte) error { return stop })
	if err != stop {
		t.Fatalf("frame's error: %v", err)
	}
	if _, err := frames(t, "data: "+strings.Repeat("x", maxSSELine)+"\n\n"); err == nil {
		t.Fatal("an endless line: no error")
	}
}

func FuzzReadSSE(f *testing.F) {
	f.Add([]byte("event: task.request\ndata: {\"seq\":1,\"time\":\"2026-11-26T08:00:00.000Z\",\"message\":{}}\n\n"))
	f.Add([]byte(": ping\n\nevent: clutch.closed\ndata: {\"code\":\"CAPACITY\"}\n\n"))
	f.Add([]byte("data: a\r\ndata: b\r\n\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		readSSE(strings.NewReader(string(in)), func(event string, data []byte) error {
			if strings.ContainsAny(event, "\r\n") {
				t.Fatalf("event name with a line break: %q", event)
			}
			return nil
		})
	})
}
