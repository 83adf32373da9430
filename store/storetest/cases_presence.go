package storetest

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// The cases of store.Presence, for a store that has it (they skip
// otherwise): beats replace each other, list by prefix in key order, are
// stamped with the store's clock, stay out of the log, survive a reopen
// of a durable store, and bad keys are refused.
func init() {
	cases = append(cases, []struct {
		name string
		run  func(*testing.T, *suite)
	}{
		{"PresenceReplaces", testPresenceReplaces},
		{"PresencePrefix", testPresencePrefix},
		{"PresenceClock", testPresenceClock},
		{"PresenceNotInLog", testPresenceNotInLog},
		{"PresenceConcurrentBeats", testPresenceConcurrent},
		{"PresenceBadKeys", testPresenceBadKeys},
		{"PresenceReopen", testPresenceReopen},
		{"PresenceClosed", testPresenceClosed},
	}...)
}

// presence opens a fresh store and returns its Presence, or skips.
func (su *suite) presence(t *testing.T) (store.Store, store.Presence) {
	t.Helper()
	s := su.open(t)
	p := store.PresenceOf(s)
	if p == nil {
		t.Skip("the store has no store.Presence")
	}
	return s, p
}

func beat(t *testing.T, p store.Presence, key, data string) (at time.Time, prev store.Beat) {
	t.Helper()
	var d []byte
	if data != "" {
		d = []byte(data)
	}
	at, prev, err := p.Beat(t.Context(), key, d)
	if err != nil {
		t.Fatalf("Beat(%q): %v", key, err)
	}
	return at, prev
}

func beats(t *testing.T, p store.Presence, prefix string) []store.Beat {
	t.Helper()
	var out []store.Beat
	for b, err := range p.Beats(t.Context(), prefix) {
		if err != nil {
			t.Fatalf("Beats(%q): %v", prefix, err)
		}
		out = append(out, b)
	}
	return out
}

func keysOf(bs []store.Beat) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = b.Key
	}
	return out
}

func testPresenceReplaces(t *testing.T, su *suite) {
	_, p := su.presence(t)
	at1, prev1 := beat(t, p, "agent:ken", "one")
	if !prev1.Time.IsZero() || prev1.Key != "" || prev1.Data != nil {
		t.Fatalf("first beat: prev %+v, want none", prev1)
	}
	at2, prev2 := beat(t, p, "agent:ken", "two")
	if !prev2.Time.Equal(at1) || prev2.Key != "agent:ken" || string(prev2.Data) != "one" {
		t.Fatalf("second beat: prev %+v, want the first beat (%v, \"one\")", prev2, at1)
	}
	if at2.Before(at1) {
		t.Fatalf("second beat at %v, before the first at %v", at2, at1)
	}
	got := beats(t, p, "")
	if len(got) != 1 || got[0].Key != "agent:ken" || !got[0].Time.Equal(at2) || string(got[0].Data) != "two" {
		t.Fatalf("after two beats of one key: %+v; want one beat, the second (%v, \"two\")", got, at2)
	}
	if got[0].Time.Location() != time.UTC {
		t.Errorf("beat time %v is not UTC", got[0].Time)
	}
	beat(t, p, "agent:ken", "")
	if got := beats(t, p, ""); len(got) != 1 || len(got[0].Data) != 0 {
		t.Fatalf("a beat without data after one with: %+v; want no data", got)
	}
}

func testPresencePrefix(t *testing.T, su *suite) {
	_, p := su.presence(t)
	for _, k := range []string{"node:b", "agent:x/2", "agent:x", "agent:x/1", "agent:x%", "agent:x_1", "node:a"} {
		beat(t, p, k, k)
	}
	for _, c := range []struct {
		prefix string
		want   []string
	}{
		{"", []string{"agent:x", "agent:x%", "agent:x/1", "agent:x/2", "agent:x_1", "node:a", "node:b"}},
		{"agent:x/", []string{"agent:x/1", "agent:x/2"}},
		{"node:", []string{"node:a", "node:b"}},
		{"agent:x%", []string{"agent:x%"}}, // LIKE's wildcards are plain characters
		{"agent:x_", []string{"agent:x_1"}},
		{"zzz", nil},
	} {
		got := beats(t, p, c.prefix)
		if strings.Join(keysOf(got), ",") != strings.Join(c.want, ",") {
			t.Errorf("Beats(%q) = %v, want %v in key order", c.prefix, keysOf(got), c.want)
		}
		for _, b := range got {
			if string(b.Data) != b.Key {
				t.Errorf("beat %q holds %q, want its own data", b.Key, b.Data)
			}
		}
	}
	n := 0
	for range p.Beats(t.Context(), "") {
		n++
		break
	}
	if n != 1 {
		t.Fatal("breaking out of Beats")
	}
}

