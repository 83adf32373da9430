package adaptertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// Secret is the credential RunRules plants in inputs: no message an
// adapter returns may contain it, in any field.
const Secret = "sk-adaptertest-0123456789abcdef"

// CredentialKeys are the member names RunRules plants Secret under, in
// every object of a valid input: request headers and fields that carry
// credentials in the systems Clutch adapts.
var CredentialKeys = []string{"authorization", "Authorization", "x-api-key", "cookie", "api_key", "token", "password", "proxy-authorization"}

// RulesOptions configures RunRules.
type RulesOptions struct {
	// Valid are real payloads of the outside system: the start of every
	// mutation.
	Valid []Case
	// Streams are whole streams of the outside system (a trace, a JSONL
	// recording, the frames of one run), each translated in order by one
	// adapter (New, else the adapter given to RunRules); the messages of
	// a stream must pass CheckTerminal.
	Streams []Stream
	// New returns a fresh adapter for each stream; nil uses the adapter
	// given to RunRules for every stream.
	New func() adapters.Adapter
	// MaxBytes is the adapter's input limit: the huge-string mutations
	// grow an input to just under it. 0 means protocol.DefaultMaxBytes.
	MaxBytes int
	// MaxStrings bounds how many string values of one valid payload are
	// grown (evenly sampled); 0 means 8. In a build with the race
	// detector the huge case grows 2 strings of the first 4 valid
	// payloads only: RunRules checks an adapter from one goroutine, so
	// -race finds nothing more there and would only multiply the time of
	// megabyte strings about tenfold; the tests without -race run it whole.
	MaxStrings int
	// Credentials are inputs that carry Secret where the outside system
	// puts credentials (a bearer token, a header); each must be refused
	// or translated into messages that do not contain it.
	Credentials []Case
}

// maxRaceHuge is how many valid payloads the huge case grows under the
// race detector (see RulesOptions.MaxStrings).
const maxRaceHuge = 4

// Stream is a named sequence of inputs of one outside run.
type Stream struct {
	Name   string
	Inputs [][]byte
}

