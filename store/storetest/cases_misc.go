package storetest

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/google/go-cmp/cmp"
)

// Artifacts are content addressed (docs/protocol.md §8.2).
func testArtifacts(t *testing.T, su *suite) {
	s := su.open(t)
	ctx := t.Context()
	data := []byte("quarterly report")
	orig := bytes.Clone(data)
	ref, err := s.PutArtifact(ctx, "text/plain; charset=utf-8", data)
	if err != nil {
		t.Fatal(err)
	}
	if ref != store.ArtifactRef(orig) {
		t.Fatalf("ref %s, want %s", ref, store.ArtifactRef(orig))
	}
	data[0] = 'X' // the store kept its own copy
	a, err := s.GetArtifact(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if want := (store.Artifact{Ref: ref, MediaType: "text/plain; charset=utf-8", Data: orig}); !cmp.Equal(a, want) {
		t.Fatalf("GetArtifact = %+v, want %+v", a, want)
	}
	a.Data[0] = 'Y' // and gives out copies
	if again, _ := s.GetArtifact(ctx, ref); !bytes.Equal(again.Data, orig) {
		t.Fatal("modifying the returned Data changed the stored artifact")
	}
	ref2, err := s.PutArtifact(ctx, "application/pdf", orig)
	if err != nil || ref2 != ref {
		t.Fatalf("second put of the same bytes = %s, %v; want %s", ref2, err, ref)
	}
	if a, _ := s.GetArtifact(ctx, ref); a.MediaType != "text/plain; charset=utf-8" {
		t.Fatalf("media type after a second put = %q, want the first one", a.MediaType)
	}
	empty, err := s.PutArtifact(ctx, "", nil)
	if err != nil || empty != store.ArtifactRef(nil) {
		t.Fatalf("empty artifact: %s, %v", empty, err)
	}
	if a, err := s.GetArtifact(ctx, empty); err != nil || len(a.Data) != 0 || a.MediaType != store.DefaultMediaType {
		t.Fatalf("GetArtifact(empty) = %+v, %v", a, err)
	}
	big := make([]byte, 1<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range big {
		big[i] = byte(r.Uint32())
	}
	bref, err := s.PutArtifact(ctx, "application/octet-stream", big)
	if err != nil {
		t.Fatal(err)
	}
	if a, err := s.GetArtifact(ctx, bref); err != nil || !bytes.Equal(a.Data, big) {
		t.Fatalf("1 MiB artifact did not round-trip: %v", err)
	}
	if _, err := s.PutArtifact(ctx, "not a media type", orig); !errors.Is(err, store.ErrInvalidMediaType) {
		t.Fatalf("PutArtifact with a bad media type: %v, want ErrInvalidMediaType", err)
	}
	if su.opts.MaxArtifactSize <= 256<<20 {
		_, err := s.PutArtifact(ctx, "", make([]byte, su.opts.MaxArtifactSize+1))
		wantErr(t, "artifact over the limit", err, store.ErrTooLarge)
	}
	if _, err := s.GetArtifact(ctx, store.ArtifactRef([]byte("never stored"))); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetArtifact of an unknown ref: %v, want ErrNotFound", err)
	}
}

// Refs that are not well-formed addresses are refused.
func testArtifactRefs(t *testing.T, su *suite) {
	s := su.open(t)
	good := store.ArtifactRef([]byte("x"))
	hexPart := strings.TrimPrefix(good, store.ArtifactRefPrefix)
	for _, ref := range []string{
		"", "artifact:", "artifact:report_456", "artifact:sha256:", "sha256:" + hexPart,
		"artifact:sha256:" + strings.ToUpper(hexPart), "artifact:sha256:" + hexPart[:63],
		"artifact:sha256:" + hexPart + "0", "artifact:md5:" + hexPart, good + "\n", " " + good,
		"artifact:sha256:" + strings.Repeat("g", 64),
	} {
		if _, err := s.GetArtifact(t.Context(), ref); !errors.Is(err, store.ErrInvalidRef) {
			t.Errorf("GetArtifact(%q): %v, want ErrInvalidRef", ref, err)
		}
	}
}

// Every blocking call honours its context.
func testContextCancelled(t *testing.T, su *suite) {
	s := su.open(t)
	g := newGen(25)
	ms := g.simple(4)
	appendOK(t, s, ms[:3]...)
	ref, err := s.PutArtifact(t.Context(), "", []byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	for _, ctx := range []context.Context{canceledContext(), expiredContext(t)} {
		want := ctx.Err()
		_, err := s.Append(ctx, ms[3])
		wantErr(t, "Append", err, want)
		_, err = s.Get(ctx, ms[0].ID)
		wantErr(t, "Get", err, want)
		_, err = s.LastSeq(ctx)
		wantErr(t, "LastSeq", err, want)
		_, err = s.PutArtifact(ctx, "", []byte("b"))
		wantErr(t, "PutArtifact", err, want)
		_, err = s.GetArtifact(ctx, ref)
		wantErr(t, "GetArtifact", err, want)
		n, err := drain(s.Read(ctx, store.Query{}))
		if n != 0 {
			t.Errorf("Read with a done context returned %d events", n)
		}
		wantErr(t, "Read", err, want)
	}
	if n := lastSeq(t, s); n != 3 {
		t.Fatalf("LastSeq = %d: an Append with a done context stored something", n)
	}
	if _, err := s.GetArtifact(t.Context(), store.ArtifactRef([]byte("b"))); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a PutArtifact with a done context stored the artifact: %v", err)
	}
}

func expiredContext(t *testing.T) context.Context {
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	t.Cleanup(cancel)
	return ctx
}

// After Close every call fails with ErrClosed; Close again is fine.
func testUseAfterClose(t *testing.T, su *suite) {
	s := su.newStore(t)
	g := newGen(26)
	ms := g.simple(2)
	appendOK(t, s, ms[0])
	ref, err := s.PutArtifact(t.Context(), "", []byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v, want nil", err)
	}
	ctx := t.Context()
	_, err = s.Append(ctx, ms[1])
	wantErr(t, "Append", err, store.ErrClosed)
	_, err = s.Append(ctx)
	wantErr(t, "Append()", err, store.ErrClosed)
	_, err = s.Get(ctx, ms[0].ID)
	wantErr(t, "Get", err, store.ErrClosed)
	_, err = s.LastSeq(ctx)
	wantErr(t, "LastSeq", err, store.ErrClosed)
	_, err = s.PutArtifact(ctx, "", []byte("b"))
	wantErr(t, "PutArtifact", err, store.ErrClosed)
	_, err = s.GetArtifact(ctx, ref)
	wantErr(t, "GetArtifact", err, store.ErrClosed)
	_, err = drain(s.Read(ctx, store.Query{}))
	wantErr(t, "Read", err, store.ErrClosed)
	_, err = drain(s.Follow(ctx, store.Query{}))
	wantErr(t, "Follow", err, store.ErrClosed)
}

// A message of exactly the size limit is stored and read back whole; one
// byte more is refused.
func testLargeMessage(t *testing.T, su *suite) {
	s := su.open(t)
	g := newGen(27)
	limit := su.opts.MaxEventSize
	sized := func(size int) *protocol.Message {
		m := g.simple(1)[0]
		probe := m.Clone()
		probe.Payload = []byte(`""`)
		pad := size - len(mustEncode(t, probe))
		m.Payload = []byte(`"` + strings.Repeat("x", pad) + `"`)
		if n := len(mustEncode(t, m)); n != size {
			t.Fatalf("built a %d-byte message, want %d", n, size)
		}
		return m
	}
	m := sized(limit)
	appendOK(t, s, m)
	e, err := s.Get(t.Context(), m.ID)
	if err != nil || !bytes.Equal(e.Raw, m.Raw()) {
		t.Fatalf("Get of a %d-byte message: %v (raw %d bytes)", limit, err, len(e.Raw))
	}
	if d, err := e.Message(); err != nil || len(d.Payload) != len(m.Payload) {
		t.Fatalf("Message of a %d-byte event: %v", limit, err)
	}
	evs := readAll(t, s, store.Query{RunID: m.RunID})
	if len(evs) != 1 || !bytes.Equal(evs[0].Raw, m.Raw()) {
		t.Fatalf("Read of a %d-byte event returned %d events", limit, len(evs))
	}
	over := sized(limit + 1)
	_, err = s.Append(t.Context(), over)
	wantErr(t, "message over the limit", err, store.ErrTooLarge)
	if n := lastSeq(t, s); n != 1 {
		t.Fatalf("LastSeq = %d, want 1", n)
	}
}

// A durable store keeps events, seqs, times, dedup state and artifacts
// across Close and reopen.
func testReopen(t *testing.T, su *suite) {
	if su.opts.Reopen == nil {
		t.Skip("not durable: Options.Reopen is nil")
	}
	s := su.open(t)
	m := loadWorkload(t, s, 30, 500)
	ref, err := s.PutArtifact(t.Context(), "text/plain", []byte("kept"))
	if err != nil {
		t.Fatal(err)
	}
	before := readAll(t, s, store.Query{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = su.reopen(t, s)
	if n := lastSeq(t, s); n != uint64(len(m)) {
		t.Fatalf("LastSeq after reopen = %d, want %d", n, len(m))
	}
	after := readAll(t, s, store.Query{})
	if len(after) != len(before) {
		t.Fatalf("%d events after reopen, %d before", len(after), len(before))
	}
	for i, e := range after {
		if b := before[i]; e.Seq != b.Seq || !e.Time.Equal(b.Time) || !bytes.Equal(e.Raw, b.Raw) {
			t.Fatalf("event %d after reopen is seq %d at %v, before seq %d at %v (or its bytes differ)", i, e.Seq, e.Time, b.Seq, b.Time)
		}
	}
	checkRead(t, s, m, store.Query{RunID: m[0].RunID})
	checkRead(t, s, m, store.Query{TaskID: m[1].TaskID, AfterSeq: 7})
	dupID := m[10].Clone()
	dupID.Reset()
	dupKey := newGen(31).msg(key{run: m[0].RunID})
	dupKey.IdempotencyKey = m[0].IdempotencyKey
	fresh := newGen(32).simple(1)[0]
	res := appendOK(t, s, dupID, dupKey, fresh)
	want := []store.AppendResult{
		{Seq: 11, Duplicate: true, DuplicateBy: store.DedupByID},
		{Seq: 1, Duplicate: true, DuplicateBy: store.DedupByIdempotencyKey},
		{Seq: uint64(len(m) + 1)},
	}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Fatalf("appends after reopen (-want +got):\n%s", diff)
	}
	if a, err := s.GetArtifact(t.Context(), ref); err != nil || string(a.Data) != "kept" {
		t.Fatalf("artifact after reopen: %+v, %v", a, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = su.reopen(t, s)
	if n := lastSeq(t, s); n != uint64(len(m)+1) {
		t.Fatalf("LastSeq after a second reopen = %d, want %d", n, len(m)+1)
	}
	got, err := drain(s.Follow(t.Context(), store.Query{AfterSeq: uint64(len(m) - 5), Limit: 6}))
	if got != 6 || err != nil {
		t.Fatalf("Follow after reopen: %d events, %v", got, err)
	}
	if e, err := s.Get(t.Context(), fresh.ID); err != nil || e.Seq != uint64(len(m)+1) {
		t.Fatalf("Get after reopen: %d, %v", e.Seq, err)
	}
}

func (su *suite) reopen(t *testing.T, closed store.Store) store.Store {
	t.Helper()
	s := su.opts.Reopen(t, closed)
	if s == nil {
		t.Fatal("Reopen returned nil")
	}
	t.Cleanup(func() { s.Close() })
	return s
}
