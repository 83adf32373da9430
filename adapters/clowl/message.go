package clowl

import (
	"encoding/json"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/clutchprotocol/clutch/protocol"
)

// Version is the CLowl version this package speaks (docs/protocol.md §14.8).
const Version = "0.2"

// Performative is the "p" of a CLowl message (docs/protocol.md §14.3).
type Performative string

// The ten performatives of docs/protocol.md §14.3.
const (
	REQ  Performative = "REQ"  // Request: "Do this thing."
	INF  Performative = "INF"  // Inform: "Here is information."
	ACK  Performative = "ACK"  // Acknowledge: "Got it, proceeding."
	ERR  Performative = "ERR"  // Error: "Failed. Here's why."
	DLGT Performative = "DLGT" // Delegate: "Passing this to someone better suited."
	DONE Performative = "DONE" // Complete: "Finished. Here is the result."
	CNCL Performative = "CNCL" // Cancel: "Abort this task."
	QRY  Performative = "QRY"  // Query: "What's the status?"
	PROG Performative = "PROG" // Progress: "Here's a progress update."
	CAPS Performative = "CAPS" // Capabilities: "Here's what I can do."
)

// Performatives returns the ten performatives in the order of docs/protocol.md §14.3.
func Performatives() []Performative {
	return []Performative{REQ, INF, ACK, ERR, DLGT, DONE, CNCL, QRY, PROG, CAPS}
}

// Valid reports whether p is one of the ten performatives.
func (p Performative) Valid() bool { return p.Name() != "" }

// Name returns the performative's name in upper case ("REQUEST" for REQ),
// as the English translation uses it; "" for an unknown code.
func (p Performative) Name() string {
	switch p {
	case REQ:
		return "REQUEST"
	case INF:
		return "INFORM"
	case ACK:
		return "ACKNOWLEDGE"
	case ERR:
		return "ERROR"
	case DLGT:
		return "DELEGATE"
	case DONE:
		return "COMPLETE"
	case CNCL:
		return "CANCEL"
	case QRY:
		return "QUERY"
	case PROG:
		return "PROGRESS"
	case CAPS:
		return "CAPABILITIES"
	}
	return ""
}

// Message is one CLowl v0.2 message (docs/protocol.md §14.2) in Go. Optional members
// that are null or absent on the wire are the zero value here: CLowl gives
// null and absence the same meaning, and Marshal writes the spec's form
// (pid and ctx members as null when unset inside a ctx object, tid, auth
// and det left out).
type Message struct {
	MID  string       // "mid", unique message id (UUIDv7 recommended)
	TS   int64        // "ts", Unix seconds
	TID  string       // "tid", trace id; "" when absent
	PID  string       // "pid", parent message id; "" when null or absent
	P    Performative // "p"
	From string       // "from", sender agent id
	// To holds the recipients of "to": one id, "*" for broadcast, or
	// several for multicast.
	To []string
	// ToList records that "to" was an array, which matters only for a
	// single recipient.
	ToList bool
	CID    string   // "cid", conversation id
	Body   Body     // "body"
	Ctx    *Context // "ctx", nil when absent
	Auth   string   // "auth", opaque token; "" when absent
	Det    *bool    // "det", nil when absent
}

// Body is the "body" of a message: a free-form task type and its data.
type Body struct {
	T string          // "t", free-form task type ("search", "draft", ...)
	D json.RawMessage // "d", a JSON object
}

// Context is the "ctx" object (docs/protocol.md §14.5). "" stands for null.
type Context struct {
	Ref    string // path or URL of shared context
	Inline string // fallback content, at most 2000 characters
	Hash   string // SHA-256 (hex) of the content at Ref
}

// Marshal encodes m in the spec's member order (docs/protocol.md §14.2) and checks
// the result against the CLowl v0.2 JSON Schema.
func (m *Message) Marshal() ([]byte, error) {
	b, err := m.encode()
	if err != nil {
		return nil, outErr(protocol.CodeInvalidField, "", "cannot encode the CLowl message", err)
	}
	if err := validateSchema(b); err != nil {
		return nil, asOutbound(err)
	}
	return b, nil
}

// MarshalJSON encodes m (see Marshal) without the schema check, so that m
// can be embedded in other JSON.
func (m *Message) MarshalJSON() ([]byte, error) { return m.encode() }

// UnmarshalJSON decodes strictly (see Parse).
func (m *Message) UnmarshalJSON(b []byte) error {
	p, err := Parse(b)
	if err != nil {
		return err
	}
	*m = *p
	return nil
}

// encode writes the wire form.
func (m *Message) encode() ([]byte, error) {
	b := make([]byte, 0, 192+len(m.Body.D))
	var err error
	app := func(key, v string) {
		if err != nil {
			return
		}
		b = append(b, ',', '"')
		b = append(b, key...)
		b = append(b, '"', ':')
		b, err = jsontext.AppendQuote(b, v)
	}
	b = append(b, `{"clowl":"`+Version+`"`...)
	app("mid", m.MID)
	b = append(b, `,"ts":`...)
	b = strconv.AppendInt(b, m.TS, 10)
	if m.TID != "" {
		app("tid", m.TID)
	}
	if m.PID != "" {
		app("pid", m.PID)
	}
	app("p", string(m.P))
	app("from", m.From)
	if len(m.To) == 1 && !m.ToList {
		app("to", m.To[0])
	} else {
		b = append(b, `,"to":[`...)
		for i, t := range m.To {
			if i > 0 {
				b = append(b, ',')
			}
			if err == nil {
				b, err = jsontext.AppendQuote(b, t)
			}
		}
		b = append(b, ']')
	}
	app("cid", m.CID)
	b = append(b, `,"body":{"t":`...)
	if err == nil {
		b, err = jsontext.AppendQuote(b, m.Body.T)
	}
	b = append(b, `,"d":`...)
	d := m.Body.D
	if len(d) == 0 {
		d = []byte("{}")
	}
	b = append(b, d...)
	b = append(b, '}')
	if c := m.Ctx; c != nil {
		b = append(b, `,"ctx":{"ref":`...)
		b, err = appendNullable(b, c.Ref, err)
		b = append(b, `,"inline":`...)
		b, err = appendNullable(b, c.Inline, err)
		b = append(b, `,"hash":`...)
		b, err = appendNullable(b, c.Hash, err)
		b = append(b, '}')
	}
	if m.Auth != "" {
		app("auth", m.Auth)
	}
	if m.Det != nil {
		b = append(b, `,"det":`...)
		b = strconv.AppendBool(b, *m.Det)
	}
	b = append(b, '}')
	return b, err
}

func appendNullable(b []byte, s string, err error) ([]byte, error) {
	if err != nil {
		return b, err
	}
	if s == "" {
		return append(b, "null"...), nil
	}
	return jsontext.AppendQuote(b, s)
}
