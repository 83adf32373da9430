package adaptertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/protocol"
)

// Case is one named input.
type Case struct {
	Name string
	Raw  []byte
	// Code is, for Options.Invalid, the code the refusal must carry (as
	// protocol.CodeOf reads it, the same as the adapters.Error's Code);
	// "" accepts any known code.
	Code protocol.Code
}

// Options configures Run. A nil *Options runs only the checks that need
// no payloads (garbage, random input, outbound of odd envelopes).
type Options struct {
	// Valid are real payloads of the outside system. Each must pass
	// Inbound; each is the start of the truncation and mutation checks and,
	// unless NoRoundTrip, of the round trip.
	Valid []Case
	// Invalid are payloads Inbound must refuse.
	Invalid []Case
	// NoRoundTrip skips the round-trip checks, for inbound-only adapters.
	NoRoundTrip bool
	// RoundTrip compares a valid input with Outbound of its first inbound
	// message, returning what differs. Nil: JSONEqual with the given
	// EqualOptions (the two must hold the same JSON value).
	RoundTrip func(in, out []byte) error
	// Equal configures the default RoundTrip comparison.
	Equal EqualOptions
	// FixpointIgnore lists JSON pointers into the encoded envelope that the
	// fixpoint check ignores (see CheckFixpoint), such as "/meta/coercions"
	// for repairs only the first translation made.
	FixpointIgnore []string
	// MaxCuts bounds the truncations of one valid payload: every prefix
	// when the payload is at most MaxCuts bytes long, else MaxCuts evenly
	// spaced ones. 0 means 2048.
	MaxCuts int
	// Random is the number of random inputs; 0 means 300.
	Random int
	// Seed seeds the random inputs and the sampled mutations.
	Seed uint64
}

func (o *Options) defaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.MaxCuts <= 0 {
		c.MaxCuts = 2048
	}
	if c.Random <= 0 {
		c.Random = 300
	}
	if c.RoundTrip == nil {
		eq := c.Equal
		c.RoundTrip = func(in, out []byte) error { return JSONEqual(in, out, &eq) }
	}
	return c
}