// RunRules checks the rules every adapter holds beyond the shape of its
// input (docs/protocol.md §7.2):
//
//   - huge: a string of a valid payload grown so that the input is just
//     under MaxBytes is refused with a typed error or translated into
//     messages the event store can hold (at most
//     store.DefaultMaxEventSize encoded), each holding the text at most
//     once: big text goes to one place, bounded;
//   - longids: an id-like member (a name ending in "id") of 300 and 5000
//     bytes is refused with INVALID_FIELD, or translated into valid
//     messages;
//   - pretty: a valid payload indented, and its duplicate-key variants
//     (at the top level and in nested objects) compact and indented, get
//     the same answer (accepted, or refused with the same code);
//   - credentials: Secret planted under CredentialKeys in each object of
//     a valid payload, and each Credentials input, never appears in a
//     message;
//   - detect: an adapters.Detector recognises every valid payload (and
//     stream input, and each indented) that Inbound accepts;
//   - terminal: each valid payload, and each stream as a whole, gives at
//     most one terminal event per task (CheckTerminal);
//   - toolcalls: in each valid payload and each stream as a whole, a tool
//     outcome answers a call of its own task, and a call has at most one
//     outcome (CheckToolCalls).
func RunRules(t *testing.T, a adapters.Adapter, opts *RulesOptions) {
	t.Helper()
	var o RulesOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = protocol.DefaultMaxBytes
	}
	if o.MaxStrings <= 0 {
		o.MaxStrings = 8
		if raceDetector {
			o.MaxStrings = 2
		}
	}
	ctx := context.Background()
	check := func(t *testing.T, label string, raw []byte) []*protocol.Message {
		t.Helper()
		msgs, err := CheckInbound(ctx, a, raw)
		if err != nil {
			t.Errorf("%s: %v\ninput: %s", label, err, quote(raw))
			return nil
		}
		if err := CheckStorable(msgs); err != nil {
			t.Errorf("%s: %v", label, err)
		}
		return msgs
	}
	t.Run("huge", func(t *testing.T) {
		valid := o.Valid
		if raceDetector && len(valid) > maxRaceHuge {
			valid = valid[:maxRaceHuge] // see RulesOptions.MaxStrings
		}
		for _, c := range valid {
			vs := HugeStrings(c.Raw, o.MaxBytes-64, o.MaxStrings)
			for _, label := range sortedKeys(vs) {
				raw := vs[label]
				for i, m := range check(t, c.Name+" "+label, raw) {
					b, _ := protocol.Encode(clone(m))
					if n := bytes.Count(b, []byte(hugeStart)); n > 1 {
						t.Errorf("%s %s: message %d (%s) holds the huge text %d times", c.Name, label, i, m.Type, n)
					}
				}
			}
		}
	})
	t.Run("longids", func(t *testing.T) {
		for _, c := range o.Valid {
			vs := LongIDs(c.Raw, 300, 5000)
			for _, label := range sortedKeys(vs) {
				raw := vs[label]
				if msgs := check(t, c.Name+" "+label, raw); msgs == nil {
					_, err := a.Inbound(ctx, raw)
					if code := protocol.CodeOf(err); code != protocol.CodeInvalidField && code != protocol.CodeTooLarge {
						t.Errorf("%s %s: refused with %s, want INVALID_FIELD: %v", c.Name, label, code, err)
					}
				}
			}
		}
	})
	t.Run("pretty", func(t *testing.T) {
		answer := func(raw []byte) string {
			msgs, err := a.Inbound(ctx, raw)
			if err != nil {
				return "refused " + string(protocol.CodeOf(err))
			}
			return "accepted " + strconv.Itoa(len(msgs))
		}
		for _, c := range o.Valid {
			variants := map[string][]byte{"": c.Raw}
			for label, raw := range DuplicateKeys(c.Raw) {
				variants[" "+label] = raw
			}
			for _, label := range sortedKeys(variants) {
				raw := variants[label]
				var pretty bytes.Buffer
				if json.Indent(&pretty, raw, "", "  ") != nil {
					continue
				}
				check(t, c.Name+label+" indented", pretty.Bytes())
				if want, got := answer(raw), answer(pretty.Bytes()); want != got {
					t.Errorf("%s%s: compact %s, indented %s", c.Name, label, want, got)
				}
			}
		}
	})
	t.Run("credentials", func(t *testing.T) {
		leaks := func(label string, raw []byte) {
			for i, m := range check(t, label, raw) {
				b, err := protocol.Encode(clone(m))
				if err == nil && bytes.Contains(b, []byte(Secret)) {
					t.Errorf("%s: message %d stores the credential: %s", label, i, quote(b))
				}
			}
		}
		for _, c := range o.Valid {
			vs := PlantCredentials(c.Raw)
			for _, label := range sortedKeys(vs) {
				raw := vs[label]
				leaks(c.Name+" "+label, raw)
			}
		}
		for _, c := range o.Credentials {
			if !bytes.Contains(c.Raw, []byte(Secret)) {
				t.Errorf("%s: the input does not hold adaptertest.Secret", c.Name)
			}
			leaks(c.Name, c.Raw)
		}
	})
	t.Run("detect", func(t *testing.T) {
		d, ok := a.(adapters.Detector)
		if !ok {
			t.Skip("the adapter is not an adapters.Detector")
		}
		var inputs []Case
		for _, c := range o.Valid {
			inputs = append(inputs, c)
			var pretty bytes.Buffer
			if json.Indent(&pretty, c.Raw, "", "  ") == nil {
				inputs = append(inputs, Case{Name: c.Name + " indented", Raw: pretty.Bytes()})
			}
		}
		for _, s := range o.Streams {
			for i, raw := range s.Inputs {
				inputs = append(inputs, Case{Name: s.Name + " input " + strconv.Itoa(i), Raw: raw})
			}
		}
		for _, c := range inputs {
			if _, err := a.Inbound(ctx, c.Raw); err == nil && !d.Detect(c.Raw) {
				t.Errorf("%s: Inbound accepts it, Detect does not recognise it", c.Name)
			}
		}
	})
	// stream is the messages of s's inputs, in order, through a fresh
	// adapter when o.New makes one; report says a refused input.
	stream := func(t *testing.T, s Stream, report bool) []*protocol.Message {
		sa := a
		if o.New != nil {
			sa = o.New()
		}
		var all []*protocol.Message
		for i, raw := range s.Inputs {
			msgs, err := CheckInbound(ctx, sa, raw)
			if err != nil && report {
				t.Errorf("%s input %d: %v", s.Name, i, err)
			}
			all = append(all, msgs...)
		}
		return all
	}
	t.Run("terminal", func(t *testing.T) {
		for _, c := range o.Valid {
			if err := CheckTerminal(check(t, c.Name, c.Raw)); err != nil {
				t.Errorf("%s: %v", c.Name, err)
			}
		}
		for _, s := range o.Streams {
			if err := CheckTerminal(stream(t, s, true)); err != nil {
				t.Errorf("%s: %v", s.Name, err)
			}
		}
	})
	t.Run("toolcalls", func(t *testing.T) {
		for _, c := range o.Valid {
			if _, err := CheckToolCalls(check(t, c.Name, c.Raw)); err != nil {
				t.Errorf("%s: %v", c.Name, err)
			}
		}
		for _, s := range o.Streams {
			if _, err := CheckToolCalls(stream(t, s, false)); err != nil { // a refused input is reported by terminal
				t.Errorf("%s: %v", s.Name, err)
			}
		}
	})
}

