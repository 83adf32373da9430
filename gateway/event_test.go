package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/store"
)

type oneEvent struct {
	Seq     uint64          `json:"seq"`
	Time    string          `json:"time"`
	Message json.RawMessage `json:"message"`
}

// TestEventByIDOrSeq: GET /v1/events/{id} answers one event by message id
// or by seq, as the stored bytes, to a caller who may read its run; to
// anyone else, and for what does not exist, it is the same 404.
func TestEventByIDOrSeq(t *testing.T) {
	e := newEnv(t, &envOptions{bolt: true})
	a := e.runTask(keyAlice, `{"q":"<b>"}`)
	req, err := e.st.Get(t.Context(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	var reg store.Event
	for ev, err := range e.st.Read(t.Context(), store.Query{RunID: registry.DefaultRunID, Limit: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		reg = ev
	}
	if reg.Seq == 0 {
		t.Fatal("no registry event")
	}
	last, _ := e.st.LastSeq(t.Context())

	get := func(key, ref string, want store.Event) {
		t.Helper()
		var got oneEvent
		e.getJSON("/v1/events/"+url.PathEscape(ref), key, 200, &got)
		if got.Seq != want.Seq || !bytes.Equal(got.Message, want.Raw) || got.Time != formatTime(want.Time) {
			t.Fatalf("GET /v1/events/%s: %d %s, want %d %s", ref, got.Seq, got.Message, want.Seq, want.Raw)
		}
	}
	seq := strconv.FormatUint(req.Seq, 10)
	for _, key := range []string{keyAlice, keyAudit, keyAdmin} {
		get(key, a.ID, req)
		get(key, seq, req)
	}
	get(keyAdmin, strconv.FormatUint(reg.Seq, 10), reg)

	for _, c := range []struct{ name, key, ref string }{
		{"bob, alice's request by id", keyBob, a.ID},
		{"bob, alice's request by seq", keyBob, seq},
		{"alice, the registry's event", keyAlice, strconv.FormatUint(reg.Seq, 10)},
		{"read:all, the registry's event (reserved)", keyAudit, strconv.FormatUint(reg.Seq, 10)},
		{"an unknown id", keyAdmin, "msg_nope"},
		{"seq 0", keyAdmin, "0"},
		{"a seq past the end", keyAdmin, strconv.FormatUint(last+1, 10)},
		{"a seq past uint64", keyAdmin, "99999999999999999999999"},
		{"a signed number", keyAdmin, "+1"},
	} {
		status, body := e.do("GET", "/v1/events/"+url.PathEscape(c.ref), c.key, "")
		ae := wantError(t, c.name, status, body, 404, "NOT_FOUND")
		if ae.Error.Message != "no event "+c.ref {
			t.Errorf("%s: message %q", c.name, ae.Error.Message)
		}
	}
	status, body := e.do("GET", "/v1/events/"+a.ID, keyNone, "")
	wantError(t, "no read scope", status, body, 403, "POLICY_DENIED")
	status, body = e.do("GET", "/v1/events/"+a.ID+"?after=1", keyAlice, "")
	wantError(t, "a query parameter", status, body, 400, string(protocol.CodeInvalidField))
}

// FuzzEventRef: whatever the {id} of GET /v1/events/{id}, the gateway
// finds the event of that seq (a decimal number) or of that message id,
// or answers not found; never another event, never a panic.
func FuzzEventRef(f *testing.F) {
	e := newEnv(f, nil)
	a := e.runTask(keyAlice, `{}`)
	for _, s := range []string{a.ID, "1", "2", "0", "007", "+1", "-1", "1e3", " 1", "18446744073709551616", "", "msg_x", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ref string) {
		ev, err := e.gw.event(t.Context(), ref)
		if err != nil {
			if !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("%q: %v", ref, err)
			}
			return
		}
		m, err := ev.Message()
		if err != nil {
			t.Fatal(err)
		}
		if seq, perr := strconv.ParseUint(ref, 10, 64); (perr == nil && ref[0] != '+' && seq != ev.Seq) || (perr != nil && m.ID != ref) {
			t.Fatalf("%q gave event %d %s", ref, ev.Seq, m.ID)
		}
	})
}
