package clowl

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"github.com/clutchprotocol/clutch/adapters/internal/rawjson"
	"strconv"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/protocol"
)

// Coercion is one repair ParseLenient made, as the CLowl SDKs report them
// ("coercion_warnings"): the field (a dotted path), the value before and
// after, and the reason. An unknown field that was ignored is reported
// with Reason "ignore-unknown-field" and a nil Coerced.
type Coercion struct {
	Field    string `json:"field"`
	Original any    `json:"original"`
	Coerced  any    `json:"coerced"`
	Reason   string `json:"reason"`
}

type wire struct {
	Clowl   jsontext.Value `json:"clowl"`
	MID     jsontext.Value `json:"mid"`
	TS      jsontext.Value `json:"ts"`
	TID     jsontext.Value `json:"tid"`
	PID     jsontext.Value `json:"pid"`
	P       jsontext.Value `json:"p"`
	From    jsontext.Value `json:"from"`
	To      jsontext.Value `json:"to"`
	CID     jsontext.Value `json:"cid"`
	Body    jsontext.Value `json:"body"`
	Ctx     jsontext.Value `json:"ctx"`
	Auth    jsontext.Value `json:"auth"`
	Det     jsontext.Value `json:"det"`
	Unknown jsontext.Value `json:",embed"`
}

type wireBody struct {
	T       jsontext.Value `json:"t"`
	D       jsontext.Value `json:"d"`
	Unknown jsontext.Value `json:",embed"`
}

type wireCtx struct {
	Ref     jsontext.Value `json:"ref"`
	Inline  jsontext.Value `json:"inline"`
	Hash    jsontext.Value `json:"hash"`
	Unknown jsontext.Value `json:",embed"`
}

// DefaultMaxBytes is the largest message accepted: the protocol's limit.
const DefaultMaxBytes = protocol.DefaultMaxBytes

// Parse decodes one CLowl v0.2 message strictly: it must be JSON the store
// would accept (no duplicate keys, valid UTF-8, at most 64 levels deep, at
// most DefaultMaxBytes), of version "0.2" (else UNSUPPORTED_VERSION, CLowl
// E014), and valid against the CLowl v0.2 JSON Schema (unknown members
// are refused, as the schema's additionalProperties says).
func Parse(raw []byte) (*Message, error) { return parse(raw, DefaultMaxBytes) }

func parse(raw []byte, maxBytes int) (*Message, error) {
	w, err := decodeWire(raw, maxBytes, false, nil)
	if err != nil {
		return nil, err
	}
	if err := validateSchema(raw); err != nil {
		return nil, err
	}
	return w.message(false, nil)
}

// ParseLenient decodes a message the way the CLowl SDKs' lenient parsers
// do: unknown members (top level, body, ctx) are ignored, a missing mid is
// generated, and values of the wrong form are coerced where the SDKs
// coerce them (numeric-string ts; lower-case or padded performative;
// non-string tid and pid; non-boolean det; upper-case delegation_mode;
// PROG pct, seq and final). Every repair is reported. A version other than
// "0.2" is still refused (UNSUPPORTED_VERSION, CLowl E014: docs/protocol.md §14.8),
// where the SDKs coerce it; a missing version is taken as "0.2". The
// repaired message must then pass the schema.
//
// The generated mid is deterministic, so that a re-sent message dedups:
// UUIDv7-shaped, from ts and the SHA-256 of the input's JCS form.
func ParseLenient(raw []byte) (*Message, []Coercion, error) {
	return parseLenient(raw, DefaultMaxBytes)
}