// CheckToolCalls checks the tool events among msgs, the messages of one
// outside run in order, against docs/protocol.md §2.3.1: each states its
// call id (protocol.CheckToolCallID); an outcome whose call id names a
// tool.call of msgs names one of its own task; a call has at most one
// outcome. It returns the outcomes whose call id names no tool.call of
// msgs — a call made before the stream began, or refused before it was
// made — for a test of a whole run to assert there are none.
func CheckToolCalls(msgs []*protocol.Message) (unpaired []*protocol.Message, err error) {
	type call struct {
		task     string
		answered string // the id of its outcome
	}
	calls := map[string]*call{}
	seen := map[string]bool{}
	var problems []string
	for _, m := range msgs {
		if m == nil || seen[m.ID] {
			continue
		}
		switch m.Type {
		case protocol.TypeToolCall, protocol.TypeToolResult, protocol.TypeToolError:
		default:
			continue
		}
		seen[m.ID] = true
		if err := protocol.CheckToolCallID(m); err != nil {
			problems = append(problems, fmt.Sprintf("%s %s: %v", m.Type, m.ID, err))
			continue
		}
		id, _ := protocol.ToolCallID(m)
		c := calls[id]
		if m.Type == protocol.TypeToolCall {
			if c == nil {
				calls[id] = &call{task: m.TaskID}
			} else if c.task != m.TaskID {
				problems = append(problems, fmt.Sprintf("call id %q names calls of tasks %s and %s", id, c.task, m.TaskID))
			}
			continue
		}
		switch {
		case c == nil:
			unpaired = append(unpaired, m)
		case c.task != m.TaskID:
			problems = append(problems, fmt.Sprintf("%s %s of call %q is in task %s, its call in %s", m.Type, m.ID, id, m.TaskID, c.task))
		case c.answered != "":
			problems = append(problems, fmt.Sprintf("call %q has two outcomes: %s and %s %s", id, c.answered, m.Type, m.ID))
		default:
			c.answered = m.ID
		}
	}
	if len(problems) > 0 {
		return unpaired, fmt.Errorf("tool events break docs/protocol.md §2.3.1:\n  %s", strings.Join(problems, "\n  "))
	}
	return unpaired, nil
}

