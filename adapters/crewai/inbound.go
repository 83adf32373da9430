package crewai

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/adapters/internal/bound"
	"github.com/clutchprotocol/clutch/adapters/internal/rawjson"
	"github.com/clutchprotocol/clutch/adapters/internal/redact"
	"github.com/clutchprotocol/clutch/protocol"
)

type jsonValue = jsontext.Value

// maxOutsideID bounds a crewAI id, so that the envelope ids made of it
// (a prefix, a suffix) stay within protocol.MaxIDLength.
const maxOutsideID = 200

// dropKeys are event members that hold Python object dumps (reprs with
// memory addresses, whole agents and crews): never kept, but named in
// meta.crewai_dropped.
var dropKeys = []string{"agent", "crew", "callbacks", "from_task", "from_agent", "task", "tools_handler"}

// Index keys of crewAI ids (adapters.Links): a crewAI task id and a tool
// call's event id. For a task the Link's Kind holds its parent task.
const (
	keyTask = "crewai-task:"
	keyCall = "crewai-call:"
	keyOpen = "crewai-open:" // a run's open state (openState as JSON in Kind)
	keyEnd  = "crewai-end:"  // a Clutch task that has had its terminal event
)

// Tools crewAI gives agents for delegation (tools/agent_tools).
var delegationTools = map[string]bool{"Delegate work to coworker": true, "Ask question to coworker": true}

// event is one crewAI event of a batch, any wrapper.
type event struct {
	id    string
	typ   string
	ts    string    // the envelope's ts
	sent  string    // timestamp as sent, when ts differs
	at    time.Time // for ordering
	exec  string    // AMP execution_id
	data  map[string]jsonValue
	links map[string]any
	seq   *int64
	extra map[string]any // members of the event object the wrappers do not define
	path  string
}

func has(m map[string]jsonValue, k string) bool { _, ok := m[k]; return ok }

// optStr reads an optional string member of obj at path.
func optStr(obj map[string]jsonValue, k, path string) (string, error) {
	s, _, code, detail := rawjson.OptString(obj[k])
	if code != "" {
		return "", inErr(code, path+"/"+k, detail, nil)
	}
	return s, nil
}

// reqStr reads a required non-empty string member.
func reqStr(obj map[string]jsonValue, k, path string) (string, error) {
	s, err := optStr(obj, k, path)
	if err == nil && s == "" {
		err = inErr(protocol.CodeMissingField, path+"/"+k, k+" is required", nil)
	}
	return s, err
}

// reqID reads a required crewAI id, bounded in length.
func reqID(obj map[string]jsonValue, k, path string) (string, error) {
	s, err := reqStr(obj, k, path)
	if err == nil && len(s) > maxOutsideID {
		err = inErr(protocol.CodeInvalidField, path+"/"+k, k+" is over "+strconv.Itoa(maxOutsideID)+" bytes", nil)
	}
	return s, err
}

func optID(obj map[string]jsonValue, k, path string) (string, error) {
	s, err := optStr(obj, k, path)
	if err == nil && len(s) > maxOutsideID {
		err = inErr(protocol.CodeInvalidField, path+"/"+k, k+" is over "+strconv.Itoa(maxOutsideID)+" bytes", nil)
	}
	return s, err
}

// object decodes an optional object member (absent and null: nil).
func object(v jsonValue, path string) (map[string]jsonValue, error) {
	switch rawjson.Kind(v) {
	case 0, 'n':
		return nil, nil
	case '{':
		var m map[string]jsonValue
		if err := jsonv2.Unmarshal(v, &m); err != nil {
			return nil, adapters.JSONError(Name, path, err)
		}
		return m, nil
	}
	return nil, inErr(protocol.CodeWrongType, path, "want an object, got "+rawjson.KindName(v), nil)
}

// parseTime reads a crewAI timestamp: RFC 3339, or a naive ISO time
// (started_at, finished_at), taken as UTC.
func parseTime(s string) (time.Time, bool) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, true
	}
	if t, err := time.Parse("2006-01-02T15:04:05.999999999", s); err == nil {
		return t, true
	}
	return time.Time{}, false
}

