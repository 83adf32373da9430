package langgraph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/adapters/internal/rawjson"
	"github.com/clutchprotocol/clutch/protocol"
)

// Name is the translator's name in an adapters.Registry.
const Name = "langgraph"

// Source is the meta.src (adapters.MetaSource) of inbound messages.
const Source = "langgraph"

// DefaultAgentID is the sender of translated messages when neither
// Options.AgentID nor the Scope names one.
const DefaultAgentID = "agent:langgraph"

// The meta keys the translator sets on inbound messages (see the mapping
// table in the package doc). Every LangGraph id it meets is kept here, so
// that a later event finds its task.
const (
	MetaEvent      = "lg_event"      // the SSE event name as sent ("updates|agent:<task id>")
	MetaMode       = "lg_mode"       // the stream mode / record kind ("updates", "events", "run", ...)
	MetaNamespace  = "lg_ns"         // the subgraph namespace, outermost first
	MetaSeq        = "lg_seq"        // the SSE id: the per-run event sequence
	MetaRunID      = "lg_run_id"     // LangGraph run_id
	MetaThreadID   = "lg_thread_id"  // LangGraph thread_id
	MetaTaskID     = "lg_task_id"    // Pregel task id
	MetaCheckpoint = "lg_checkpoint" // checkpoint_id
	MetaMessageID  = "lg_message_id" // LangChain message id
	MetaToolCallID = "lg_tool_call"  // tool call id (tool_calls[i].id, tool_call_id, astream_events run_id of the tool)
	MetaNode       = "lg_node"       // graph node (langgraph_node, task name)
	MetaInterrupts = "lg_interrupts" // interrupt ids waiting for input
	MetaPartial    = "partial"       // true: a streamed piece of a message, not the whole message
	MetaUnknown    = "lg_unknown"    // true: a kind the translator does not know, kept as x.langgraph.<kind>
	MetaNoRun      = "lg_no_run"     // true: nothing named the run; it landed in the Scope's or the default run
)

// Payload types of the task.progress events (docs/protocol.md §3.2).
const (
	PayloadValues     = "langgraph.values.v1"
	PayloadUpdates    = "langgraph.updates.v1"
	PayloadCheckpoint = "langgraph.checkpoint.v1"
	PayloadCustom     = "langgraph.custom.v1"
	PayloadTask       = "langgraph.task.v1"
	PayloadEvent      = "langgraph.event.v1"
	PayloadMetadata   = "langgraph.metadata.v1"
	PayloadMessage    = "langgraph.message.v1"
	PayloadRun        = "langgraph.run.v1"
)

// Options configures a Translator. The zero value (or nil) is usable.
type Options struct {
	// AgentID is the sender of translated messages ("agent:…");
	// DefaultAgentID when empty.
	AgentID string
	// Now stamps messages whose LangGraph record has no time; time.Now
	// when nil.
	Now func() time.Time
	// MaxBytes bounds one Inbound input; protocol.DefaultMaxBytes when ≤ 0.
	MaxBytes int
}

// Translator translates what a LangGraph Agent Server and LangChain emit
// into Clutch envelopes (see the package doc). It implements
// adapters.Adapter and adapters.Detector and is safe for concurrent use.
type Translator struct {
	opts    Options
	unknown atomic.Int64
	ended   endedSet // tasks given their terminal event by any Stream
	// answered holds the tool calls given their outcome by any Stream
	// (run and call id): one outcome a call (docs/protocol.md §2.3.1)
	// when several stream modes, or frames translated one per call,
	// report the same tool message.
	answered endedSet
}

// maxEnded bounds the task attempts a Translator remembers as ended.
const maxEnded = 8192

// endedSet remembers, across the Translator's calls, the task attempts
// (run, task, attempt) that have had their terminal event, so that a
// stream translated a frame per call still ends each task once. It keeps
// the latest maxEnded, oldest forgotten first.
type endedSet struct {
	mu   sync.Mutex
	set  map[string]struct{}
	ring []string
	next int
}

// end records key and reports whether it had ended before.
func (e *endedSet) end(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.set[key]; ok {
		return true
	}
	if e.set == nil {
		e.set = make(map[string]struct{})
	}
	if len(e.ring) < maxEnded {
		e.ring = append(e.ring, key)
	} else {
		delete(e.set, e.ring[e.next])
		e.ring[e.next] = key
		e.next = (e.next + 1) % maxEnded
	}
	e.set[key] = struct{}{}
	return false
}

// New returns a Translator. It fails when opts.AgentID does not start
// with "agent:".
func New(opts *Options) (*Translator, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.AgentID == "" {
		o.AgentID = DefaultAgentID
	}
	if !strings.HasPrefix(o.AgentID, protocol.PrefixAgent) {
		return nil, optionsError("AgentID " + o.AgentID + " does not start with agent:")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = protocol.DefaultMaxBytes
	}
	return &Translator{opts: o}, nil
}

// Unknown returns how many records of a kind the translator does not know
// it has kept as x.langgraph.<kind> extension events so far.
func (t *Translator) Unknown() int64 { return t.unknown.Load() }

// Name returns "langgraph".
func (t *Translator) Name() string { return Name }