func testPresenceClock(t *testing.T, su *suite) {
	s, p := su.presence(t)
	now := store.ClockOf(s)
	if now == nil {
		now = time.Now
	}
	before := now()
	at, _ := beat(t, p, "agent:ken", "")
	after := now()
	// A store may keep times coarser than the clock's (PostgreSQL: µs).
	if at.Before(before.Add(-time.Microsecond)) || at.After(after) {
		t.Fatalf("beat at %v, want the store's clock: between %v and %v", at, before, after)
	}
	if got := beats(t, p, ""); len(got) != 1 || !got[0].Time.Equal(at) {
		t.Fatalf("Beats: %+v, want the time Beat returned (%v)", got, at)
	}
}

func testPresenceNotInLog(t *testing.T, su *suite) {
	s, p := su.presence(t)
	for range 10 {
		beat(t, p, "agent:ken", "ok")
	}
	if n := lastSeq(t, s); n != 0 {
		t.Fatalf("LastSeq after beats = %d, want 0: beats are not events", n)
	}
	m := newGen(41).simple(1)
	if res := appendOK(t, s, m...); res[0].Seq != 1 {
		t.Fatalf("the first event after beats has seq %d, want 1", res[0].Seq)
	}
	if evs := readAll(t, s, store.Query{}); len(evs) != 1 {
		t.Fatalf("Read: %d events, want 1", len(evs))
	}
}

func testPresenceConcurrent(t *testing.T, su *suite) {
	_, p := su.presence(t)
	const n = 16
	prevs := make([]store.Beat, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			_, prev, err := p.Beat(t.Context(), "agent:ken", []byte{byte(i)})
			prevs[i] = prev
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	zero := 0
	for _, prev := range prevs {
		if prev.Time.IsZero() {
			zero++
		} else if len(prev.Data) != 1 {
			t.Errorf("a concurrent beat replaced %+v, want one of the others", prev)
		}
	}
	if zero != 1 {
		t.Fatalf("%d of %d concurrent first beats of a key found no beat before them; want exactly 1", zero, n)
	}
	if got := beats(t, p, ""); len(got) != 1 || len(got[0].Data) != 1 {
		t.Fatalf("after concurrent beats: %+v, want one beat of one of them", got)
	}
}

func testPresenceBadKeys(t *testing.T, su *suite) {
	_, p := su.presence(t)
	for _, key := range []string{"", "agent:a\nb", "agent:\x00", "agent:\xff", strings.Repeat("k", store.MaxBeatKey+1)} {
		_, _, err := p.Beat(t.Context(), key, nil)
		var ke *store.KeyError
		if !errors.Is(err, store.ErrInvalidKey) || !errors.As(err, &ke) || protocol.CodeOf(err) != protocol.CodeInvalidField {
			t.Errorf("Beat(%q): %v, want a *store.KeyError matching ErrInvalidKey (INVALID_FIELD)", key, err)
		}
	}
	_, _, err := p.Beat(t.Context(), "agent:big", bytes.Repeat([]byte("x"), store.MaxBeatData+1))
	if !errors.Is(err, store.ErrTooLarge) {
		t.Errorf("Beat with %d bytes of data: %v, want ErrTooLarge", store.MaxBeatData+1, err)
	}
	if _, _, err := p.Beat(t.Context(), strings.Repeat("k", store.MaxBeatKey), bytes.Repeat([]byte("x"), store.MaxBeatData)); err != nil {
		t.Errorf("Beat at both limits: %v", err)
	}
	if got := beats(t, p, ""); len(got) != 1 {
		t.Fatalf("after refused beats: %v, want only the beat at the limits", keysOf(got))
	}
}

func testPresenceReopen(t *testing.T, su *suite) {
	if su.opts.Reopen == nil {
		t.Skip("not durable: Options.Reopen is nil")
	}
	s, p := su.presence(t)
	beat(t, p, "agent:a", "first")
	appendOK(t, s, newGen(43).simple(1)...) // a commit between beats
	beat(t, p, "agent:a", "second")
	atB, _ := beat(t, p, "agent:b", "")
	want := beats(t, p, "")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = su.reopen(t, s)
	p = store.PresenceOf(s)
	got := beats(t, p, "")
	if len(got) != len(want) {
		t.Fatalf("after reopen: %v, want %v", keysOf(got), keysOf(want))
	}
	for i := range got {
		if got[i].Key != want[i].Key || !got[i].Time.Equal(want[i].Time) || !bytes.Equal(got[i].Data, want[i].Data) {
			t.Errorf("beat %d after reopen: %+v, want %+v", i, got[i], want[i])
		}
	}
	_, prev := beat(t, p, "agent:b", "")
	if !prev.Time.Equal(atB) {
		t.Errorf("a beat after reopen: prev %v, want the last beat before (%v)", prev.Time, atB)
	}
}

func testPresenceClosed(t *testing.T, su *suite) {
	s, p := su.presence(t)
	beat(t, p, "agent:a", "")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.Beat(t.Context(), "agent:a", nil); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Beat after Close: %v, want ErrClosed", err)
	}
	for _, err := range p.Beats(t.Context(), "") {
		if !errors.Is(err, store.ErrClosed) {
			t.Errorf("Beats after Close: %v, want ErrClosed", err)
		}
		break
	}
}
