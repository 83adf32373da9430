package pgstore_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/pgstore"
)

// Several processes append at once (some of the same messages, some with
// the same idempotency keys) while followers in other processes tail the
// log: every follower sees every event exactly once, in seq order, with
// no gap — also an event that committed with a lower seq after a higher
// one was assigned — and each duplicate points at the event it
// duplicates.
func TestStressManyProcesses(t *testing.T) {
	c := cluster.Need(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	schema := newSchema()
	s := openStore(t, &pgstore.Options{Schema: schema})
	appenders, own, shared, keyed, workers := 4, 400, 30, 30, 8
	if testing.Short() {
		appenders, own = 3, 150
	}
	expected := appenders*own + shared + keyed
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	type proc struct {
		name   string
		stdout *bufio.Reader
		stderr *bytes.Buffer
		wait   func() error
	}
	start := func(role string, a childArgs) proc {
		cmd := childCmd(ctx, role, c.DSN(""), schema, a)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return proc{fmt.Sprintf("%s %d", role, a.Index), bufio.NewReader(out), &stderr, cmd.Wait}
	}
	// The followers start first and say when they follow.
	prefixes := []string{"", "", "chat.", "tool."}
	var followers []proc
	for i, p := range prefixes {
		f := start("follower", childArgs{Index: i, Total: expected + 1, Prefix: p, Seed: seed})
		if line, err := f.stdout.ReadString('\n'); err != nil || line != "ready\n" {
			t.Fatalf("%s: %q, %v; stderr: %s", f.name, line, err, f.stderr)
		}
		followers = append(followers, f)
	}
	var apps []proc
	for i := range appenders {
		apps = append(apps, start("appender", childArgs{Index: i, Own: own, Shared: shared, Keyed: keyed, Workers: workers, Seed: seed}))
	}
	for _, p := range apps {
		io.Copy(io.Discard, p.stdout)
		if err := p.wait(); err != nil {
			t.Fatalf("%s: %v\n%s", p.name, err, p.stderr)
		}
	}
	if n, err := s.LastSeq(ctx); err != nil || n != uint64(expected) {
		t.Fatalf("LastSeq = %d, %v; want %d (each shared message and key stored once)", n, err, expected)
	}
	// One last event every follower's filter matches ends them all.
	end := protocol.NewIDs(nil).NewMessage(protocol.TypeChatMessage, "agent:stress")
	end.To = []protocol.Participant{{AgentID: "agent:orchestrator"}}
	end.Payload = json.RawMessage(`{}`)
	end2 := end.Clone()
	end2.Type = protocol.TypeToolCall
	end2.ID = protocol.NewIDs(nil).MessageID()
	if _, err := s.Append(ctx, end); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, end2); err != nil {
		t.Fatal(err)
	}
	for i, f := range followers {
		out, _ := io.ReadAll(f.stdout)
		if err := f.wait(); err != nil {
			t.Fatalf("%s (prefix %q): %v\n%s", f.name, prefixes[i], err, f.stderr)
		}
		want := 0
		for range s.Read(ctx, store.Query{TypePrefix: prefixes[i], Limit: expected + 1}) {
			want++
		}
		if got := strings.Fields(string(out)); len(got) != 3 || got[0] != "ok" || got[1] != fmt.Sprint(want) {
			t.Fatalf("%s (prefix %q) printed %q; want ok and %d events", f.name, prefixes[i], out, want)
		}
	}
	st := s.Stats()
	t.Logf("%d processes appended %d events; the parent's store: %+v", appenders, expected, st)
}
