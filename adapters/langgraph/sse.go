package langgraph

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"

	"github.com/clutchprotocol/clutch/protocol"
)

// Frame is one event of an Agent Server SSE stream (or one line of the
// SDK's parsed form {"event", "data", "id"}): Event is the stream mode,
// followed by "|ns1|ns2…" for subgraph namespaces; Data the raw JSON of
// its data lines; ID its "id:" line (the per-run event sequence), "" if none.
type Frame struct {
	Event string
	Data  []byte
	ID    string
}

// Mode returns the stream mode of the frame: Event without its namespace.
func (f Frame) Mode() string {
	mode, _, _ := strings.Cut(f.Event, "|")
	return mode
}

// Namespace returns the subgraph namespace of the frame, outermost first
// ("node:task_id" elements), nil at the root.
func (f Frame) Namespace() []string {
	_, ns, ok := strings.Cut(f.Event, "|")
	if !ok {
		return nil
	}
	return strings.Split(ns, "|")
}

// maxLine bounds one SSE line.
const maxLine = protocol.DefaultMaxBytes

// sseReader reads frames from an SSE byte stream (the WHATWG
// text/event-stream rules the Agent Server and its SDKs follow: "field:
// value" lines, one optional space after the colon, comment lines start
// with ":", a blank line ends a frame, several data lines are joined by
// "\n"). Fields other than event, data, id and retry are refused: the
// Agent Server sends none, and input that is not SSE must not pass as an
// empty stream.
type sseReader struct {
	br     *bufio.Reader
	line   int
	lastID string
}

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{br: bufio.NewReaderSize(r, 4<<10)}
}

// errBadSSE is the cause of a refused SSE line.
var errBadSSE = errors.New("langgraph: not an SSE line")

// next returns the next frame, io.EOF at the end of the stream. A frame
// cut short by the end of the stream is returned when it has data (the
// WHATWG rules would drop it; the Agent Server always ends frames, so a
// cut one is worth keeping, and the translator's caller decides).
func (s *sseReader) next() (Frame, error) {
	var f Frame
	var data bytes.Buffer
	hasData := false
	for {
		line, err := s.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && hasData {
				f.Data = data.Bytes()
				return f, nil
			}
			return Frame{}, err
		}
		s.line++
		if len(line) == 0 {
			if hasData {
				f.Data = data.Bytes()
				f.ID = s.lastID
				return f, nil
			}
			// A frame without data is not dispatched (WHATWG), but its id
			// still counts.
			f = Frame{}
			continue
		}
		if line[0] == ':' {
			continue // comment: ": heartbeat"
		}
		name, value, _ := bytes.Cut(line, []byte{':'})
		value = bytes.TrimPrefix(value, []byte{' '})
		switch string(name) {
		case "event":
			f.Event = string(value)
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			data.Write(value)
			hasData = true
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				s.lastID = string(value)
				f.ID = s.lastID
			}
		case "retry":
		default:
			return Frame{}, inErr(protocol.CodeInvalidField, "", "line "+itoa(s.line)+" is not an SSE field (event, data, id, retry) or comment", errBadSSE)
		}
	}
}

func (s *sseReader) readLine() ([]byte, error) {
	var buf []byte
	for {
		chunk, isPrefix, err := s.br.ReadLine()
		if err != nil {
			if len(buf) > 0 && errors.Is(err, io.EOF) {
				return buf, nil
			}
			return nil, err
		}
		if !isPrefix && buf == nil {
			return chunk, nil
		}
		buf = append(buf, chunk...)
		if len(buf) > maxLine {
			return nil, inErr(protocol.CodeTooLarge, "", "an SSE line is over "+itoa(maxLine)+" bytes", nil)
		}
		if !isPrefix {
			return buf, nil
		}
	}
}
