package eventio

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// Format is an export format.
type Format int

// The formats.
const (
	// JSONLines: {"seq","time","message"} per line.
	JSONLines Format = iota
	// CloudEvents: CloudEvents 1.0 structured JSON per line.
	CloudEvents
)

// String returns "jsonl" or "cloudevents".
func (f Format) String() string {
	if f == CloudEvents {
		return "cloudevents"
	}
	return "jsonl"
}

// ParseFormat reads a format name: "jsonl" (or "json") or "cloudevents"
// (or "ce").
func ParseFormat(s string) (Format, error) {
	switch s {
	case "jsonl", "json", "":
		return JSONLines, nil
	case "cloudevents", "ce":
		return CloudEvents, nil
	}
	return 0, formatError(s)
}

// formatError is ErrFormat naming the format once:
// `unknown format "xml" (want jsonl or cloudevents)`.
type formatError string

func (e formatError) Error() string {
	return "unknown format " + strconv.Quote(string(e)) + " (want jsonl or cloudevents)"
}

// Unwrap returns ErrFormat.
func (e formatError) Unwrap() error { return ErrFormat }

// TypePrefix is the prefix of a CloudEvent type: the message type follows.
const TypePrefix = "io.github.clutchprotocol."

// MaxLine is the longest line Reader accepts: a message of
// protocol.DefaultMaxBytes in base64, with room for the other members.
const MaxLine = protocol.DefaultMaxBytes/3*4 + 64<<10

// The sentinel errors.
var (
	// ErrFormat: an unknown format name.
	ErrFormat error = coded.New("unknown format", protocol.CodeInvalidField)
	// ErrRecord: a line that is not an event of either format, or whose
	// message does not decode.
	ErrRecord error = coded.New("malformed event", protocol.CodeInvalidJSON)
)

// Writer writes events in one format. It buffers: call Flush at the end.
type Writer struct {
	w   *bufio.Writer
	f   Format
	buf []byte
}

// NewWriter returns a Writer of format f to w.
func NewWriter(w io.Writer, f Format) *Writer {
	return &Writer{w: bufio.NewWriterSize(w, 256<<10), f: f}
}

// oneLine reports whether raw can be written as a JSON value inside a line
// and read back as the same bytes.
func oneLine(raw []byte) bool {
	if len(raw) == 0 || raw[0] != '{' || raw[len(raw)-1] != '}' {
		return false
	}
	return bytes.IndexByte(raw, '\n') < 0 && bytes.IndexByte(raw, '\r') < 0
}

// Head is the members of a message that tools list, count and filter by.
type Head struct {
	ID     string `json:"id"`
	TS     string `json:"ts"`
	Run    string `json:"run_id"`
	Thread string `json:"thread_id"`
	Task   string `json:"task_id"`
	Type   string `json:"type"`
	From   struct {
		AgentID string `json:"agent_id"`
	} `json:"from"`
	PayloadType string `json:"payload_type"`
}

// ReadHead reads the Head of stored message bytes: a lighter pass than
// protocol.Decode, for bytes a store already checked. Other members are
// skipped.
func ReadHead(raw []byte) (Head, error) {
	var h Head
	if err := jsonv2.Unmarshal(raw, &h); err != nil {
		return Head{}, coded.Wrap(ErrRecord, "message head", err)
	}
	return h, nil
}

