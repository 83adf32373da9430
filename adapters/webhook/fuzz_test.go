package webhook

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/protocol"
)

// FuzzParseHeaders: any header values are parsed without panicking, and
// either refused with a coded *Error or give a header set the verifier can
// use (a bounded id of printable ASCII, at least one 32-byte v1 signature).
func FuzzParseHeaders(f *testing.F) {
	sig, _ := Sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	f.Add("msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", sig)
	f.Add("id", "1", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE= v1a,abc")
	f.Add("id", "1", "v2,AAAA v1,notbase64")
	f.Add("", "", "")
	f.Add("a b", "99999999999999999999", "v1,")
	f.Add("id", "-1", strings.Repeat("v1,AA== ", 20))
	f.Fuzz(func(t *testing.T, id, ts, s string) {
		h, err := parseHeaders(id, ts, s)
		if err != nil {
			var e *adapters.Error
			if !errors.As(err, &e) || !e.Code.Known() || !errors.Is(err, ErrSignature) {
				t.Fatalf("refusal is not a coded signature error: %#v", err)
			}
			return
		}
		if h.id != id || len(id) == 0 || len(id) > maxIDBytes || h.ts < 0 || len(h.sigs) == 0 {
			t.Fatalf("accepted %q %q %q as %+v", id, ts, s, h)
		}
		for _, g := range h.sigs {
			if len(g) != 32 {
				t.Fatalf("signature of %d bytes", len(g))
			}
		}
		_, _ = verify([]key{{key: []byte("0123456789abcdef")}}, h, nil, time.Unix(h.ts, 0), time.Minute)
	})
}

// FuzzMapping: any body is mapped without panicking, refused with a coded
// *Error of ErrInput, or gives values the envelope can hold, under a mapping
// of one envelope per body and one of a batch (Each).
func FuzzMapping(f *testing.F) {
	base := Mapping{
		TypeFrom: "/event", Types: map[string]protocol.Type{"order.created": protocol.TypeTaskRequest}, Type: "x.shop.other",
		Payload: "/data", RunID: "/meta/run", TaskID: "/items/0/id", IdempotencyKey: "/id",
		Meta: map[string]string{"sku": "/data/sku", "weird": "/a~1b/~0c"},
	}
	batch := base
	batch.Each = "/events"
	var cs []*compiled
	for _, m := range []*Mapping{&base, &batch} {
		c, err := m.compile()
		if err != nil {
			f.Fatal(err)
		}
		cs = append(cs, c)
	}
	f.Add([]byte(`{"event":"order.created","id":"e1","data":{"sku":"A"},"meta":{"run":"r1"},"items":[{"id":7}]}`))
	f.Add([]byte(`{"event":"other","id":1,"data":null,"meta":{"run":"r"},"items":[{"id":"t"}],"a/b":{"~c":[]}}`))
	f.Add([]byte(`{"events":[{"event":"order.created","id":"e1","data":{},"meta":{"run":"r1"},"items":[{"id":7}]},{"event":"x"}]}`))
	f.Add([]byte(`{"events":[]}`))
	f.Add([]byte(`{"event":"x","event":"y"}`))
	f.Add([]byte(`{"items":{"0":{"id":"t"}}}`))
	f.Add([]byte(`[]`))
	f.Add([]byte("{\"event\":\"\xff\"}"))
	f.Fuzz(func(t *testing.T, body []byte) {
		for ci, c := range cs {
			items, err := c.translate(body)
			if err != nil {
				var e *adapters.Error
				if !errors.As(err, &e) || !e.Code.Known() || !errors.Is(err, ErrInput) {
					t.Fatalf("refusal is not a coded input error: %#v", err)
				}
				continue
			}
			if ci == 0 && len(items) != 1 {
				t.Fatalf("%d items without Each", len(items))
			}
			for _, m := range items {
				if m.typ != protocol.TypeTaskRequest && m.typ != "x.shop.other" {
					t.Fatalf("type %q", m.typ)
				}
				msg := protocol.NewMessage(m.typ, "agent:fuzz")
				if err := msg.SetPayload(json.RawMessage(m.payload)); err != nil {
					t.Fatalf("payload %q does not fit an envelope: %v", m.payload, err)
				}
				for i, v := range m.fields {
					if c.fields[i] != nil && v == "" {
						t.Fatalf("field %d mapped to an empty string", i)
					}
				}
			}
		}
	})
}

func TestParsePointer(t *testing.T) {
	for in, want := range map[string][]string{
		"":         nil,
		"/":        {""},
		"/a/b":     {"a", "b"},
		"/a~1b/~0": {"a/b", "~"},
		"/~01":     {"~1"},
	} {
		p, err := parsePointer(in)
		if err != nil || len(p.tokens) != len(want) {
			t.Fatalf("%q: %v %q", in, err, p.tokens)
		}
		for i := range want {
			if p.tokens[i] != want[i] {
				t.Fatalf("%q: %q", in, p.tokens)
			}
		}
	}
	for _, bad := range []string{"a", "/~", "/~2", "/a~"} {
		if _, err := parsePointer(bad); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
}