// sortedKeys returns the labels of variants in order, so that a run is
// the same every time (adapters keep state between inputs).
func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// CheckTerminal checks that msgs, the messages of one outside run in
// order, end each task at most once: at most one message per task id for
// which protocol.EndsTask holds (a task.error announcing a retry does not
// end its task; a message repeated under the same id counts once, as the
// event store keeps it once).
func CheckTerminal(msgs []*protocol.Message) error {
	ends := map[string][]string{}
	seen := map[string]bool{}
	var problems []string
	for _, m := range msgs {
		if m == nil || m.TaskID == "" || seen[m.ID] || !protocol.EndsTask(m) {
			continue
		}
		seen[m.ID] = true
		ends[m.TaskID] = append(ends[m.TaskID], string(m.Type)+" "+m.ID)
		if len(ends[m.TaskID]) == 2 {
			problems = append(problems, m.TaskID)
		}
	}
	if len(problems) == 0 {
		return nil
	}
	var b strings.Builder
	for _, task := range problems {
		fmt.Fprintf(&b, "\n  task %s ends %d times: %s", task, len(ends[task]), strings.Join(ends[task], ", "))
	}
	return fmt.Errorf("more than one terminal event for a task:%s", b.String())
}

// CheckStorable checks that the event store can hold each message: its
// encoding is at most store.DefaultMaxEventSize bytes.
func CheckStorable(msgs []*protocol.Message) error {
	for i, m := range msgs {
		b, err := protocol.Encode(clone(m))
		if err != nil {
			return fmt.Errorf("message %d cannot be encoded: %v", i, err)
		}
		if len(b) > store.DefaultMaxEventSize {
			return fmt.Errorf("message %d (%s) is %d bytes encoded, over the store's limit of %d", i, m.Type, len(b), store.DefaultMaxEventSize)
		}
	}
	return nil
}

// strPaths returns the paths of the string values of a JSON document in
// a stable order, with the document decoded.
func strPaths(raw []byte) (any, [][]any) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var root any
	if d.Decode(&root) != nil {
		return nil, nil
	}
	var out [][]any
	var walk func(v any, path []any)
	walk = func(v any, path []any) {
		switch x := v.(type) {
		case string:
			out = append(out, slices.Clone(path))
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(x[k], append(path, k))
			}
		case []any:
			for i, e := range x {
				walk(e, append(path, i))
			}
		}
	}
	walk(root, nil)
	return root, out
}

// HugeStrings returns variants of a JSON document, by label, in which one
// string value (of at most max sampled ones, evenly spread, besides every
// string inside a string that holds JSON) is grown so that the document is
// about size bytes. The text is ASCII words with a few escapes, so that
// an adapter that bounds text must cut at a character boundary.
func HugeStrings(raw []byte, size, max int) map[string][]byte {
	root, paths := strPaths(raw)
	out := map[string][]byte{}
	if len(paths) == 0 || size <= len(raw) {
		return out
	}
	step := 1
	if len(paths) > max {
		step = (len(paths) + max - 1) / max
	}
	for i := 0; i < len(paths); i += step {
		p := paths[i]
		b, err := json.Marshal(set(root, p, ""))
		if err != nil {
			continue
		}
		n := size - len(b)
		if n <= 0 {
			continue
		}
		if b, err = json.Marshal(set(root, p, bigText(n))); err == nil {
			out[pointer(p)+" huge"] = b
		}
	}
	return out
}

// hugeStart begins every huge text, so that a copy of it can be counted.
const hugeStart = "HUGE-TEXT-7f3a "

// bigText returns about n bytes of text as JSON encodes it (quotes and
// newlines escape to two bytes).
func bigText(n int) string {
	const unit = "lorem ipsum \"dolor\" sit amet é\n" // 32 bytes, 35 encoded
	var b strings.Builder
	b.Grow(n)
	b.WriteString(hugeStart)
	for range (n - len(hugeStart)) / 35 {
		b.WriteString(unit)
	}
	return b.String()
}