func parseLenient(raw []byte, maxBytes int) (*Message, []Coercion, error) {
	var cs []Coercion
	w, err := decodeWire(raw, maxBytes, true, &cs)
	if err != nil {
		return nil, nil, err
	}
	m, err := w.message(true, &cs)
	if err != nil {
		return nil, nil, err
	}
	if m.MID == "" {
		m.MID = generatedMID(raw, m.TS)
		cs = append(cs, Coercion{Field: "mid", Reason: "generate-mid", Coerced: m.MID})
	}
	b, err := m.encode()
	if err != nil {
		return nil, nil, inErr(protocol.CodeInvalidField, "", "repaired message cannot be encoded", err)
	}
	if err := validateSchema(b); err != nil {
		return nil, nil, err
	}
	return m, cs, nil
}

// decodeWire checks raw and splits it into its members.
func decodeWire(raw []byte, maxBytes int, lenient bool, cs *[]Coercion) (*wire, error) {
	if len(raw) > maxBytes {
		return nil, inErr(protocol.CodeTooLarge, "", "message is "+strconv.Itoa(len(raw))+" bytes, limit "+strconv.Itoa(maxBytes), nil)
	}
	w := new(wire)
	if err := adapters.DecodeJSON(Name, raw, w); err != nil {
		if protocol.CodeOf(err) == protocol.CodeWrongType && rawjson.Kind(raw) != '{' {
			return nil, inErr(protocol.CodeWrongType, "", "a CLowl message is a JSON object, got "+rawjson.KindName(raw), nil)
		}
		return nil, err
	}
	// The version first (docs/protocol.md §14.8): a message of another version is
	// E014 whatever else is wrong with it.
	switch rawjson.Kind(w.Clowl) {
	case '"':
		if v, _ := rawjson.Str(w.Clowl); v != Version {
			return nil, inErr(protocol.CodeUnsupportedVersion, "/clowl", "version "+strconv.Quote(v)+", this adapter speaks "+Version, ErrVersion)
		}
	case 0:
		if hasMember(w.Unknown, "cl") {
			return nil, inErr(protocol.CodeUnsupportedVersion, "/cl", `a CLowl v0.1 message ("cl"), this adapter speaks `+Version, ErrVersion)
		}
		if !lenient {
			return nil, inErr(protocol.CodeMissingField, "/clowl", "clowl (the version) is required", nil)
		}
		*cs = append(*cs, Coercion{Field: "clowl", Coerced: Version, Reason: "default-clowl-version"})
	default:
		return nil, inErr(protocol.CodeUnsupportedVersion, "/clowl", "version is a "+rawjson.KindName(w.Clowl)+", this adapter speaks \""+Version+"\"", ErrVersion)
	}
	return w, nil
}

func hasMember(obj jsontext.Value, name string) bool {
	if len(obj) == 0 {
		return false
	}
	ms, err := rawjson.Members(obj)
	if err != nil {
		return false
	}
	for _, m := range ms {
		if m.Name == name {
			return true
		}
	}
	return false
}