// Write writes one event.
func (w *Writer) Write(ev store.Event) error {
	b := w.buf[:0]
	if w.f == CloudEvents {
		// The stored bytes decoded strictly once already; this reads the
		// few members a CloudEvent names.
		h, err := ReadHead(ev.Raw)
		if err != nil {
			return coded.Wrap(ErrRecord, "event "+strconv.FormatUint(ev.Seq, 10), err)
		}
		b = append(b, `{"specversion":"1.0","id":`...)
		b = appendString(b, h.ID)
		b = append(b, `,"source":`...)
		b = appendString(b, "/runs/"+url.PathEscape(h.Run))
		b = append(b, `,"type":`...)
		b = appendString(b, TypePrefix+h.Type)
		if h.Task != "" {
			b = append(b, `,"subject":`...)
			b = appendString(b, h.Task)
		}
		if h.TS != "" {
			b = append(b, `,"time":`...)
			b = appendString(b, h.TS)
		}
		b = append(b, `,"datacontenttype":"application/json","clutchseq":`...)
		b = strconv.AppendUint(b, ev.Seq, 10)
		b = appendRaw(b, "data", ev.Raw)
	} else {
		b = append(b, `{"seq":`...)
		b = strconv.AppendUint(b, ev.Seq, 10)
		b = append(b, `,"time":"`...)
		b = ev.Time.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
		b = append(b, '"')
		b = appendRaw(b, "message", ev.Raw)
	}
	b = append(b, "}\n"...)
	w.buf = b
	_, err := w.w.Write(b)
	return err
}

func appendRaw(b []byte, name string, raw []byte) []byte {
	if oneLine(raw) {
		b = append(b, `,"`+name+`":`...)
		return append(b, raw...)
	}
	b = append(b, `,"`+name+`_base64":"`...)
	b = base64.StdEncoding.AppendEncode(b, raw)
	return append(b, '"')
}

func appendString(b []byte, s string) []byte {
	out, err := jsontext.AppendQuote(b, s)
	if err != nil { // invalid UTF-8: the stored message was strict, so not reached
		return strconv.AppendQuote(b, s)
	}
	return out
}

// Flush writes what is buffered.
func (w *Writer) Flush() error { return w.w.Flush() }

// Record is one event read back.
type Record struct {
	Line   int               // the line it was read from, from 1
	Format Format            // the line's format
	Seq    uint64            // its seq in the store it was exported from; 0 when the line has none
	Time   time.Time         // JSON lines: the event time; CloudEvents: the event's time, if any
	Msg    *protocol.Message // the message, decoded from the bytes as exported (Msg.Raw)
}

// Reader reads events of either format.
type Reader struct {
	r    *bufio.Reader
	line int
	buf  []byte
}

// NewReader returns a Reader of r.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 256<<10)}
}