// LongIDs returns variants of a JSON document, by label, in which each
// string member whose name ends in "id" (any case) is replaced by an id
// of each given length.
func LongIDs(raw []byte, lengths ...int) map[string][]byte {
	root, paths := strPaths(raw)
	out := map[string][]byte{}
	for _, p := range paths {
		k, ok := p[len(p)-1].(string)
		if !ok || !strings.HasSuffix(strings.ToLower(k), "id") {
			continue
		}
		for _, n := range lengths {
			if b, err := json.Marshal(set(root, p, strings.Repeat("i", n))); err == nil {
				out[pointer(p)+" "+strconv.Itoa(n)+" bytes"] = b
			}
		}
	}
	return out
}

// DuplicateKeys returns variants of a JSON document, by label, in which
// one object (the top level and up to 8 nested ones) repeats its first
// member. The variants are compact; RunRules also indents them.
func DuplicateKeys(raw []byte) map[string][]byte {
	var compact bytes.Buffer
	if json.Compact(&compact, raw) != nil {
		return nil
	}
	src := compact.Bytes()
	out := map[string][]byte{}
	// Find each '{' outside strings whose object has a first member.
	inStr, esc, n := false, false, 0
	for i := 0; i < len(src) && n < 9; i++ {
		c := src[i]
		switch {
		case inStr:
			if esc {
				esc = false
			} else if c == '\\' {
				esc = true
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '{':
			end := memberEnd(src, i+1)
			if end < 0 {
				continue
			}
			member := src[i+1 : end]
			v := bytes.Clone(src[:i+1])
			v = append(v, member...)
			v = append(v, ',')
			v = append(v, src[i+1:]...)
			out["duplicate key at byte "+strconv.Itoa(i)] = v
			n++
		}
	}
	return out
}

// memberEnd returns the end of the object member starting at i in compact
// JSON (the index of the ',' or '}' after it), or -1 for an empty object.
func memberEnd(src []byte, i int) int {
	if i >= len(src) || src[i] != '"' {
		return -1
	}
	depth, inStr, esc := 0, false, false
	for j := i; j < len(src); j++ {
		c := src[j]
		switch {
		case inStr:
			if esc {
				esc = false
			} else if c == '\\' {
				esc = true
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth == 0 {
				return j
			}
			depth--
		case c == ',' && depth == 0:
			return j
		}
	}
	return -1
}

// PlantCredentials returns variants of a JSON document, by label, in
// which one object (the top level and up to 15 nested ones) gains a
// member of each of CredentialKeys holding Secret (as a bearer token where
// the key names a header) and a "headers" object holding the same.
func PlantCredentials(raw []byte) map[string][]byte {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var root any
	if d.Decode(&root) != nil {
		return nil
	}
	out := map[string][]byte{}
	var walk func(v any, path []any)
	walk = func(v any, path []any) {
		if len(out) >= 16 {
			return
		}
		switch x := v.(type) {
		case map[string]any:
			r := root
			for _, k := range CredentialKeys {
				val := Secret
				if strings.Contains(strings.ToLower(k), "authorization") {
					val = "Bearer " + Secret
				}
				r = set(r, append(slices.Clone(path), k), val)
			}
			r = set(r, append(slices.Clone(path), "headers"), map[string]any{"Authorization": "Bearer " + Secret, "X-Api-Key": Secret})
			if b, err := json.Marshal(r); err == nil {
				out[pointer(path)+" + credentials"] = b
			}
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(x[k], append(slices.Clone(path), k))
			}
		case []any:
			for i, e := range x {
				if i >= 4 {
					break
				}
				walk(e, append(slices.Clone(path), i))
			}
		}
	}
	walk(root, nil)
	return out
}
