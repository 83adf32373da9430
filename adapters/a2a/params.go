package a2a

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// checkParams checks the params of the methods where the SDK decides
// before the handler, and wrongly: it takes pageSize 0 for an absent
// pageSize, and answers a value of the wrong form in valid JSON (a
// statusTimestampAfter that is no timestamp) as a parse error rather than
// invalid params. For GetTask, ListTasks, CancelTask and SubscribeToTask
// each known member of params is checked for its form (unknown members
// are ignored, as the SDK ignores them); what the handler can tell apart
// (a negative historyLength, an unknown status) is left to it. body is a
// valid JSON text (serveRPC checked it). problem is "" when the params
// pass, or when the body is not a request this check reads (the SDK
// answers it); else it names the member, and id is the request's id.
func checkParams(body []byte) (id jsontext.Value, problem string) {
	d := jsontext.NewDecoder(bytes.NewReader(body))
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, ""
	}
	var method string
	var params jsontext.Value
	for d.PeekKind() != '}' {
		tok, err := d.ReadToken()
		if err != nil {
			return nil, ""
		}
		name := tok.String() // before the next read voids tok
		v, err := d.ReadValue()
		if err != nil {
			return nil, ""
		}
		switch name {
		case "id":
			id = v.Clone()
		case "method":
			if v.Kind() == '"' {
				_ = json.Unmarshal(v, &method)
			}
		case "params":
			// v is valid until the next read: its bytes in body are kept.
			end := int(d.InputOffset())
			params = jsontext.Value(body[end-len(v) : end])
		}
	}
	members, ok := paramChecks[method]
	if !ok || params == nil || params.Kind() == 'n' {
		return id, ""
	}
	if params.Kind() != '{' {
		return id, "params must be an object"
	}
	p := jsontext.NewDecoder(bytes.NewReader(params))
	_, _ = p.ReadToken() // '{'
	for p.PeekKind() != '}' {
		tok, err := p.ReadToken()
		if err != nil {
			return id, ""
		}
		name := tok.String()
		v, err := p.ReadValue()
		if err != nil {
			return id, ""
		}
		if check, ok := members[name]; ok && v.Kind() != 'n' {
			if why := check(v); why != "" {
				return id, "params." + name + " " + why
			}
		}
	}
	return id, ""
}

// paramChecks are the members checkParams checks, by method. Each check
// returns why a value is not of its member's form, "" when it is.
var paramChecks = map[string]map[string]func(jsontext.Value) string{
	"GetTask":         {"tenant": isString, "id": isString, "historyLength": isInt(0, math.MaxInt32)},
	"CancelTask":      {"tenant": isString, "id": isString, "metadata": isObject},
	"SubscribeToTask": {"tenant": isString, "id": isString},
	"ListTasks": {"tenant": isString, "contextId": isString, "status": isString, "pageSize": isInt(1, 100),
		"pageToken": isString, "historyLength": isInt(0, math.MaxInt32), "statusTimestampAfter": isTimestamp,
		"includeArtifacts": isBool},
}

func isString(v jsontext.Value) string {
	if v.Kind() != '"' {
		return "must be a string"
	}
	return ""
}

func isObject(v jsontext.Value) string {
	if v.Kind() != '{' {
		return "must be an object"
	}
	return ""
}

func isBool(v jsontext.Value) string {
	if k := v.Kind(); k != 't' && k != 'f' {
		return "must be true or false"
	}
	return ""
}

// isInt checks for an integer from lo to hi.
func isInt(lo, hi int64) func(jsontext.Value) string {
	why := "must be an integer from " + strconv.FormatInt(lo, 10) + " to " + strconv.FormatInt(hi, 10)
	if hi == math.MaxInt32 {
		why = "must be an integer of at least " + strconv.FormatInt(lo, 10)
	}
	return func(v jsontext.Value) string {
		if v.Kind() != '0' {
			return why
		}
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil || n < lo || n > hi {
			return why
		}
		return ""
	}
}

func isTimestamp(v jsontext.Value) string {
	var s string
	if v.Kind() != '"' || json.Unmarshal(v, &s) != nil {
		return "must be an RFC 3339 timestamp"
	}
	if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
		return "must be an RFC 3339 timestamp"
	}
	return ""
}
