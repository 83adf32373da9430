package eventio_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/internal/eventio"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// events returns signed events whose stored bytes vary in the ways a line
// format must survive: compact, with inner spaces and line breaks, with
// white space around them.
func events(t testing.TB) ([]store.Event, ed25519.PublicKey) {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	ids := protocol.NewIDs(nil)
	req := ids.NewMessage(protocol.TypeTaskRequest, "agent:ui")
	req.Payload = json.RawMessage(`{"q":"caf\u00e9 <b>bold</b>","n":1.50}`)
	if err := protocol.Sign(req, "k1", priv); err != nil {
		t.Fatal(err)
	}
	var out []store.Event
	add := func(raw []byte) {
		m, err := protocol.Decode(raw)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		out = append(out, store.Event{Seq: uint64(len(out) + 1), Time: time.Date(2026, 11, 26, 8, 0, 0, int(len(out))*1e6, time.UTC), Raw: m.Raw()})
	}
	add(req.Raw())
	var pretty bytes.Buffer
	json.Indent(&pretty, req.Raw(), "", "  ")
	add(pretty.Bytes()) // line breaks inside: base64
	add(append(append([]byte(" \t"), req.Raw()...), ' '))
	res := ids.Reply(req, protocol.TypeTaskResult, "agent:ken")
	res.Payload = json.RawMessage(`{"answer":"line1\nline2"}`)
	if err := protocol.Sign(res, "k1", priv); err != nil {
		t.Fatal(err)
	}
	add(res.Raw())
	return out, pub
}

func TestRoundTrip(t *testing.T) {
	evs, pub := events(t)
	for _, f := range []eventio.Format{eventio.JSONLines, eventio.CloudEvents} {
		t.Run(f.String(), func(t *testing.T) {
			var buf bytes.Buffer
			w := eventio.NewWriter(&buf, f)
			for _, ev := range evs {
				if err := w.Write(ev); err != nil {
					t.Fatal(err)
				}
			}
			w.Flush()
			if n := strings.Count(buf.String(), "\n"); n != len(evs) {
				t.Fatalf("%d lines for %d events:\n%s", n, len(evs), buf.String())
			}
			r := eventio.NewReader(&buf)
			for i, ev := range evs {
				rec, err := r.Next()
				if err != nil {
					t.Fatalf("event %d: %v", i, err)
				}
				if !bytes.Equal(rec.Msg.Raw(), ev.Raw) {
					t.Fatalf("event %d: bytes changed:\n%q\n%q", i, rec.Msg.Raw(), ev.Raw)
				}
				if rec.Seq != ev.Seq || rec.Format != f || rec.Line != i+1 {
					t.Fatalf("event %d: seq %d format %v line %d", i, rec.Seq, rec.Format, rec.Line)
				}
				if f == eventio.JSONLines && !rec.Time.Equal(ev.Time) {
					t.Fatalf("event %d: time %v, want %v", i, rec.Time, ev.Time)
				}
				if err := protocol.Verify(rec.Msg.Raw(), protocol.StaticKeys{"k1": pub}); err != nil {
					t.Fatalf("event %d: signature after the round trip: %v", i, err)
				}
			}
			if _, err := r.Next(); err != io.EOF {
				t.Fatalf("after the last event: %v", err)
			}
		})
	}
}

// A CloudEvent carries the attributes the package doc maps.
func TestCloudEventAttributes(t *testing.T) {
	evs, _ := events(t)
	var buf bytes.Buffer
	w := eventio.NewWriter(&buf, eventio.CloudEvents)
	w.Write(evs[0])
	w.Flush()
	var ce map[string]any
	if err := json.Unmarshal(buf.Bytes(), &ce); err != nil {
		t.Fatal(err)
	}
	m, _ := protocol.Decode(evs[0].Raw)
	want := map[string]any{
		"specversion": "1.0", "id": m.ID, "source": "/runs/" + m.RunID, "type": "io.github.clutchprotocol.task.request",
		"subject": m.TaskID, "time": m.TS, "datacontenttype": "application/json", "clutchseq": 1.0,
	}
	for k, v := range want {
		if ce[k] != v {
			t.Errorf("%s = %v, want %v", k, ce[k], v)
		}
	}
	if _, ok := ce["data"].(map[string]any); !ok {
		t.Errorf("data is %T, want the envelope object", ce["data"])
	}
}

func TestMalformedLines(t *testing.T) {
	evs, _ := events(t)
	good := string(evs[0].Raw)
	m, _ := protocol.Decode(evs[0].Raw)
	for name, line := range map[string]string{
		"not json":            `{"seq":1,`,
		"array":               `[1,2]`,
		"no message":          `{"seq":1,"time":"2026-11-26T08:00:00Z"}`,
		"message not object":  `{"seq":1,"message":"x"}`,
		"both forms":          `{"message":` + good + `,"message_base64":"e30="}`,
		"bad base64":          `{"message_base64":"!!"}`,
		"bad time":            `{"time":"yesterday","message":` + good + `}`,
		"bad message":         `{"message":{"v":"clutch/0.1"}}`,
		"duplicate member":    `{"seq":1,"seq":2,"message":` + good + `}`,
		"negative seq":        `{"seq":-1,"message":` + good + `}`,
		"ce version":          `{"specversion":"0.3","id":"` + m.ID + `","type":"io.github.clutchprotocol.task.request","data":` + good + `}`,
		"ce content type":     `{"specversion":"1.0","id":"` + m.ID + `","type":"io.github.clutchprotocol.task.request","datacontenttype":"text/plain","data":` + good + `}`,
		"ce id mismatch":      `{"specversion":"1.0","id":"msg_other","type":"io.github.clutchprotocol.task.request","data":` + good + `}`,
		"ce type mismatch":    `{"specversion":"1.0","id":"` + m.ID + `","type":"com.example.task.request","data":` + good + `}`,
		"ce no data":          `{"specversion":"1.0","id":"` + m.ID + `","type":"io.github.clutchprotocol.task.request"}`,
		"message with tabs ":  `{"message":` + strings.Replace(good, `"v"`, "\t\"v\"", 1) + `x}`,
		"invalid utf-8 outer": "{\"x\":\"\xff\",\"message\":" + good + "}",
	} {
		_, err := eventio.NewReader(strings.NewReader("\n" + line + "\n")).Next()
		if !errors.Is(err, eventio.ErrRecord) || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%s: %v, want ErrRecord at line 2", name, err)
		}
		if protocol.CodeOf(err) == "" {
			t.Errorf("%s: no code", name)
		}
	}
}