func (a *Adapter) inbound(ctx context.Context, raw []byte, top map[string]jsonValue) ([]*protocol.Message, error) {
	switch {
	case has(top, "events"):
		return a.batch(ctx, top)
	case has(top, "type") && has(top, "event_id"):
		// One event's to_json(), whatever members it has (flow_started
		// has inputs, as a kickoff body does).
		return a.events(ctx, "", []map[string]jsonValue{top}, "", nil)
	case has(top, "chunk_type"):
		return a.chunk(ctx, raw, top)
	case has(top, "final_event_count"), has(top, "execution_type"):
		return a.traceLifecycle(ctx, raw, top)
	case has(top, "human_feedback"), has(top, "is_approve"):
		return a.resumeRequest(ctx, raw, top)
	case has(top, "inputs"):
		return a.kickoffRequest(ctx, raw, top)
	case has(top, "status"):
		return a.statusBody(ctx, raw, top)
	case has(top, "kickoff_id") && has(top, "error"):
		return a.ampError(ctx, raw, top)
	case has(top, "kickoff_id"):
		return a.kickoffResponse(ctx, raw, top)
	case has(top, "type") && (has(top, "event_id") || has(top, "timestamp")):
		// One event's to_json() (the event bus, StreamFrame data).
		return a.events(ctx, "", []map[string]jsonValue{top}, "", nil)
	}
	return nil, inErr(protocol.CodeInvalidField, "", "not a crewAI event, batch or AMP body", ErrShape)
}

// batch reads a tracing batch {events: [{event_id, ...}], batch_metadata,
// trace_id?} or an AMP webhook delivery {events: [{id, execution_id, ...}]}.
func (a *Adapter) batch(ctx context.Context, top map[string]jsonValue) ([]*protocol.Message, error) {
	if rawjson.Kind(top["events"]) != '[' {
		return nil, inErr(protocol.CodeWrongType, "/events", "want an array, got "+rawjson.KindName(top["events"]), nil)
	}
	var items []map[string]jsonValue
	if err := jsonv2.Unmarshal(top["events"], &items); err != nil {
		return nil, adapters.JSONError(Name, "/events", err)
	}
	trace, err := optID(top, "trace_id", "")
	if err != nil {
		return nil, err
	}
	var extra map[string]any
	for k, v := range top {
		if k != "events" && k != "trace_id" {
			if extra == nil {
				extra = map[string]any{}
			}
			extra[k] = rawjson.ToAny(v)
		}
	}
	return a.events(ctx, trace, items, "/events", extra)
}

// events translates a list of events: those with an execution_id in that
// AMP execution's run, the others in trace's (or the run found through
// their task ids, else one named after the first event).
func (a *Adapter) events(ctx context.Context, trace string, items []map[string]jsonValue, base string, batchMeta map[string]any) ([]*protocol.Message, error) {
	if len(items) == 0 {
		return nil, inErr(protocol.CodeMissingField, base, "a batch without events", nil)
	}
	evs := make([]*event, 0, len(items))
	webhook := false
	for i, it := range items {
		path := base
		if base != "" {
			path = base + "/" + strconv.Itoa(i)
		}
		if it == nil {
			return nil, inErr(protocol.CodeWrongType, path, "an event must be an object", nil)
		}
		e, err := readEvent(it, path)
		if err != nil {
			return nil, err
		}
		webhook = webhook || e.exec != ""
		evs = append(evs, e)
	}
	if webhook {
		sortStable(evs)
	}
	convs := map[string]*conv{}
	var order []*conv
	out := make([]*protocol.Message, 0, len(evs)+2)
	found := ""
	for _, e := range evs {
		run := e.exec
		if run == "" {
			run = trace
		}
		if run == "" {
			if found == "" {
				found = a.findRun(ctx, evs) // before any event's data is consumed
			}
			run = found
		}
		c := convs[run]
		if c == nil {
			c = a.newConv(ctx, run)
			convs[run] = c
			order = append(order, c)
		}
		c.out = out
		if err := c.event(e); err != nil {
			return nil, err
		}
		out = c.out
	}
	if batchMeta != nil && len(out) > 0 {
		out[0].Meta["crewai_batch"] = redact.Any(batchMeta)
		if err := bound.Fit(out[0], 0); err != nil {
			return nil, inErr(protocol.CodeTooLarge, base, "the batch's members do not fit in its first envelope", err)
		}
	}
	for _, c := range order {
		c.remember()
	}
	return out, nil
}