// message extracts the typed message. In strict mode the schema has
// already been checked, so errors here are only defensive.
func (w *wire) message(lenient bool, cs *[]Coercion) (*Message, error) {
	m := &Message{}
	var err error
	if lenient && len(w.Unknown) > 0 {
		ignore(cs, "", w.Unknown)
	}
	// mid
	switch {
	case rawjson.Kind(w.MID) == '"':
		m.MID, _ = rawjson.Str(w.MID)
	case rawjson.Kind(w.MID) == 0 || rawjson.Kind(w.MID) == 'n':
		if !lenient {
			return nil, inErr(protocol.CodeMissingField, "/mid", "mid is required", nil)
		}
	default:
		return nil, inErr(protocol.CodeWrongType, "/mid", "mid must be a string", nil)
	}
	// ts
	if m.TS, err = readTS(w.TS, lenient, cs); err != nil {
		return nil, err
	}
	// tid, pid
	if m.TID, err = readID(w.TID, "tid", lenient, cs); err != nil {
		return nil, err
	}
	if m.PID, err = readID(w.PID, "pid", lenient, cs); err != nil {
		return nil, err
	}
	// p
	p, _, err := wantString(w.P, "/p")
	if err != nil {
		return nil, err
	}
	if lenient {
		if q := strings.ToUpper(strings.TrimSpace(p)); q != p {
			reason := "uppercase-performative"
			if strings.TrimSpace(p) != p {
				reason = "trim-performative"
			}
			*cs = append(*cs, Coercion{Field: "p", Original: p, Coerced: q, Reason: reason})
			p = q
		}
	}
	m.P = Performative(p)
	if !m.P.Valid() {
		return nil, inErr(protocol.CodeInvalidField, "/p", "unknown performative "+strconv.Quote(p), nil)
	}
	if m.From, _, err = wantString(w.From, "/from"); err != nil {
		return nil, err
	}
	if m.CID, _, err = wantString(w.CID, "/cid"); err != nil {
		return nil, err
	}
	if m.Auth, _, err = wantString(w.Auth, "/auth"); err != nil {
		return nil, err
	}
	if err := m.readTo(w.To); err != nil {
		return nil, err
	}
	if err := m.readBody(w.Body, lenient, cs); err != nil {
		return nil, err
	}
	if err := m.readCtx(w.Ctx, lenient, cs); err != nil {
		return nil, err
	}
	if m.Det, err = readDet(w.Det, lenient, cs); err != nil {
		return nil, err
	}
	for _, f := range [...]struct{ name, v string }{{"from", m.From}, {"cid", m.CID}} {
		if f.v == "" {
			return nil, inErr(protocol.CodeMissingField, "/"+f.name, f.name+" is required", nil)
		}
	}
	return m, nil
}

func ignore(cs *[]Coercion, prefix string, obj jsontext.Value) {
	ms, _ := rawjson.Members(obj)
	for _, mb := range ms {
		*cs = append(*cs, Coercion{Field: prefix + mb.Name, Original: rawjson.ToAny(mb.Value), Reason: "ignore-unknown-field"})
	}
}

func readTS(v jsontext.Value, lenient bool, cs *[]Coercion) (int64, error) {
	switch rawjson.Kind(v) {
	case 0, 'n':
		return 0, inErr(protocol.CodeMissingField, "/ts", "ts is required", nil)
	case '0':
		if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			return n, nil
		}
		if lenient {
			// JSON has no integer type; the SDKs accept an integral float.
			if f, err := strconv.ParseFloat(string(v), 64); err == nil && f == float64(int64(f)) {
				*cs = append(*cs, Coercion{Field: "ts", Original: json.Number(v), Coerced: int64(f), Reason: "integral-float-to-int"})
				return int64(f), nil
			}
		}
		return 0, inErr(protocol.CodeWrongType, "/ts", "ts must be an integer number of seconds, got "+string(v), nil)
	case '"':
		if lenient {
			s, _ := rawjson.Str(v)
			if n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil {
				*cs = append(*cs, Coercion{Field: "ts", Original: s, Coerced: n, Reason: "numeric-string-to-int"})
				return n, nil
			}
		}
	}
	return 0, inErr(protocol.CodeWrongType, "/ts", "ts must be an integer, got "+rawjson.KindName(v), nil)
}

func readID(v jsontext.Value, name string, lenient bool, cs *[]Coercion) (string, error) {
	switch rawjson.Kind(v) {
	case 0, 'n':
		return "", nil
	case '"':
		s, _ := rawjson.Str(v)
		return s, nil
	case '0':
		if lenient {
			*cs = append(*cs, Coercion{Field: name, Original: json.Number(v), Coerced: string(v), Reason: "stringify-" + name})
			return string(v), nil
		}
	}
	return "", inErr(protocol.CodeWrongType, "/"+name, name+" must be a string, got "+rawjson.KindName(v), nil)
}

func readDet(v jsontext.Value, lenient bool, cs *[]Coercion) (*bool, error) {
	switch rawjson.Kind(v) {
	case 0, 'n':
		return nil, nil
	case 't', 'f':
		b := v[0] == 't'
		return &b, nil
	}
	if lenient {
		if b, ok := truthy(v); ok {
			*cs = append(*cs, Coercion{Field: "det", Original: rawjson.ToAny(v), Coerced: b, Reason: "coerce-det-to-bool"})
			return &b, nil
		}
	}
	return nil, inErr(protocol.CodeWrongType, "/det", "det must be a boolean, got "+rawjson.KindName(v), nil)
}