// Next returns the next event, or io.EOF after the last.
func (r *Reader) Next() (Record, error) {
	for {
		line, err := r.readLine()
		if err != nil {
			return Record{}, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		return DecodeLine(line, r.line)
	}
}

func (r *Reader) readLine() ([]byte, error) {
	r.buf = r.buf[:0]
	for {
		frag, err := r.r.ReadSlice('\n')
		if len(r.buf)+len(frag) > MaxLine {
			r.line++
			return nil, coded.Wrap(ErrRecord, "line "+strconv.Itoa(r.line)+": longer than "+strconv.Itoa(MaxLine)+" bytes", nil)
		}
		r.buf = append(r.buf, frag...)
		switch err {
		case nil:
			r.line++
			return r.buf, nil
		case bufio.ErrBufferFull:
			continue
		case io.EOF:
			if len(r.buf) == 0 {
				return nil, io.EOF
			}
			r.line++
			return r.buf, nil
		default:
			return nil, err
		}
	}
}

// line is the union of both formats' members.
type line struct {
	// JSON lines
	Seq        *uint64        `json:"seq"`
	Message    jsontext.Value `json:"message"`
	MessageB64 *string        `json:"message_base64"`
	// CloudEvents
	SpecVersion *string        `json:"specversion"`
	ID          string         `json:"id"`
	Type        string         `json:"type"`
	ContentType *string        `json:"datacontenttype"`
	Data        jsontext.Value `json:"data"`
	DataB64     *string        `json:"data_base64"`
	ClutchSeq   *uint64        `json:"clutchseq"`
	// both
	Time string `json:"time"`
}

// DecodeLine decodes one line of either format; n is its line number, for
// errors. Bad input gives an error matching ErrRecord, never a panic.
func DecodeLine(b []byte, n int) (Record, error) {
	fail := func(detail string, cause error) (Record, error) {
		return Record{}, coded.Wrap(ErrRecord, "line "+strconv.Itoa(n)+": "+detail, cause)
	}
	var l line
	if err := jsonv2.Unmarshal(b, &l); err != nil {
		return fail(lineProblem(err), nil)
	}
	rec := Record{Line: n}
	var raw []byte
	var err error
	if l.SpecVersion != nil {
		rec.Format = CloudEvents
		if *l.SpecVersion != "1.0" {
			return fail("specversion "+strconv.Quote(*l.SpecVersion)+" (want 1.0)", nil)
		}
		if l.ContentType != nil && *l.ContentType != "application/json" {
			return fail("datacontenttype "+strconv.Quote(*l.ContentType)+" (want application/json)", nil)
		}
		if raw, err = payload(l.Data, l.DataB64, "data"); err != nil {
			return fail(err.Error(), nil)
		}
		if l.ClutchSeq != nil {
			rec.Seq = *l.ClutchSeq
		}
		if l.Time != "" {
			if rec.Time, err = time.Parse(time.RFC3339Nano, l.Time); err != nil {
				return fail("time", err)
			}
		}
	} else {
		if l.Seq != nil {
			rec.Seq = *l.Seq
		}
		if raw, err = payload(l.Message, l.MessageB64, "message"); err != nil {
			return fail(err.Error(), nil)
		}
		if l.Time != "" {
			if rec.Time, err = time.Parse(time.RFC3339Nano, l.Time); err != nil {
				return fail("time", err)
			}
		}
	}
	if rec.Msg, err = protocol.Decode(raw); err != nil {
		return fail("the message", err)
	}
	if rec.Format == CloudEvents {
		if l.ID != rec.Msg.ID {
			return fail("the event id "+strconv.Quote(l.ID)+" is not the message id "+strconv.Quote(rec.Msg.ID), nil)
		}
		if want := TypePrefix + string(rec.Msg.Type); l.Type != want {
			return fail("the event type "+strconv.Quote(l.Type)+" is not "+strconv.Quote(want), nil)
		}
	}
	return rec, nil
}

// lineProblem says in words why a line is not an event object: the
// decoder's own message names Go types.
func lineProblem(err error) string {
	var se *jsonv2.SemanticError
	if errors.As(err, &se) {
		kind := map[jsontext.Kind]string{'n': "null", 'f': "boolean", 't': "boolean", '"': "string", '0': "number",
			'{': "object", '[': "array"}[se.JSONKind]
		if kind == "" {
			kind = "value"
		}
		if se.JSONPointer == "" {
			return "a JSON " + kind + ", not an event object"
		}
		want := "another type"
		if se.GoType != nil {
			switch se.GoType.Kind() {
			case reflect.String:
				want = "a string"
			case reflect.Bool:
				want = "true or false"
			case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint64, reflect.Float64:
				want = "a number"
			case reflect.Struct, reflect.Map:
				want = "an object"
			case reflect.Slice:
				want = "an array"
			}
		}
		return "member " + strings.TrimPrefix(string(se.JSONPointer), "/") + " is a JSON " + kind + ", want " + want
	}
	var syn *jsontext.SyntacticError
	if errors.As(err, &syn) {
		return "not valid JSON: " + strings.TrimPrefix(syn.Error(), "jsontext: ")
	}
	return "not an event object"
}

type fieldError string

func (e fieldError) Error() string { return string(e) }

// payload returns the message bytes of a line: the object as it is, or the
// base64 form decoded.
func payload(v jsontext.Value, b64 *string, name string) ([]byte, error) {
	switch {
	case v != nil && b64 != nil:
		return nil, fieldError("both " + name + " and " + name + "_base64")
	case b64 != nil:
		raw, err := base64.StdEncoding.DecodeString(*b64)
		if err != nil {
			return nil, fieldError(name + "_base64 is not base64")
		}
		return raw, nil
	case v != nil:
		if v.Kind() != '{' {
			return nil, fieldError(name + " is not an object")
		}
		return v, nil // protocol.Decode copies what it keeps
	}
	return nil, fieldError("no " + name)
}