// findRun finds the crewAI run of a batch without one: the run a crewAI
// task id of the batch landed in before, else the first event's id.
func (a *Adapter) findRun(ctx context.Context, evs []*event) string {
	for _, e := range evs {
		if id, ok := rawjson.Str(e.data["task_id"]); ok && id != "" {
			if l, ok := a.links.Lookup(ctx, keyTask+id); ok && l.RunID != "" {
				return strings.TrimPrefix(l.RunID, "run:")
			}
		}
	}
	return evs[0].id
}

func readEvent(it map[string]jsonValue, path string) (*event, error) {
	e := &event{path: path}
	var err error
	idKey, dataKey := "event_id", "event_data"
	if !has(it, "event_id") && has(it, "id") {
		idKey, dataKey = "id", "data"
	}
	if e.id, err = reqID(it, idKey, path); err != nil {
		return nil, err
	}
	if e.typ, err = reqStr(it, "type", path); err != nil {
		return nil, err
	}
	if len(e.typ) > 128 {
		return nil, inErr(protocol.CodeInvalidField, path+"/type", "type is over 128 bytes", nil)
	}
	if e.exec, err = optID(it, "execution_id", path); err != nil {
		return nil, err
	}
	if e.sent, err = reqStr(it, "timestamp", path); err != nil {
		return nil, err
	}
	t, ok := parseTime(e.sent)
	if !ok {
		return nil, inErr(protocol.CodeInvalidField, path+"/timestamp", "not an ISO 8601 time", nil)
	}
	e.at = t
	e.ts = protocol.Timestamp(t)
	if e.ts == e.sent {
		e.sent = ""
	}
	if idKey == "event_id" && !has(it, "event_data") && !has(it, "data") {
		// A bare event: its members are its data.
		dataKey = ""
		e.data = it
		delete(e.data, "event_id")
		delete(e.data, "timestamp")
		delete(e.data, "type")
	} else {
		if !has(it, dataKey) && has(it, "data") {
			dataKey = "data"
		}
		if e.data, err = object(it[dataKey], path+"/"+dataKey); err != nil {
			return nil, err
		}
	}
	if e.data == nil {
		e.data = map[string]jsonValue{}
	}
	for k, v := range it {
		switch k {
		case idKey, "type", "timestamp", "execution_id", dataKey:
			continue
		case "parent_event_id", "previous_event_id", "triggered_by_event_id", "started_event_id", "emission_sequence":
			if dataKey == "" {
				continue // read from data below
			}
			if e.links == nil {
				e.links = map[string]any{}
			}
			e.links[k] = rawjson.ToAny(v)
		default:
			if dataKey == "" {
				continue
			}
			if e.extra == nil {
				e.extra = map[string]any{}
			}
			e.extra[k] = rawjson.ToAny(v)
		}
	}
	// The scope ids may also sit in the event's own to_json().
	for _, k := range []string{"parent_event_id", "previous_event_id", "triggered_by_event_id", "started_event_id", "emission_sequence"} {
		if v, ok := e.data[k]; ok {
			if e.links == nil {
				e.links = map[string]any{}
			}
			e.links[k] = rawjson.ToAny(v)
			delete(e.data, k)
		}
	}
	if n, ok := e.links["emission_sequence"]; ok {
		if f, ok := rawjson.Number(n); ok {
			s := int64(f)
			e.seq = &s
		}
	}
	return e, nil
}

// derivedID names a body without an id by its content.
func derivedID(prefix string, raw []byte) string {
	sum := sha256.Sum256(raw)
	return prefix + hex.EncodeToString(sum[:16])
}

// ids of a crewAI run in Clutch.
func runID(exec string) string    { return "run:" + exec }
func threadID(exec string) string { return "thread:" + exec }
func rootTask(exec string) string { return protocol.PrefixTask + exec }

// crewAgent is the agent id of a crew (or of crewAI when the crew is not
// named), agentOf that of a crewAI agent role.
func crewAgent(name string) string {
	if s := adapters.Slug(name); s != "" {
		return "agent:crewai:crew:" + s
	}
	return "agent:crewai"
}

func agentOf(role string) string {
	if s := adapters.Slug(role); s != "" {
		return "agent:crewai:" + s
	}
	return "agent:crewai"
}

// extKind names the extension type of an unknown crewAI type:
// x.crewai.<kind> with the characters docs/protocol.md §2.6 allows.
func extKind(typ string) protocol.Type {
	var b strings.Builder
	for _, r := range strings.ToLower(typ) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	s := strings.TrimRight(b.String(), ".")
	if s == "" {
		s = "event"
	}
	return protocol.Type("x.crewai." + s)
}
