package protocol

import (
	"math"
	"strconv"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/google/go-cmp/cmp"
)

// checkDecision asserts that SetPayload writes d exactly as JSON v2 does,
// or fails where JSON v2 fails, and that the payload decodes back to d.
func checkDecision(t *testing.T, d *RoutingDecision) {
	t.Helper()
	want, werr := jsonv2.Marshal(d, jsonv2.Deterministic(true)) // the bytes a decision had before it got its own writer
	m := NewMessage(TypeRoutingDecision, "agent:router")
	err := m.SetPayload(d)
	if (err != nil) != (werr != nil) {
		t.Fatalf("SetPayload(%#v): error %v, JSON v2: error %v", d, err, werr)
	}
	if err != nil {
		return
	}
	if string(m.Payload) != string(want) {
		t.Fatalf("SetPayload(%#v):\n got %s\nwant %s (JSON v2)", d, m.Payload, want)
	}
	if d == nil {
		return
	}
	back, err := DecodePayload[RoutingDecision](m)
	if err != nil {
		t.Fatalf("decoding %s: %v", m.Payload, err)
	}
	norm := *d
	if norm.Candidates == nil {
		norm.Candidates = []string{} // written as []
	}
	if len(norm.Scores) == 0 {
		norm.Scores = nil // omitempty
	}
	if len(norm.Rejected) == 0 {
		norm.Rejected = nil
	}
	if diff := cmp.Diff(norm, back); diff != "" {
		t.Errorf("round trip of %s (-want +got):\n%s", m.Payload, diff)
	}
}

func TestRoutingDecisionPayloadIsJSONv2s(t *testing.T) {
	for _, d := range []*RoutingDecision{
		nil,
		{},
		{Selected: "agent:a", Candidates: []string{}, Reason: "", Scores: map[string]float64{}, Rejected: map[string]string{}},
		{Selected: "agent:research-1", Candidates: []string{"agent:research-1", "agent:research-0"},
			Reason: "matched requires[skill:research], lowest load (0 in flight)",
			Scores: map[string]float64{"agent:research-1": 1, "agent:research-0": 0.333}, Eligible: 2, Considered: 3,
			Rejected:    map[string]string{"agent:z": "offline", "agent:b": "at max_concurrency"},
			Explanation: "Research 1 chosen over Research 0: both have skill:research; equal preference score (1); Research 1 has fewer tasks in flight (0 vs 1)."},
		{Selected: "agent:\"q\"\\\n\t\r\b\f\x00\x1f\x7f<>&\u2028\u2029é😀", Reason: "ctl \x01 and \u00ff",
			Scores: map[string]float64{"agent:é": -0.5, "agent:e": 1e-7, "agent:big": 1e21, "agent:sm": 123456789.125, "agent:neg0": math.Copysign(0, -1)}},
		{Selected: "agent:x", Scores: map[string]float64{"agent:x": math.NaN()}},    // both refuse
		{Selected: "agent:x", Scores: map[string]float64{"agent:x": math.Inf(1)}},   // both refuse
		{Selected: "agent:\xff", Candidates: []string{"agent:x"}},                   // invalid UTF-8: both refuse
		{Selected: "agent:x", Rejected: map[string]string{"agent:\xfe": "offline"}}, // in a name too
		{Selected: "agent:x", Eligible: -1, Considered: math.MaxInt},
		{Selected: "agent:x", Explanation: "Sent to \"X\" <é>\u2028, the named recipient.\n\x01"},
		{Selected: "agent:x", Explanation: "invalid \xff UTF-8"}, // both refuse
	} {
		checkDecision(t, d)
	}
}