// Run checks an adapter against the contract of package adapters:
//
//   - valid: each valid payload passes Inbound, giving at least one
//     message, each passing protocol.Message.Validate (and, for tool
//     events, protocol.CheckToolCallID) and surviving protocol.Encode and
//     protocol.Decode;
//   - invalid: each invalid payload is refused with an *adapters.Error of
//     a known code (the one given, when given);
//   - roundtrip: CanHandle accepts the first inbound message, Outbound of
//     it gives bytes that RoundTrip finds equal to the input, and Inbound
//     of those bytes gives the same envelope again (CheckFixpoint);
//   - truncated, mutated, wrongtypes, garbage, random: cut, byte-flipped,
//     re-typed, duplicated-key, invalid-UTF-8 and random inputs never
//     panic, and each is either refused with a typed error (CheckInbound)
//     or translated into valid messages;
//   - concurrent: Inbound of every valid payload from several goroutines at
//     once (run with -race);
//   - outbound: Outbound of envelopes of every docs/protocol.md §2 type with odd
//     payloads never panics and fails only with typed errors.
//
// Each check runs as a subtest; a broken rule is reported with the input
// that broke it.
func Run(t *testing.T, a adapters.Adapter, opts *Options) {
	t.Helper()
	o := opts.defaults()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))

	t.Run("valid", func(t *testing.T) {
		for _, c := range o.Valid {
			msgs, err := CheckInbound(ctx, a, c.Raw)
			if err != nil {
				t.Errorf("%s: %v", c.Name, err)
				continue
			}
			if msgs == nil {
				_, ierr := a.Inbound(ctx, c.Raw)
				t.Errorf("%s: refused: %v", c.Name, ierr)
			}
		}
	})
	t.Run("invalid", func(t *testing.T) {
		for _, c := range o.Invalid {
			msgs, err := CheckInbound(ctx, a, c.Raw)
			if err != nil {
				t.Errorf("%s: %v", c.Name, err)
				continue
			}
			if msgs != nil {
				t.Errorf("%s: accepted, want a refusal", c.Name)
				continue
			}
			if c.Code != "" {
				if _, ierr := a.Inbound(ctx, c.Raw); protocol.CodeOf(ierr) != c.Code {
					t.Errorf("%s: code %s, want %s (%v)", c.Name, protocol.CodeOf(ierr), c.Code, ierr)
				}
			}
		}
	})
	if !o.NoRoundTrip {
		t.Run("roundtrip", func(t *testing.T) {
			for _, c := range o.Valid {
				msgs, err := a.Inbound(ctx, c.Raw)
				if err != nil || len(msgs) == 0 {
					continue // reported by "valid"
				}
				m := msgs[0]
				if !a.CanHandle(m) {
					t.Errorf("%s: CanHandle refuses the adapter's own inbound message (type %s)", c.Name, m.Type)
					continue
				}
				out, err := CheckOutbound(ctx, a, m)
				if err != nil {
					t.Errorf("%s: %v", c.Name, err)
					continue
				}
				if out == nil {
					_, oerr := a.Outbound(ctx, m)
					t.Errorf("%s: Outbound of the inbound message failed: %v", c.Name, oerr)
					continue
				}
				if err := o.RoundTrip(c.Raw, out); err != nil {
					t.Errorf("%s: round trip: %v\n in: %s\nout: %s", c.Name, err, c.Raw, out)
				}
				if err := CheckFixpoint(ctx, a, m, o.FixpointIgnore...); err != nil {
					t.Errorf("%s: %v", c.Name, err)
				}
			}
		})
	}
	check := func(t *testing.T, label string, raw []byte) {
		t.Helper()
		if _, err := CheckInbound(ctx, a, raw); err != nil {
			t.Errorf("%s: %v\ninput: %s", label, err, quote(raw))
		}
	}
	t.Run("truncated", func(t *testing.T) {
		for _, c := range o.Valid {
			for _, i := range cuts(len(c.Raw), o.MaxCuts) {
				check(t, c.Name+" cut at "+strconv.Itoa(i), c.Raw[:i])
			}
		}
	})
	t.Run("mutated", func(t *testing.T) {
		for _, c := range o.Valid {
			for _, i := range cuts(len(c.Raw), 24) {
				for _, b := range []byte{0, '"', '{', '}', ',', ':', '\\', 0xff, 'x', '9'} {
					raw := bytes.Clone(c.Raw)
					raw[i] = b
					check(t, fmt.Sprintf("%s byte %d = %q", c.Name, i, b), raw)
				}
			}
			check(t, c.Name+" duplicate key", duplicateKey(c.Raw))
			check(t, c.Name+" invalid UTF-8", invalidUTF8(c.Raw))
			check(t, c.Name+" lone surrogate", loneSurrogate(c.Raw))
			check(t, c.Name+" wrapped in an array", append(append([]byte("["), c.Raw...), ']'))
			check(t, c.Name+" trailing data", append(bytes.Clone(c.Raw), " {}"...))
		}
	})
	t.Run("wrongtypes", func(t *testing.T) {
		for _, c := range o.Valid {
			for label, raw := range Mutations(c.Raw) {
				check(t, c.Name+" "+label, raw)
			}
		}
	})
	t.Run("garbage", func(t *testing.T) {
		for _, s := range garbage {
			check(t, "garbage", []byte(s))
		}
		check(t, "nil", nil)
		check(t, "deep array", []byte(strings.Repeat("[", 10000)+strings.Repeat("]", 10000)))
		check(t, "deep object", []byte(strings.Repeat(`{"a":`, 10000)+"1"+strings.Repeat("}", 10000)))
		check(t, "large", append(append([]byte(`{"x":"`), bytes.Repeat([]byte("a"), 2<<20)...), `"}`...))
	})
	t.Run("random", func(t *testing.T) {
		const alphabet = `{}[]":,0123456789-.eE truefalsnl\u"abc`
		for i := range o.Random {
			n := rng.IntN(96)
			raw := make([]byte, n)
			for j := range raw {
				if i%2 == 0 {
					raw[j] = byte(rng.UintN(256))
				} else {
					raw[j] = alphabet[rng.IntN(len(alphabet))]
				}
			}
			check(t, "random", raw)
		}
	})
	t.Run("concurrent", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make(chan error, 4*len(o.Valid))
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for _, c := range o.Valid {
					if _, err := CheckInbound(ctx, a, c.Raw); err != nil {
						errs <- fmt.Errorf("%s: %w", c.Name, err)
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
	t.Run("outbound", func(t *testing.T) {
		for _, m := range oddEnvelopes() {
			if _, err := CheckOutbound(ctx, a, m); err != nil {
				t.Errorf("%s payload %s: %v", m.Type, m.Payload, err)
			}
			m.Meta = map[string]any{adapters.MetaSource: "x"}
			_ = a.CanHandle(m)
		}
		if _, err := CheckOutbound(ctx, a, nil); err != nil {
			t.Errorf("nil message: %v", err)
		}
	})
}

// CheckInbound runs a.Inbound on raw and checks the contract of
// adapters.Adapter. It returns the messages (nil when the adapter refused
// raw) and an error describing how the contract was broken, if it was:
// Inbound panicked; its error is not an *adapters.Error of this adapter,
// with a known protocol.Code, matching adapters.ErrInbound; or a message is
// nil, fails protocol.Message.Validate, is a tool event that does not
// state its call id as docs/protocol.md §2.3.1 asks
// (protocol.CheckToolCallID), or cannot be encoded and decoded again as
// the store would. Fuzz targets call it on every input.
func CheckInbound(ctx context.Context, a adapters.Adapter, raw []byte) (msgs []*protocol.Message, problem error) {
	defer func() {
		if p := recover(); p != nil {
			msgs, problem = nil, fmt.Errorf("Inbound panicked: %v\n%s", p, debug.Stack())
		}
	}()
	msgs, err := a.Inbound(ctx, raw)
	if err != nil {
		if len(msgs) != 0 {
			return nil, fmt.Errorf("Inbound returned %d messages and an error: %v", len(msgs), err)
		}
		return nil, checkError(a, err, adapters.ErrInbound)
	}
	if len(msgs) == 0 {
		return nil, errors.New("Inbound returned no message and no error")
	}
	for i, m := range msgs {
		if m == nil {
			return nil, fmt.Errorf("message %d is nil", i)
		}
		if err := m.Validate(); err != nil {
			return nil, fmt.Errorf("message %d fails Validate: %v", i, err)
		}
		if err := protocol.CheckToolCallID(m); err != nil {
			return nil, fmt.Errorf("message %d, a %s, breaks the call id rule: %v", i, m.Type, err)
		}
		b, err := protocol.Encode(clone(m))
		if err != nil {
			return nil, fmt.Errorf("message %d cannot be encoded: %v", i, err)
		}
		if _, err := protocol.Decode(b); err != nil {
			return nil, fmt.Errorf("message %d does not decode after encoding: %v\n%s", i, err, quote(b))
		}
	}
	return msgs, nil
}

// CheckOutbound runs a.Outbound on m and checks the contract: no panic,
// and a failure is an *adapters.Error of this adapter with a known code,
// matching adapters.ErrOutbound. It returns the bytes (nil when Outbound
// failed) and what broke the contract, if anything. m is not modified.
func CheckOutbound(ctx context.Context, a adapters.Adapter, m *protocol.Message) (out []byte, problem error) {
	defer func() {
		if p := recover(); p != nil {
			out, problem = nil, fmt.Errorf("Outbound panicked: %v\n%s", p, debug.Stack())
		}
	}()
	var in *protocol.Message
	if m != nil {
		in = clone(m)
	}
	out, err := a.Outbound(ctx, in)
	if err != nil {
		return nil, checkError(a, err, adapters.ErrOutbound)
	}
	if len(out) == 0 {
		return nil, errors.New("Outbound returned no bytes and no error")
	}
	return out, nil
}

// CheckFixpoint checks that a translation is stable: Outbound of m, an
// inbound message of a, translated back by Inbound, gives m again (the
// encoded envelopes are the same JSON value, except at the ignored JSON
// pointers). It returns nil when Outbound refuses m.
func CheckFixpoint(ctx context.Context, a adapters.Adapter, m *protocol.Message, ignore ...string) error {
	out, err := CheckOutbound(ctx, a, m)
	if err != nil || out == nil {
		return err
	}
	again, err := CheckInbound(ctx, a, out)
	if err != nil {
		return fmt.Errorf("fixpoint: %w", err)
	}
	if again == nil {
		_, ierr := a.Inbound(ctx, out)
		return fmt.Errorf("fixpoint: Inbound refuses what Outbound wrote: %v\n%s", ierr, out)
	}
	want, err := protocol.Encode(clone(m))
	if err != nil {
		return err
	}
	got, err := protocol.Encode(clone(again[0]))
	if err != nil {
		return err
	}
	if err := JSONEqual(want, got, &EqualOptions{Ignore: ignore}); err != nil {
		return fmt.Errorf("fixpoint: Inbound(Outbound(m)) differs from m: %v\n   m: %s\nback: %s\n via: %s", err, want, got, out)
	}
	return nil
}

func checkError(a adapters.Adapter, err error, sentinel error) error {
	var ae *adapters.Error
	if !errors.As(err, &ae) {
		return fmt.Errorf("error %T is not an *adapters.Error: %v", err, err)
	}
	if ae.Adapter != a.Name() {
		return fmt.Errorf("error names adapter %q, want %q: %v", ae.Adapter, a.Name(), err)
	}
	if !ae.Code.Known() {
		return fmt.Errorf("error code %q is not in the protocol error table: %v", ae.Code, err)
	}
	if !errors.Is(err, sentinel) {
		return fmt.Errorf("error does not match %v: %v", sentinel, err)
	}
	if protocol.CodeOf(err) != ae.Code {
		return fmt.Errorf("the error says %s, but protocol.CodeOf reads %s from the protocol error it wraps; an adapters.Error carries the code of the protocol error it wraps (adapters.InboundError does it): %v", ae.Code, protocol.CodeOf(err), err)
	}
	return nil
}

// cuts returns the truncation points of a payload of n bytes.
func cuts(n, max int) []int {
	if n <= max {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	out := make([]int, 0, max)
	for i := range max {
		out = append(out, i*n/max)
	}
	return out
}

func quote(b []byte) string {
	if len(b) > 300 {
		return strconv.Quote(string(b[:300])) + fmt.Sprintf("… (%d bytes)", len(b))
	}
	return strconv.Quote(string(b))
}

// oddEnvelopes returns valid envelopes of every docs/protocol.md §2 type and an
// extension type, with payloads of every JSON kind.
func oddEnvelopes() []*protocol.Message {
	ids := protocol.NewIDs(nil)
	payloads := []string{`null`, `{}`, `[]`, `"text"`, `0`, `{"code":"TIMEOUT","message":"m","retryable":true}`,
		`{"a":{"b":[1,2,{"c":null}]}}`, `{"v":"clutch/0.1","agent_id":"agent:x","capabilities":[]}`}
	var out []*protocol.Message
	for _, t := range append(protocol.Types(), "x.test.kind") {
		for _, p := range payloads {
			m := ids.NewMessage(t, "agent:a")
			m.To = []protocol.Participant{{AgentID: "agent:b"}}
			m.Payload = json.RawMessage(p)
			m.ParentTaskID = map[bool]string{true: "task_parent"}[len(p)%2 == 0]
			out = append(out, m)
		}
	}
	m := ids.NewMessage(protocol.TypeTaskRequest, "agent:a")
	m.To = []protocol.Participant{{AgentID: "group:*"}, {AgentID: "agent:b"}}
	m.Attachments = []protocol.Attachment{{Kind: "url", Ref: "https://x", SHA256: "ABC"}}
	m.Security = &protocol.Security{Auth: &protocol.Auth{Scheme: "bearer", Sig: "tok"}}
	m.Meta = map[string]any{"performative": "CAPS", "intent": 7, "det": "x", "in_reply_to": []any{}}
	m.Payload = json.RawMessage(`{}`)
	return append(out, m)
}

// clone copies m so that checks never change the adapter's messages.
// Message.Clone turns an empty "to" (the router chooses) into a nil one,
// which no longer encodes; keep it empty.
func clone(m *protocol.Message) *protocol.Message {
	c := m.Clone()
	if m.To != nil && c.To == nil {
		c.To = []protocol.Participant{}
	}
	return c
}
