package multiagent

import (
	"bytes"
	"encoding/json"
	"github.com/clutchprotocol/clutch/adapters/internal/rawjson"
	"strconv"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/protocol"
)

// The roles of docs/protocol.md §12.
const (
	RoleAgent  = "agent"
	RoleUser   = "user"
	RoleSystem = "system"
	RoleTool   = "tool"
)

// The content types of docs/protocol.md §12.
const (
	ContentText       = "text"
	ContentCode       = "code"
	ContentJSON       = "json"
	ContentToolResult = "tool_result"
	ContentError      = "error"
)

type wire struct {
	Protocol   jsontext.Value `json:"protocol"`
	Role       jsontext.Value `json:"role"`
	Agent      jsontext.Value `json:"agent"`
	Timestamp  jsontext.Value `json:"timestamp"`
	Intent     jsontext.Value `json:"intent"`
	Task       jsontext.Value `json:"task"`
	Inputs     jsontext.Value `json:"inputs"`
	Content    jsontext.Value `json:"content"`
	Outputs    jsontext.Value `json:"outputs"`
	Confidence jsontext.Value `json:"confidence"`
	Trace      jsontext.Value `json:"trace"`
	Unknown    jsontext.Value `json:",embed"`

	// Parsed views.
	role, intent, task, ts, contentType string
	time                                time.Time
	agent                               []rawjson.Member // agent members other than id
	agentID                             string
	score                               json.Number
	hasScore                            bool
	traceID                             string
	parents, tags                       []string
	cost                                jsontext.Value
	traceExtra                          []rawjson.Member
	actions                             []action
	artifacts                           []artifact
	handshake                           bool
	supports                            []string
}

type action struct {
	intent, task string
	args         jsontext.Value
}

type artifact struct {
	kind, name, uri string
}

// present reports whether an optional member has a value (null counts as
// absent).
func present(v jsontext.Value) bool { k := rawjson.Kind(v); return k != 0 && k != 'n' }

// parse checks an envelope and reads the fields the mapping needs.
func parse(raw []byte, maxBytes int) (*wire, error) {
	if len(raw) > maxBytes {
		return nil, inErr(protocol.CodeTooLarge, "", "envelope is "+strconv.Itoa(len(raw))+" bytes, limit "+strconv.Itoa(maxBytes), nil)
	}
	w := new(wire)
	if err := adapters.DecodeJSON(Name, raw, w); err != nil {
		if protocol.CodeOf(err) == protocol.CodeWrongType && rawjson.Kind(raw) != '{' {
			return nil, inErr(protocol.CodeWrongType, "", "an envelope is a JSON object, got "+rawjson.KindName(raw), nil)
		}
		return nil, err
	}
	p, ok, err := wantString(w.Protocol, "/protocol")
	switch {
	case err != nil:
		return nil, inErr(protocol.CodeUnsupportedVersion, "/protocol", "protocol must be the string "+strconv.Quote(Protocol), ErrProtocol)
	case !ok:
		return nil, inErr(protocol.CodeMissingField, "/protocol", "protocol is required", nil)
	case p != Protocol:
		return nil, inErr(protocol.CodeUnsupportedVersion, "/protocol", "protocol "+strconv.Quote(p)+", this adapter speaks "+Protocol, ErrProtocol)
	}
	if w.role, err = required(w.Role, "/role"); err != nil {
		return nil, err
	}
	switch w.role {
	case RoleAgent, RoleUser, RoleSystem, RoleTool:
	default:
		return nil, inErr(protocol.CodeInvalidField, "/role", "role "+strconv.Quote(w.role)+" is not agent, user, system or tool", nil)
	}
	if w.ts, err = required(w.Timestamp, "/timestamp"); err != nil {
		return nil, err
	}
	if w.time, err = time.Parse(time.RFC3339Nano, w.ts); err != nil {
		return nil, inErr(protocol.CodeInvalidField, "/timestamp", "timestamp "+strconv.Quote(w.ts)+" is not ISO 8601 / RFC 3339", nil)
	}
	if w.intent, err = required(w.Intent, "/intent"); err != nil {
		return nil, err
	}
	if w.intent == "" {
		return nil, inErr(protocol.CodeInvalidField, "/intent", "intent must not be empty", nil)
	}
	if !present(w.Task) {
		return nil, inErr(protocol.CodeMissingField, "/task", "task is required", nil)
	}
	if w.task, _, err = wantString(w.Task, "/task"); err != nil {
		return nil, err
	}
	if err := w.readAgent(); err != nil {
		return nil, err
	}
	if present(w.Inputs) && rawjson.Kind(w.Inputs) != '{' {
		return nil, inErr(protocol.CodeWrongType, "/inputs", "inputs must be an object", nil)
	}
	if err := w.readContent(); err != nil {
		return nil, err
	}
	if err := w.readOutputs(); err != nil {
		return nil, err
	}
	if err := w.readConfidence(); err != nil {
		return nil, err
	}
	if err := w.readTrace(); err != nil {
		return nil, err
	}
	if len(w.Unknown) > 0 {
		if depth(w.Unknown) > protocol.DefaultMaxDepth-4 {
			return nil, inErr(protocol.CodeTooDeep, "", "unknown members are nested too deeply to keep in meta", nil)
		}
	}
	return w, nil
}