// truthy reads the boolean a lenient sender meant: "true"/"yes"/"1" and
// non-zero numbers are true; "false"/"no"/"0"/"" and 0 are false.
func truthy(v jsontext.Value) (bool, bool) {
	switch rawjson.Kind(v) {
	case '"':
		s, _ := rawjson.Str(v)
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "true", "yes", "y", "1", "on":
			return true, true
		case "false", "no", "n", "0", "off", "":
			return false, true
		}
	case '0':
		f, err := strconv.ParseFloat(string(v), 64)
		return f != 0, err == nil
	}
	return false, false
}

func (m *Message) readTo(v jsontext.Value) error {
	switch rawjson.Kind(v) {
	case 0, 'n':
		return inErr(protocol.CodeMissingField, "/to", "to is required", nil)
	case '"':
		s, _ := rawjson.Str(v)
		if s == "" {
			return inErr(protocol.CodeInvalidField, "/to", "to must not be empty", nil)
		}
		m.To = []string{s}
		return nil
	case '[':
		var to []string
		if err := jsonv2.Unmarshal(v, &to); err != nil {
			return adapters.JSONError(Name, "/to", err)
		}
		if len(to) == 0 {
			return inErr(protocol.CodeInvalidField, "/to", "to must name at least one recipient", nil)
		}
		for i, s := range to {
			if s == "" {
				return inErr(protocol.CodeInvalidField, "/to/"+strconv.Itoa(i), "a recipient must not be empty", nil)
			}
		}
		m.To, m.ToList = to, true
		return nil
	}
	return inErr(protocol.CodeWrongType, "/to", "to must be a string or an array, got "+rawjson.KindName(v), nil)
}

func (m *Message) readBody(v jsontext.Value, lenient bool, cs *[]Coercion) error {
	switch rawjson.Kind(v) {
	case 0, 'n':
		return inErr(protocol.CodeMissingField, "/body", "body is required", nil)
	case '{':
	default:
		return inErr(protocol.CodeWrongType, "/body", "body must be an object, got "+rawjson.KindName(v), nil)
	}
	var b wireBody
	if err := jsonv2.Unmarshal(v, &b); err != nil {
		return adapters.JSONError(Name, "/body", err)
	}
	if lenient && len(b.Unknown) > 0 {
		ignore(cs, "body.", b.Unknown)
	}
	t, _, err := wantString(b.T, "/body/t")
	if err != nil {
		return err
	}
	if t == "" {
		return inErr(protocol.CodeMissingField, "/body/t", "body.t is required", nil)
	}
	m.Body.T = t
	switch rawjson.Kind(b.D) {
	case 0, 'n':
		return inErr(protocol.CodeMissingField, "/body/d", "body.d is required", nil)
	case '{':
	default:
		return inErr(protocol.CodeWrongType, "/body/d", "body.d must be an object, got "+rawjson.KindName(b.D), nil)
	}
	d := rawjson.Compact(b.D)
	if lenient {
		var err error
		if d, err = coerceData(m.P, d, cs); err != nil {
			return err
		}
	}
	m.Body.D = d
	return nil
}

