package telemetry

import (
	"bytes"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// toolFields are the members of tool.call, tool.result and tool.error
// payloads that name the call (docs/protocol.md §2.3; the MCP client's
// payloads, and the wire error's details for tool.error): tool, name,
// call_id, code and message at the top, call_id, tool and name in
// details.
type toolFields struct {
	tool, name, callID, code, message string
}

// toolReader is a JSON token reader reused across payloads: reading the
// few members above costs a scan, not a decode of the whole payload
// (arguments and results can be large).
type toolReader struct {
	r bytes.Reader
	d *jsontext.Decoder
}

var toolReaders = sync.Pool{New: func() any {
	tr := &toolReader{}
	tr.d = jsontext.NewDecoder(&tr.r)
	return tr
}}

// readToolFields reads the members of f from a payload; it reports false
// when the payload is not a JSON object.
func readToolFields(payload []byte, f *toolFields) bool {
	if scanToolFields(payload, f) {
		return true // the usual payload, read in one pass
	}
	return decodeToolFields(payload, f)
}

// decodeToolFields is readToolFields with the JSON decoder.
func decodeToolFields(payload []byte, f *toolFields) bool {
	tr := toolReaders.Get().(*toolReader)
	defer func() {
		tr.r.Reset(nil) // keep no reference to the payload
		toolReaders.Put(tr)
	}()
	tr.r.Reset(payload)
	tr.d.Reset(&tr.r)
	if tok, err := tr.d.ReadToken(); err != nil || tok.Kind() != '{' {
		return false
	}
	return readMembers(tr.d, f, true)
}

// readMembers reads the members of the object whose '{' d has just read,
// through its '}'. At the top level it keeps tool, name, call_id, code and
// message and reads details; in details it keeps call_id, tool and name
// where the top level has not set them (a top-level call_id comes first,
// docs/protocol.md §2.3.1).
func readMembers(d *jsontext.Decoder, f *toolFields, top bool) bool {
	for d.PeekKind() == '"' {
		name, err := d.ReadValue()
		if err != nil {
			return false
		}
		switch n := string(name); {
		case n == `"call_id"` && (top || f.callID == ""):
			f.callID = readString(d, f.callID)
		case n == `"tool"` && (top || f.tool == ""):
			f.tool = readString(d, f.tool)
		case n == `"name"` && (top || f.name == ""):
			f.name = readString(d, f.name)
		case n == `"code"` && top:
			f.code = readString(d, f.code)
		case n == `"message"` && top:
			f.message = readString(d, f.message)
		case n == `"details"` && top && d.PeekKind() == '{':
			if _, err := d.ReadToken(); err != nil || !readMembers(d, f, false) {
				return false
			}
		default:
			if d.SkipValue() != nil {
				return false
			}
		}
	}
	tok, err := d.ReadToken()
	return err == nil && tok.Kind() == '}'
}

// readString reads a JSON string value, or skips any other value and
// returns def.
func readString(d *jsontext.Decoder, def string) string {
	v, err := d.ReadValue()
	if err != nil || v.Kind() != '"' {
		return def
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1])
	}
	s, err := jsontext.AppendUnquote(nil, v)
	if err != nil {
		return def
	}
	return string(s)
}