func required(v jsontext.Value, path string) (string, error) {
	s, ok, err := wantString(v, path)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", inErr(protocol.CodeMissingField, path, path[1:]+" is required", nil)
	}
	return s, nil
}

func (w *wire) readAgent() error {
	if !present(w.Agent) {
		return nil
	}
	if rawjson.Kind(w.Agent) != '{' {
		return inErr(protocol.CodeWrongType, "/agent", "agent must be an object", nil)
	}
	ms, err := rawjson.Members(w.Agent)
	if err != nil {
		return adapters.JSONError(Name, "/agent", err)
	}
	for _, mb := range ms {
		if mb.Name == "id" {
			id, ok := rawjson.Str(mb.Value)
			if !ok || id == "" {
				return inErr(protocol.CodeInvalidField, "/agent/id", "agent.id must be a non-empty string", nil)
			}
			w.agentID = id
			continue
		}
		w.agent = append(w.agent, mb)
	}
	if w.agentID == "" {
		return inErr(protocol.CodeMissingField, "/agent/id", "agent.id is required", nil)
	}
	return nil
}

func (w *wire) readContent() error {
	if !present(w.Content) {
		return inErr(protocol.CodeMissingField, "/content", "content is required", nil)
	}
	if rawjson.Kind(w.Content) != '{' {
		return inErr(protocol.CodeWrongType, "/content", "content must be an object", nil)
	}
	ms, err := rawjson.Members(w.Content)
	if err != nil {
		return adapters.JSONError(Name, "/content", err)
	}
	var data jsontext.Value
	for _, mb := range ms {
		switch mb.Name {
		case "type":
			s, ok := rawjson.Str(mb.Value)
			if !ok || s == "" {
				return inErr(protocol.CodeInvalidField, "/content/type", "content.type must be a non-empty string", nil)
			}
			w.contentType = s
		case "text":
			if present(mb.Value) && rawjson.Kind(mb.Value) != '"' {
				return inErr(protocol.CodeWrongType, "/content/text", "content.text must be a string", nil)
			}
		case "data":
			data = mb.Value
		}
	}
	if w.contentType == "" {
		return inErr(protocol.CodeMissingField, "/content/type", "content.type is required", nil)
	}
	// The handshake / health message of docs/protocol.md §12: a system message
	// announcing what the sender supports.
	if w.role == RoleSystem && w.contentType == ContentJSON && rawjson.Kind(data) == '{' {
		dm, _ := rawjson.Members(data)
		for _, mb := range dm {
			if mb.Name != "supports" || rawjson.Kind(mb.Value) != '[' {
				continue
			}
			var l []jsontext.Value
			if jsonv2.Unmarshal(mb.Value, &l) != nil {
				continue
			}
			w.handshake = true
			for _, e := range l {
				if s, ok := rawjson.Str(e); ok {
					w.supports = append(w.supports, s)
				}
			}
		}
	}
	return nil
}