// TestRoutingDecisionPayloadRandom compares with JSON v2 on random
// decisions, many map members included (their order is the point).
func TestRoutingDecisionPayloadRandom(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := seededRand(t, seed, seed)
	alphabet := []rune{'a', 'b', 'Z', '0', ':', '-', '"', '\\', '\n', '\x01', 'é', '€', '😀', '\u2028'}
	str := func() string {
		r := make([]rune, rng.IntN(12))
		for i := range r {
			r[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(r)
	}
	for range 2000 {
		d := &RoutingDecision{Selected: str(), Reason: str(), Eligible: rng.IntN(3), Considered: rng.IntN(3), Explanation: str()}
		if rng.IntN(4) > 0 {
			d.Candidates = make([]string, rng.IntN(5))
			for i := range d.Candidates {
				d.Candidates[i] = str()
			}
		}
		if n := rng.IntN(20); n > 0 {
			d.Scores = map[string]float64{}
			for range n {
				d.Scores[str()] = math.Round(rng.NormFloat64()*1e6) / math.Pow(10, float64(rng.IntN(12)))
			}
		}
		if n := rng.IntN(12); n > 0 {
			d.Rejected = map[string]string{}
			for range n {
				d.Rejected[str()] = str()
			}
		}
		checkDecision(t, d)
	}
}

// FuzzRoutingDecisionPayload compares the decision encoder with JSON v2.
func FuzzRoutingDecisionPayload(f *testing.F) {
	f.Add("agent:research-1", "matched requires[skill:research]", "agent:research-0", 0.333, "offline", 2)
	f.Add("", "", "", 0.0, "", 0)
	f.Add("agent:\xff", "\u2028", "\"\\", 1e-7, "\x00", -1)
	f.Add("é", "😀", "agent:z", 1e21, "at max_concurrency", 1<<40)
	f.Fuzz(func(t *testing.T, selected, reason, other string, score float64, why string, n int) {
		checkDecision(t, &RoutingDecision{
			Selected: selected, Candidates: []string{selected, other}, Reason: reason,
			Scores:   map[string]float64{selected: score, other: -score, reason: score / 3},
			Rejected: map[string]string{why: reason, other: why},
			Eligible: n, Considered: n / 2,
			Explanation: why + reason,
		})
	})
}

// TestRoutingDecisionSizeHint: the writer's buffer is allocated once, at
// about the size of the decision's JSON, whatever the decision holds (its
// strings need no escaping here; one that does grows the buffer).
func TestRoutingDecisionSizeHint(t *testing.T) {
	full := &RoutingDecision{
		Selected: "agent:research-1", Candidates: []string{}, Scores: map[string]float64{}, Rejected: map[string]string{},
		Reason:      "matched requires[skill:research, skill:writing], best recent success rate 0.97",
		Explanation: "Research 1 chosen over Research 0 and 14 others: all have skill:research and skill:writing; equal preference score (0.667); equal load (12 in flight); Research 1 has the better recent success rate (97% vs 94%).",
		Eligible:    1 << 40, Considered: 1 << 40,
	}
	for i := range 16 {
		id := "agent:research-" + strconv.Itoa(i)
		full.Candidates = append(full.Candidates, id)
		full.Scores[id] = 0.667
		full.Rejected["agent:other-"+strconv.Itoa(i)] = "offline: no heartbeat within 30s"
	}
	for _, d := range []*RoutingDecision{
		{},
		{Selected: "agent:a", Candidates: []string{"agent:a"}, Reason: "explicit recipient, only eligible candidate", Scores: map[string]float64{"agent:a": 1}, Eligible: 1, Considered: 1, Explanation: "Sent to A, the named recipient."},
		full,
	} {
		var out []byte
		allocs := testing.AllocsPerRun(10, func() {
			var err error
			if out, err = marshalPayload(d); err != nil {
				t.Fatal(err)
			}
		})
		if hint := d.sizeHint(); len(out) > hint || hint > len(out)+128 {
			t.Errorf("size hint %d for %d bytes: %s", hint, len(out), out)
		}
		// The buffer, and the sorted names of a map past 8 members.
		want := 1.0
		if len(d.Scores) > 8 {
			want += 2
		}
		if allocs != want {
			t.Errorf("%v allocations for %d bytes, want %v", allocs, len(out), want)
		}
	}
}