func TestLongLine(t *testing.T) {
	long := `{"message_base64":"` + strings.Repeat("A", eventio.MaxLine) + `"}`
	_, err := eventio.NewReader(strings.NewReader(long)).Next()
	if !errors.Is(err, eventio.ErrRecord) || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("%v", err)
	}
}

func TestParseFormat(t *testing.T) {
	for s, want := range map[string]eventio.Format{"jsonl": eventio.JSONLines, "": eventio.JSONLines, "ce": eventio.CloudEvents, "cloudevents": eventio.CloudEvents} {
		if f, err := eventio.ParseFormat(s); err != nil || f != want {
			t.Errorf("ParseFormat(%q) = %v, %v", s, f, err)
		}
	}
	if _, err := eventio.ParseFormat("xml"); !errors.Is(err, eventio.ErrFormat) {
		t.Errorf("xml: %v", err)
	}
}

func FuzzDecodeLine(f *testing.F) {
	evs, _ := events(f)
	for _, form := range []eventio.Format{eventio.JSONLines, eventio.CloudEvents} {
		var buf bytes.Buffer
		w := eventio.NewWriter(&buf, form)
		for _, ev := range evs {
			w.Write(ev)
		}
		w.Flush()
		for _, l := range bytes.Split(buf.Bytes(), []byte("\n")) {
			f.Add(l)
		}
	}
	f.Add([]byte(`{"specversion":"1.0","data_base64":"e30="}`))
	f.Add([]byte(`{"seq":18446744073709551615,"message":{}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		rec, err := eventio.DecodeLine(line, 1)
		if err != nil {
			if !errors.Is(err, eventio.ErrRecord) {
				t.Fatalf("error not ErrRecord: %v", err)
			}
			return
		}
		// What decodes writes back and reads again as the same bytes.
		var buf bytes.Buffer
		w := eventio.NewWriter(&buf, rec.Format)
		if err := w.Write(store.Event{Seq: rec.Seq, Time: rec.Time, Raw: rec.Msg.Raw()}); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		again, err := eventio.DecodeLine(bytes.TrimSuffix(buf.Bytes(), []byte("\n")), 1)
		if err != nil {
			t.Fatalf("re-read: %v\n%s", err, buf.Bytes())
		}
		if !bytes.Equal(again.Msg.Raw(), rec.Msg.Raw()) {
			t.Fatalf("bytes changed")
		}
	})
}

// Write events as CloudEvents and read them back.
func Example() {
	m := protocol.NewMessage(protocol.TypeChatMessage, "agent:ui")
	m.ID, m.RunID, m.ThreadID, m.TaskID, m.TS = "msg_1", "run_1", "thr_1", "task_1", "2026-11-26T08:00:00.000Z"
	m.Payload = json.RawMessage(`{"text":"hi"}`)
	raw, err := protocol.Encode(m)
	if err != nil {
		panic(err)
	}
	var buf bytes.Buffer
	w := eventio.NewWriter(&buf, eventio.CloudEvents)
	w.Write(store.Event{Seq: 7, Time: time.Now(), Raw: raw})
	w.Flush()
	line := buf.String()
	fmt.Print(line[:strings.Index(line, `,"data"`)], "...\n")

	rec, err := eventio.NewReader(&buf).Next()
	if err != nil {
		panic(err)
	}
	fmt.Println(rec.Format, rec.Seq, rec.Msg.ID, bytes.Equal(rec.Msg.Raw(), raw))
	// Output:
	// {"specversion":"1.0","id":"msg_1","source":"/runs/run_1","type":"io.github.clutchprotocol.chat.message","subject":"task_1","time":"2026-11-26T08:00:00.000Z","datacontenttype":"application/json","clutchseq":7...
	// cloudevents 7 msg_1 true
}

// TestErrorTexts: what is wrong, in words, with the line number, each
// prefix once and no Go type names.
func TestErrorTexts(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{`[1]`, "malformed event: line 3: a JSON array, not an event object"},
		{`{"seq":"x","message":{}}`, "malformed event: line 3: member seq is a JSON string, want a number"},
		{`{x`, "malformed event: line 3: not valid JSON: invalid character 'x' at start of value after offset 1"},
		{`{"message":{"v":"clutch/0.1"}}`, `malformed event: line 3: the message: MISSING_FIELD at /id: required field "id" is missing`},
	} {
		_, err := eventio.DecodeLine([]byte(c.line), 3)
		if err == nil || err.Error() != c.want || !errors.Is(err, eventio.ErrRecord) {
			t.Errorf("%s: %v, want %q", c.line, err, c.want)
		}
	}
	_, err := eventio.ParseFormat("xml")
	if err == nil || err.Error() != `unknown format "xml" (want jsonl or cloudevents)` || !errors.Is(err, eventio.ErrFormat) {
		t.Errorf("ParseFormat: %v", err)
	}
}