func (w *wire) readOutputs() error {
	if !present(w.Outputs) {
		return nil
	}
	if rawjson.Kind(w.Outputs) != '{' {
		return inErr(protocol.CodeWrongType, "/outputs", "outputs must be an object", nil)
	}
	ms, err := rawjson.Members(w.Outputs)
	if err != nil {
		return adapters.JSONError(Name, "/outputs", err)
	}
	for _, mb := range ms {
		switch mb.Name {
		case "artifacts", "next_actions":
		default:
			continue
		}
		if !present(mb.Value) {
			continue
		}
		base := "/outputs/" + mb.Name
		if rawjson.Kind(mb.Value) != '[' {
			return inErr(protocol.CodeWrongType, base, mb.Name+" must be an array", nil)
		}
		var l []jsontext.Value
		if err := jsonv2.Unmarshal(mb.Value, &l); err != nil {
			return adapters.JSONError(Name, base, err)
		}
		for i, e := range l {
			p := base + "/" + strconv.Itoa(i)
			if rawjson.Kind(e) != '{' {
				return inErr(protocol.CodeWrongType, p, "want an object", nil)
			}
			em, err := rawjson.Members(e)
			if err != nil {
				return adapters.JSONError(Name, p, err)
			}
			if mb.Name == "artifacts" {
				var a artifact
				for _, f := range em {
					s, isStr := rawjson.Str(f.Value)
					switch {
					case f.Name == "uri" && isStr:
						a.uri = s
					case f.Name == "kind" && isStr:
						a.kind = s
					case f.Name == "name" && isStr:
						a.name = s
					case (f.Name == "uri" || f.Name == "kind" || f.Name == "name" || f.Name == "inline") && present(f.Value) && !isStr:
						return inErr(protocol.CodeWrongType, p+"/"+f.Name, f.Name+" must be a string", nil)
					}
				}
				w.artifacts = append(w.artifacts, a)
				continue
			}
			var a action
			seen := false
			for _, f := range em {
				switch f.Name {
				case "intent":
					s, ok := rawjson.Str(f.Value)
					if !ok || s == "" {
						return inErr(protocol.CodeInvalidField, p+"/intent", "a next action needs an intent", nil)
					}
					a.intent = s
				case "task":
					s, ok := rawjson.Str(f.Value)
					if !ok {
						return inErr(protocol.CodeWrongType, p+"/task", "task must be a string", nil)
					}
					a.task, seen = s, true
				case "args":
					if present(f.Value) {
						if rawjson.Kind(f.Value) != '{' {
							return inErr(protocol.CodeWrongType, p+"/args", "args must be an object", nil)
						}
						a.args = rawjson.Compact(f.Value)
					}
				}
			}
			if a.intent == "" || !seen {
				return inErr(protocol.CodeMissingField, p, "a next action needs intent and task", nil)
			}
			w.actions = append(w.actions, a)
		}
	}
	return nil
}

func (w *wire) readConfidence() error {
	if !present(w.Confidence) {
		return nil
	}
	if rawjson.Kind(w.Confidence) != '{' {
		return inErr(protocol.CodeWrongType, "/confidence", "confidence must be an object", nil)
	}
	ms, err := rawjson.Members(w.Confidence)
	if err != nil {
		return adapters.JSONError(Name, "/confidence", err)
	}
	for _, mb := range ms {
		if mb.Name != "score" {
			continue
		}
		if rawjson.Kind(mb.Value) != '0' {
			return inErr(protocol.CodeWrongType, "/confidence/score", "score must be a number", nil)
		}
		f, err := strconv.ParseFloat(string(mb.Value), 64)
		if err != nil || f < 0 || f > 1 {
			return inErr(protocol.CodeInvalidField, "/confidence/score", "score must be between 0 and 1", nil)
		}
		w.score, w.hasScore = json.Number(mb.Value), true
	}
	if !w.hasScore {
		return inErr(protocol.CodeMissingField, "/confidence/score", "confidence needs a score", nil)
	}
	return nil
}

func (w *wire) readTrace() error {
	if !present(w.Trace) {
		return nil
	}
	if rawjson.Kind(w.Trace) != '{' {
		return inErr(protocol.CodeWrongType, "/trace", "trace must be an object", nil)
	}
	ms, err := rawjson.Members(w.Trace)
	if err != nil {
		return adapters.JSONError(Name, "/trace", err)
	}
	for _, mb := range ms {
		p := "/trace/" + mb.Name
		switch mb.Name {
		case "id":
			if !present(mb.Value) {
				continue
			}
			s, ok := rawjson.Str(mb.Value)
			if !ok || s == "" || len(s) > protocol.MaxIDLength {
				return inErr(protocol.CodeInvalidField, p, "trace.id must be a string of 1 to 256 bytes", nil)
			}
			w.traceID = s
		case "parents", "tags":
			if !present(mb.Value) {
				continue
			}
			var l []string
			if err := jsonv2.Unmarshal(mb.Value, &l); err != nil {
				return adapters.JSONError(Name, p, err)
			}
			if l == nil {
				l = []string{}
			}
			if mb.Name == "tags" {
				w.tags = l
				continue
			}
			for i, s := range l {
				if s == "" || len(s) > protocol.MaxIDLength {
					return inErr(protocol.CodeInvalidField, p+"/"+strconv.Itoa(i), "a parent id must be a string of 1 to 256 bytes", nil)
				}
			}
			w.parents = l
		case "cost":
			if present(mb.Value) {
				if rawjson.Kind(mb.Value) != '{' {
					return inErr(protocol.CodeWrongType, p, "cost must be an object", nil)
				}
				w.cost = mb.Value
			}
		default:
			w.traceExtra = append(w.traceExtra, mb)
		}
	}
	return nil
}

// depth returns the nesting depth of a JSON value.
func depth(v []byte) int {
	dec := jsontext.NewDecoder(bytes.NewReader(v))
	deepest := 0
	for {
		if _, err := dec.ReadToken(); err != nil {
			return deepest
		}
		deepest = max(deepest, dec.StackDepth())
	}
}
