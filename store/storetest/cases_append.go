package storetest

import (
	"bytes"
	"errors"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// Seq starts at 1 and increases by exactly one per event, across single
// and batched appends; events read back whole and in order.
func testSeqIncreasesByOne(t *testing.T, su *suite) {
	s := su.open(t)
	g := newGen(1)
	if evs := readAll(t, s, store.Query{}); len(evs) != 0 {
		t.Fatalf("empty store read %d events", len(evs))
	}
	if res, err := s.Append(t.Context()); err != nil || res != nil {
		t.Fatalf("Append() = %v, %v; want nil, nil", res, err)
	}
	var all []*protocol.Message
	for _, n := range []int{1, 3, 1, 7, 2} {
		msgs := g.simple(n)
		res := appendOK(t, s, msgs...)
		for i, r := range res {
			want := uint64(len(all) + i + 1)
			if r.Seq != want || r.Duplicate || r.DuplicateBy != store.NotDuplicate {
				t.Fatalf("result %+v, want Seq %d, not a duplicate", r, want)
			}
		}
		all = append(all, msgs...)
	}
	if got := lastSeq(t, s); got != uint64(len(all)) {
		t.Fatalf("LastSeq = %d, want %d", got, len(all))
	}
	evs := readAll(t, s, store.Query{})
	if len(evs) != len(all) {
		t.Fatalf("read %d events, want %d", len(evs), len(all))
	}
	for i, e := range evs {
		if e.Seq != uint64(i+1) {
			t.Fatalf("event %d has Seq %d", i, e.Seq)
		}
		if !bytes.Equal(e.Raw, all[i].Raw()) {
			t.Fatalf("event %d: Raw differs from the appended message's bytes", e.Seq)
		}
		if e.Time.IsZero() || e.Time.Location() != nil && e.Time.Location().String() != "UTC" {
			t.Fatalf("event %d: Time %v, want a UTC time", e.Seq, e.Time)
		}
		if i > 0 && e.Time.Before(evs[i-1].Time) {
			t.Fatalf("event %d: Time %v before the previous event's %v", e.Seq, e.Time, evs[i-1].Time)
		}
		m, err := e.Message()
		if err != nil {
			t.Fatalf("event %d: Message: %v", e.Seq, err)
		}
		if m.ID != all[i].ID || m.RunID != all[i].RunID {
			t.Fatalf("event %d decodes to id %s run %s, want %s %s", e.Seq, m.ID, m.RunID, all[i].ID, all[i].RunID)
		}
	}
}

// The bytes a message arrived with are the bytes stored (docs/protocol.md §1.6;
// docs/protocol.md §8.1: a signed message is never re-encoded); a message built in Go is
// encoded once.
func testKeepsRawBytes(t *testing.T, su *suite) {
	s := su.open(t)
	raw := []byte(`{ "id":"msg_odd-but-fine", "v":"clutch/0.1", "ts":"2026-02-01T13:20:11.123Z",
	  "thread_id":"thr_1","run_id":"run_1","task_id":"task_1",
	  "from":{"agent_id":"agent:ken"}, "to":[], "type":"chat.message",
	  "payload": {"text": "h\u00e9llo",   "n": 1.50}, "x-vendor": [1,2] }`)
	m, err := protocol.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	built := newGen(2).simple(1)[0]
	if built.Raw() != nil {
		t.Fatal("generator returned an encoded message")
	}
	res := appendOK(t, s, m, built)
	if built.Raw() == nil {
		t.Fatal("Append did not remember the encoded bytes on the message")
	}
	for i, want := range [][]byte{raw, built.Raw()} {
		id := []string{m.ID, built.ID}[i]
		e, err := s.Get(t.Context(), id)
		if err != nil {
			t.Fatalf("Get(%s): %v", id, err)
		}
		if e.Seq != res[i].Seq || !bytes.Equal(e.Raw, want) {
			t.Fatalf("Get(%s) = seq %d raw %q; want seq %d raw %q", id, e.Seq, e.Raw, res[i].Seq, want)
		}
	}
}

// A message whose id is stored is not appended again; the result names
// the stored event (docs/protocol.md §5.2).
func testDuplicateID(t *testing.T, su *suite) {
	s := su.open(t)
	g := newGen(3)
	first := g.simple(1)[0]
	appendOK(t, s, first)
	again := first.Clone()
	again.Reset()
	again.Payload = []byte(`{"changed":true}`)
	again.TaskID = "task_other"
	fresh := g.simple(1)[0]
	res := appendOK(t, s, again, fresh)
	if want := (store.AppendResult{Seq: 1, Duplicate: true, DuplicateBy: store.DedupByID}); res[0] != want {
		t.Fatalf("duplicate id: result %+v, want %+v", res[0], want)
	}
	if want := (store.AppendResult{Seq: 2}); res[1] != want {
		t.Fatalf("new message after a duplicate: result %+v, want %+v", res[1], want)
	}
	e, err := s.Get(t.Context(), first.ID)
	if err != nil || e.Seq != 1 || !bytes.Equal(e.Raw, first.Raw()) {
		t.Fatalf("Get after duplicate = %d %q %v; want the first event", e.Seq, e.Raw, err)
	}
	if n := lastSeq(t, s); n != 2 {
		t.Fatalf("LastSeq = %d, want 2", n)
	}
	if evs := readAll(t, s, store.Query{TaskID: "task_other"}); len(evs) != 0 {
		t.Fatalf("the duplicate was indexed: %v", seqsOf(evs))
	}
}

// (run_id, idempotency_key) dedups within a run, not across runs.
func testDuplicateIdempotencyKey(t *testing.T, su *suite) {
	s := su.open(t)
	g := newGen(4)
	msgs := g.simple(4)
	for _, m := range msgs {
		m.IdempotencyKey = "charge-42"
	}
	msgs[2].RunID = "run_elsewhere"
	msgs[3].IdempotencyKey = ""
	r1 := appendOK(t, s, msgs[0])
	r2 := appendOK(t, s, msgs[1])
	r3 := appendOK(t, s, msgs[2], msgs[3])
	if want := (store.AppendResult{Seq: r1[0].Seq, Duplicate: true, DuplicateBy: store.DedupByIdempotencyKey}); r2[0] != want {
		t.Fatalf("same run and key: %+v, want %+v", r2[0], want)
	}
	if r3[0].Duplicate || r3[1].Duplicate || r3[0].Seq != 2 || r3[1].Seq != 3 {
		t.Fatalf("other run / no key: %+v, want seqs 2 and 3, not duplicates", r3)
	}
	if _, err := s.Get(t.Context(), msgs[1].ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get of the key duplicate: %v, want ErrNotFound (it was not stored)", err)
	}
	// A message without a key never matches another without a key.
	m := g.simple(1)[0]
	m.RunID = msgs[3].RunID
	if r := appendOK(t, s, m); r[0].Duplicate {
		t.Fatalf("two messages without a key were deduplicated: %+v", r[0])
	}
}

// Both rules hold inside one batch: the later message duplicates the
// earlier one of the same batch.
func testDuplicateInsideBatch(t *testing.T, su *suite) {
	s := su.open(t)
	g := newGen(5)
	a := g.simple(1)[0]
	a2 := a.Clone()
	a2.Reset()
	b := g.simple(2)
	b[0].IdempotencyKey, b[1].IdempotencyKey = "k", "k"
	res := appendOK(t, s, a, a2, b[0], b[1])
	want := []store.AppendResult{
		{Seq: 1},
		{Seq: 1, Duplicate: true, DuplicateBy: store.DedupByID},
		{Seq: 2},
		{Seq: 2, Duplicate: true, DuplicateBy: store.DedupByIdempotencyKey},
	}
	for i := range want {
		if res[i] != want[i] {
			t.Fatalf("result %d = %+v, want %+v", i, res[i], want[i])
		}
	}
	if n := lastSeq(t, s); n != 2 {
		t.Fatalf("LastSeq = %d, want 2", n)
	}
}

// A message whose id duplicates one event and whose key duplicates another
// is reported as a duplicate by id (the id rule is checked first).
func testDuplicateIDWinsOverKey(t *testing.T, su *suite) {
	s := su.open(t)
	g := newGen(6)
	ms := g.simple(2)
	ms[1].IdempotencyKey = "k"
	appendOK(t, s, ms...)
	m := ms[0].Clone()
	m.Reset()
	m.RunID, m.IdempotencyKey = ms[1].RunID, "k"
	res := appendOK(t, s, m)
	if want := (store.AppendResult{Seq: 1, Duplicate: true, DuplicateBy: store.DedupByID}); res[0] != want {
		t.Fatalf("result %+v, want %+v", res[0], want)
	}
}

// A batch is all or nothing: one bad message and nothing of it is stored.
func testBatchAtomicity(t *testing.T, su *suite) {
	s := su.open(t)
	g := newGen(7)
	appendOK(t, s, g.simple(2)...)
	batch := g.simple(3)
	batch[1].From.AgentID = "ken" // not "agent:…"
	_, err := s.Append(t.Context(), batch...)
	wantErr(t, "batch with an invalid message", err, store.ErrInvalidMessage)
	wantErr(t, "batch with an invalid message", err, protocol.CodeInvalidField)
	var ie *store.InvalidMessageError
	if !errors.As(err, &ie) || ie.Index != 1 {
		t.Fatalf("error %v: want an InvalidMessageError for index 1", err)
	}
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Path != "/from/agent_id" {
		t.Fatalf("error %v: want the protocol error for /from/agent_id", err)
	}
	big := g.simple(2)
	big[1].Payload = []byte(`"` + string(bytes.Repeat([]byte("x"), su.opts.MaxEventSize)) + `"`)
	_, err = s.Append(t.Context(), big...)
	wantErr(t, "batch with a too large message", err, store.ErrTooLarge)
	wantErr(t, "batch with a too large message", err, protocol.CodeTooLarge)
	var te *store.TooLargeError
	if !errors.As(err, &te) || te.Index != 1 || te.Limit != su.opts.MaxEventSize {
		t.Fatalf("error %v: want a TooLargeError for index 1 with the limit", err)
	}
	_, err = s.Append(t.Context(), g.simple(1)[0], nil)
	wantErr(t, "batch with a nil message", err, store.ErrInvalidMessage)

	if n := lastSeq(t, s); n != 2 {
		t.Fatalf("LastSeq = %d after refused batches, want 2", n)
	}
	for _, m := range []*protocol.Message{batch[0], batch[2], big[0]} {
		if _, err := s.Get(t.Context(), m.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get(%s) of a refused batch: %v, want ErrNotFound", m.ID, err)
		}
	}
	// The valid messages of a refused batch are not remembered for dedup.
	batch[1].From.AgentID = "agent:ken"
	batch[1].Reset()
	res := appendOK(t, s, batch...)
	for i, r := range res {
		if r.Duplicate || r.Seq != uint64(3+i) {
			t.Fatalf("retry of the fixed batch: result %d = %+v", i, r)
		}
	}
}

// Messages are validated before they are stored, also those that already
// have bytes (a decoded message is checked for structure only).
func testValidatesMessages(t *testing.T, su *suite) {
	s := su.open(t)
	g := newGen(8)
	bad := []struct {
		name string
		edit func(*protocol.Message)
		code protocol.Code
	}{
		{"attempt 0", func(m *protocol.Message) { m.Attempt = 0 }, protocol.CodeInvalidField},
		{"no run_id", func(m *protocol.Message) { m.RunID = "" }, protocol.CodeMissingField},
		{"unknown type", func(m *protocol.Message) { m.Type = "task.explode" }, protocol.CodeUnknownType},
		{"bad ts", func(m *protocol.Message) { m.TS = "yesterday" }, protocol.CodeInvalidField},
	}
	for _, c := range bad {
		m := g.simple(1)[0]
		c.edit(m)
		_, err := s.Append(t.Context(), m)
		wantErr(t, c.name, err, c.code)
		wantErr(t, c.name, err, store.ErrInvalidMessage)
	}
	// Decode checks structure, not meaning: the store still validates.
	decoded, err := protocol.Decode([]byte(`{"v":"clutch/0.1","id":"msg_1","ts":"not a time","thread_id":"t","run_id":"r","task_id":"k","from":{"agent_id":"agent:a"},"to":[],"type":"chat.message","payload":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Append(t.Context(), decoded)
	wantErr(t, "decoded message with a bad ts", err, protocol.CodeInvalidField)
	if n := lastSeq(t, s); n != 0 {
		t.Fatalf("LastSeq = %d, want 0: invalid messages were stored", n)
	}
}

// Get finds an event by message id.
func testGet(t *testing.T, su *suite) {
	s := su.open(t)
	ms := newGen(9).simple(5)
	appendOK(t, s, ms...)
	for i, m := range ms {
		e, err := s.Get(t.Context(), m.ID)
		if err != nil || e.Seq != uint64(i+1) || !bytes.Equal(e.Raw, m.Raw()) {
			t.Fatalf("Get(%s) = %d, %v; want seq %d", m.ID, e.Seq, err, i+1)
		}
	}
	for _, id := range []string{"", "msg_nope", ms[0].ID + "x"} {
		if _, err := s.Get(t.Context(), id); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get(%q): %v, want ErrNotFound", id, err)
		}
	}
}