// Detect recognises what Inbound translates: an SSE stream (a first line
// that is an SSE field, "event:", "data:", "id:", "retry:", or a ":"
// comment), or JSON whose first record has the shape of a LangGraph
// record (a frame of any mode, including error frames, a v2 stream part,
// an astream_events record, a protocol-v2 event, a run, a thread or a
// LangChain message). It reads the top-level members of the first record
// only, and decodes no value.
func (t *Translator) Detect(raw []byte) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	switch {
	case len(raw) == 0:
		return false
	case raw[0] == '{' || raw[0] == '[':
		sh, ok := shapeOfJSON(raw)
		return ok && sh.kind() != kindNone
	case raw[0] == ':':
		return true
	}
	for _, f := range []string{"event:", "data:", "id:", "retry:"} {
		if bytes.HasPrefix(raw, []byte(f)) {
			return true
		}
	}
	return false
}

// CanHandle reports whether Outbound can translate m: a task.request
// (a run-creation body), or a message that came in through this
// translator from a stream frame.
func (t *Translator) CanHandle(m *protocol.Message) bool {
	if m == nil {
		return false
	}
	if adapters.Source(m) != Source {
		return false
	}
	return (m.Type == protocol.TypeTaskRequest && rawjson.MetaString(m, MetaEvent) == "") || frameOf(m)
}

// frameOf reports whether m carries a whole frame's data as its payload.
func frameOf(m *protocol.Message) bool {
	ev := rawjson.MetaString(m, MetaEvent)
	switch ev {
	case "", "run", "thread", "message", "events":
		return false // not from an SSE frame: a record of its own
	}
	pt := m.PayloadType
	return (m.Type == protocol.TypeTaskProgress && (pt == PayloadValues || pt == PayloadUpdates || pt == PayloadCustom || pt == PayloadCheckpoint)) ||
		m.Type.Extension()
}

// Inbound translates LangGraph output into envelopes, in order. raw is one of:
//
//   - an Agent Server SSE stream (or a piece of one): "event:", "data:",
//     "id:" lines and ": heartbeat" comments;
//   - JSON: one record, a JSON array of records, or JSON lines, where a
//     record is an SSE frame in the SDK's parsed form {"event", "data",
//     "id"?}, a v2 stream part {"type", "ns", "data"}, an astream_events
//     v2 record, a protocol-v2 event {"type":"event","method",…}, a Run
//     (or run webhook payload), a Thread, or a serialized LangChain message.
//
// The records of one input are one stream: they share a run (named by the
// first metadata frame or record carrying a run_id) and its state. To
// translate a live stream frame by frame, use a Stream.
func (t *Translator) Inbound(ctx context.Context, raw []byte) ([]*protocol.Message, error) {
	s := t.NewStream(Scope{})
	return s.Inbound(ctx, raw)
}

// Inbound translates raw (see Translator.Inbound) in the stream's state.
func (s *Stream) Inbound(ctx context.Context, raw []byte) ([]*protocol.Message, error) {
	if len(raw) > s.t.opts.MaxBytes {
		return nil, inErr(protocol.CodeTooLarge, "", "input is "+itoa(len(raw))+" bytes, over "+itoa(s.t.opts.MaxBytes), nil)
	}
	trimmed := bytes.TrimLeft(raw, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, inErr(protocol.CodeMissingField, "", "empty input", ErrNotLangGraph)
	}
	var out []*protocol.Message
	if trimmed[0] == '{' || trimmed[0] == '[' {
		recs, err := splitJSON(raw)
		if err != nil {
			return nil, err
		}
		for i, r := range recs {
			base := ""
			if len(recs) > 1 {
				base = "/" + itoa(i)
			}
			msgs, err := s.record(ctx, r, base)
			if err != nil {
				return nil, err
			}
			out = append(out, msgs...)
		}
		return out, nil
	}
	if !utf8.Valid(raw) {
		return nil, inErr(protocol.CodeInvalidUTF8, "", "the SSE stream is not valid UTF-8", nil)
	}
	rd := newSSEReader(bytes.NewReader(raw))
	for {
		f, err := rd.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var ae *adapters.Error
			if errors.As(err, &ae) {
				return nil, ae
			}
			return nil, inErr(protocol.CodeInvalidField, "", "reading the SSE stream", err)
		}
		msgs, err := s.Frame(ctx, f)
		if err != nil {
			return nil, err
		}
		out = append(out, msgs...)
	}
	if len(out) == 0 {
		return nil, inErr(protocol.CodeMissingField, "", "the SSE stream holds no frame", ErrNotLangGraph)
	}
	return out, nil
}

// splitJSON reads raw as one JSON value (an array is a list of records) or
// as JSON lines, each checked as strictly as the event store reads
// envelopes (rawjson.Values: the same refusal whatever the layout).
func splitJSON(raw []byte) ([]jsontext.Value, error) {
	vs, err := rawjson.Values(Name, raw)
	if err != nil {
		return nil, err
	}
	if len(vs) == 1 {
		if vs[0].Kind() == '[' {
			var items []jsontext.Value
			if err := adapters.DecodeJSON(Name, vs[0], &items); err != nil {
				return nil, err
			}
			if len(items) == 0 {
				return nil, inErr(protocol.CodeMissingField, "", "an empty array holds no record", ErrNotLangGraph)
			}
			return items, nil
		}
		return vs, nil
	}
	for i, v := range vs {
		if v.Kind() != '{' {
			return nil, inErr(protocol.CodeWrongType, "/"+itoa(i), "JSON line value "+itoa(i+1)+" is not a JSON object", ErrNotLangGraph)
		}
	}
	return vs, nil
}

// jsonOf encodes a Go value built from toAny.
func jsonOf(v any) json.RawMessage {
	b, err := rawjson.FromAny(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}

func isOurs(m *protocol.Message) bool { return adapters.Source(m) == Source }
