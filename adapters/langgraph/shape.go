package langgraph

import (
	"bytes"

	"github.com/go-json-experiment/json/jsontext"
)

// recordKind is the kind of a JSON record, told by its top-level members
// alone, so that Detect (which scans) and Inbound (which decodes) agree.
type recordKind int

const (
	kindNone     recordKind = iota
	kindEvents              // astream_events v2 record {"event": "on_…"}
	kindFrame               // SSE frame in the SDK's form {"event", "data", "id"?}
	kindProtocol            // protocol-v2 event {"type": "event", "method", …}
	kindPart                // v2 stream part {"type", "ns", "data", "interrupts"?}
	kindRun                 // Run object or run webhook
	kindThread              // Thread object
	kindMessage             // serialized LangChain message
)

// shape is what the kind of a record depends on: its member count, which
// members are present (not null), and a few string members.
type shape struct {
	n                                        int
	eventIsString, data, ns, method, content bool
	runIDPresent                             bool
	event, typ, role, runID, assistant       string
	status, threadID, createdAt              string
}

// note records one top-level member; s is its value when a string.
func (sh *shape) note(name string, kind jsontext.Kind, s string) {
	sh.n++
	present := kind != 'n' && kind != 0
	switch name {
	case "event":
		if kind == '"' {
			sh.eventIsString, sh.event = true, s
		}
	case "data":
		sh.data = true // null data is still data
	case "ns":
		sh.ns = present
	case "method":
		sh.method = present
	case "content":
		sh.content = true
	case "type":
		sh.typ = s
	case "role":
		sh.role = s
	case "run_id":
		sh.runIDPresent, sh.runID = present, s
	case "assistant_id":
		sh.assistant = s
	case "status":
		sh.status = s
	case "thread_id":
		sh.threadID = s
	case "created_at":
		sh.createdAt = s
	}
}

func (sh shape) kind() recordKind {
	switch {
	case sh.eventIsString && len(sh.event) > 2 && sh.event[:3] == "on_":
		return kindEvents
	case sh.eventIsString && sh.data && sh.n <= 3:
		return kindFrame
	case sh.typ == "event" && sh.method:
		return kindProtocol
	case sh.typ != "" && sh.data && sh.ns && sh.n <= 4:
		return kindPart
	case sh.runID != "" && sh.assistant != "" && sh.status != "":
		return kindRun
	case sh.threadID != "" && sh.createdAt != "" && !sh.runIDPresent:
		return kindThread
	case sh.content && (roleOf(sh.typ) != "" || (sh.typ == "" && roleOf(sh.role) != "")):
		return kindMessage
	}
	return kindNone
}

// shapeOfMap is the shape of a decoded record.
func shapeOfMap(obj map[string]any) shape {
	var sh shape
	for k, v := range obj {
		var kind jsontext.Kind
		s, isStr := v.(string)
		switch v.(type) {
		case nil:
			kind = 'n'
		case string:
			kind = '"'
		default:
			kind = '{' // any other present value
		}
		if !isStr {
			s = ""
		}
		sh.note(k, kind, s)
	}
	return sh
}

// shapeOfJSON scans the top-level members of the first record of raw (an
// object, or the first element of an array), without decoding the values.
func shapeOfJSON(raw []byte) (shape, bool) {
	var sh shape
	dec := jsontext.NewDecoder(bytes.NewReader(raw), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	tok, err := dec.ReadToken()
	if err != nil {
		return sh, false
	}
	if tok.Kind() == '[' {
		if tok, err = dec.ReadToken(); err != nil {
			return sh, false
		}
	}
	if tok.Kind() != '{' {
		return sh, false
	}
	for dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			return sh, false
		}
		name := tok.String() // before the next call voids the token
		k := dec.PeekKind()
		s := ""
		if k == '"' {
			v, err := dec.ReadToken()
			if err != nil {
				return sh, false
			}
			s = v.String()
		} else if err := dec.SkipValue(); err != nil {
			return sh, false
		}
		sh.note(name, k, s)
	}
	return sh, true
}