// coerceData applies the SDKs' lenient repairs inside body.d.
func coerceData(p Performative, d []byte, cs *[]Coercion) ([]byte, error) {
	if p != DLGT && p != PROG {
		return d, nil
	}
	ms, err := rawjson.Members(d)
	if err != nil {
		return nil, adapters.JSONError(Name, "/body/d", err)
	}
	changed := false
	for i := range ms {
		mb := &ms[i]
		field := "body.d." + mb.Name
		switch {
		case p == DLGT && mb.Name == "delegation_mode" && rawjson.Kind(mb.Value) == '"':
			s, _ := rawjson.Str(mb.Value)
			if l := strings.ToLower(strings.TrimSpace(s)); l != s {
				*cs = append(*cs, Coercion{Field: field, Original: s, Coerced: l, Reason: "lowercase-delegation-mode"})
				mb.Value, _ = jsontext.AppendQuote(nil, l)
				changed = true
			}
		case p == PROG && (mb.Name == "pct" || mb.Name == "seq"):
			n, orig, ok := numericString(mb.Value)
			if ok {
				*cs = append(*cs, Coercion{Field: field, Original: orig, Coerced: n, Reason: "numeric-string-to-" + mb.Name})
			} else if rawjson.Kind(mb.Value) == '0' {
				n, ok = intLiteral(mb.Value)
			}
			if !ok {
				continue // left for the schema to refuse
			}
			if mb.Name == "pct" && (n < 0 || n > 100) {
				c := min(max(n, 0), 100)
				*cs = append(*cs, Coercion{Field: field, Original: n, Coerced: c, Reason: "clamp-pct-range"})
				n = c
			}
			mb.Value = strconv.AppendInt(nil, n, 10)
			changed = true
		case p == PROG && mb.Name == "final" && rawjson.Kind(mb.Value) != 't' && rawjson.Kind(mb.Value) != 'f':
			if b, ok := truthy(mb.Value); ok {
				*cs = append(*cs, Coercion{Field: field, Original: rawjson.ToAny(mb.Value), Coerced: b, Reason: "coerce-final-to-bool"})
				mb.Value = strconv.AppendBool(nil, b)
				changed = true
			}
		}
	}
	if !changed {
		return d, nil
	}
	return rawjson.Object(ms), nil
}

func numericString(v jsontext.Value) (int64, string, bool) {
	if rawjson.Kind(v) != '"' {
		return 0, "", false
	}
	s, _ := rawjson.Str(v)
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	return n, s, err == nil
}

func intLiteral(v jsontext.Value) (int64, bool) {
	n, err := strconv.ParseInt(string(v), 10, 64)
	return n, err == nil
}

func (m *Message) readCtx(v jsontext.Value, lenient bool, cs *[]Coercion) error {
	switch rawjson.Kind(v) {
	case 0:
		return nil
	case '{':
	default:
		return inErr(protocol.CodeWrongType, "/ctx", "ctx must be an object, got "+rawjson.KindName(v), nil)
	}
	var c wireCtx
	if err := jsonv2.Unmarshal(v, &c); err != nil {
		return adapters.JSONError(Name, "/ctx", err)
	}
	if lenient && len(c.Unknown) > 0 {
		ignore(cs, "ctx.", c.Unknown)
	}
	ctx := &Context{}
	var err error
	if ctx.Ref, _, err = wantString(c.Ref, "/ctx/ref"); err != nil {
		return err
	}
	if ctx.Inline, _, err = wantString(c.Inline, "/ctx/inline"); err != nil {
		return err
	}
	if ctx.Hash, _, err = wantString(c.Hash, "/ctx/hash"); err != nil {
		return err
	}
	m.Ctx = ctx
	return nil
}

// generatedMID returns a UUIDv7-shaped id from ts and the input's content.
func generatedMID(raw []byte, ts int64) string {
	canon, err := protocol.Canonical(raw)
	if err != nil {
		canon = raw
	}
	sum := sha256.Sum256(canon)
	h := hex.EncodeToString(sum[:])
	ms := strconv.FormatInt(max(ts, 0)*1000, 16)
	if len(ms) < 12 {
		ms = strings.Repeat("0", 12-len(ms)) + ms
	}
	variant := "89ab"[sum[2]&3]
	return ms[len(ms)-12:len(ms)-4] + "-" + ms[len(ms)-4:] + "-7" + h[0:3] + "-" + string(variant) + h[3:6] + "-" + h[6:18]
}
