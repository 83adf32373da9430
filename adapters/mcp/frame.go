package mcp

import (
	"bufio"
	"bytes"
	"io"
	"strconv"
)

// The JSON-RPC error a frameFilter puts in place of a frame over the size
// limit. The code is in JSON-RPC's implementation-defined server range; the
// data member is what classify recognises.
const (
	codeTooLarge   = -32099
	tooLargeMarker = "clutch.too_large"
)

// tooLargeFrame returns the JSON-RPC error response (one line, with its
// newline) that replaces an oversized response frame, or nil when the id
// is unknown (the frame is then dropped).
func tooLargeFrame(prefix string, id []byte, n, limit int) []byte {
	if len(id) == 0 {
		return nil
	}
	b := make([]byte, 0, 256)
	b = append(b, prefix...)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, codeTooLarge, 10)
	b = append(b, `,"message":"result of `...)
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, ` bytes exceeds the limit of `...)
	b = strconv.AppendInt(b, int64(limit), 10)
	b = append(b, ` bytes","data":{"`...)
	b = append(b, tooLargeMarker...)
	b = append(b, `":true,"bytes":`...)
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, `,"limit":`...)
	b = strconv.AppendInt(b, int64(limit), 10)
	b = append(b, "}}}\n"...)
	return b
}

// frameFilter passes newline-delimited frames through, replacing any line
// longer than limit by a small JSON-RPC error response for the same id
// (tooLargeFrame), so that one oversized tool result is refused with
// TOO_LARGE instead of making the SDK's reader give up on the whole
// connection (research/mcp.md §2: a 17 MiB frame on stdio closes it).
//
// In sse mode the frames are server-sent-event lines and only "data:"
// lines carry JSON; an oversized one becomes "data: <error>". Memory use is
// bounded by limit plus the reader's buffer.
type frameFilter struct {
	r     *bufio.Reader
	c     io.Closer
	limit int
	sse   bool
	buf   []byte // the line being assembled
	out   []byte // bytes ready for Read
	err   error  // the error to return once out is drained
}

func newFrameFilter(r io.ReadCloser, limit int, sse bool) *frameFilter {
	return &frameFilter{r: bufio.NewReaderSize(r, 64<<10), c: r, limit: limit, sse: sse}
}

func (f *frameFilter) Read(p []byte) (int, error) {
	for len(f.out) == 0 {
		if f.err != nil {
			return 0, f.err
		}
		f.fill()
	}
	n := copy(p, f.out)
	f.out = f.out[n:]
	return n, nil
}

func (f *frameFilter) Close() error { return f.c.Close() }

// fill reads the next line into out (or its replacement).
func (f *frameFilter) fill() {
	f.buf = f.buf[:0]
	for {
		chunk, err := f.r.ReadSlice('\n')
		if len(f.buf)+len(chunk) > f.limit {
			f.oversize(chunk, err)
			return
		}
		if err == nil && len(f.buf) == 0 {
			// The common case: a whole line in the reader's buffer. It
			// stays valid until the next read, after out is drained.
			f.out = chunk
			return
		}
		f.buf = append(f.buf, chunk...)
		switch err {
		case nil:
			f.out = f.buf
			return
		case bufio.ErrBufferFull:
			continue
		default:
			f.out, f.err = f.buf, err
			return
		}
	}
}

// oversize discards the rest of an oversized line, scanning it for the
// top-level "id", and queues its replacement.
func (f *frameFilter) oversize(chunk []byte, err error) {
	var sc idScanner
	n := len(f.buf) + len(chunk)
	prefix := ""
	first := f.buf
	if len(first) == 0 {
		first = chunk
	}
	skip := 0
	if f.sse {
		if !bytes.HasPrefix(first, []byte("data:")) {
			sc.done = true // not JSON: drop the line
		} else {
			prefix, skip = "data: ", len("data:")
		}
	}
	if len(f.buf) > 0 {
		sc.feed(f.buf[min(skip, len(f.buf)):])
		skip = max(0, skip-len(f.buf))
	}
	sc.feed(chunk[min(skip, len(chunk)):])
	for err == bufio.ErrBufferFull {
		chunk, err = f.r.ReadSlice('\n')
		n += len(chunk)
		sc.feed(chunk)
	}
	if cap(f.buf) > 1<<20 {
		f.buf = nil // do not keep a huge buffer for later lines
	}
	if line := tooLargeFrame(prefix, sc.id(), n, f.limit); line != nil {
		f.out = line
	} else if f.sse {
		f.out = []byte(":\n") // an SSE comment keeps the event framing
	}
	if err != nil {
		f.err = err
	}
}

// idScanner finds the value of the top-level "id" member of a JSON object
// fed to it in pieces, without holding the document: it tracks nesting and
// strings, and keeps only the keys and the id value of the top level.
type idScanner struct {
	depth    int
	inStr    bool
	esc      bool
	atKey    bool   // at depth 1, the next string is a key
	key      []byte // the top-level key being read (capped)
	keyLong  bool
	idNext   bool // the last top-level key was "id" and its value comes next
	inValue  bool // reading the id value
	value    []byte
	found    []byte
	done     bool
	badValue bool
}

const maxIDBytes = 256

func (s *idScanner) id() []byte {
	if s.found == nil && s.inValue && !s.badValue && len(s.value) > 0 && s.value[0] != '"' {
		// A number at the very end of the input.
		s.finishValue()
	}
	return s.found
}

func (s *idScanner) finishValue() {
	s.inValue = false
	v := bytes.TrimSpace(s.value)
	if s.badValue || len(v) == 0 || !validID(v) {
		s.value = s.value[:0]
		return
	}
	s.found = append([]byte(nil), v...)
	s.done = true
}

// validID accepts a JSON-RPC id: a string or an integer.
func validID(v []byte) bool {
	if v[0] == '"' {
		return len(v) >= 2 && v[len(v)-1] == '"'
	}
	for i, c := range v {
		if !(c >= '0' && c <= '9' || c == '-' && i == 0) {
			return false
		}
	}
	return len(v) > 0 && !(len(v) == 1 && v[0] == '-')
}

func (s *idScanner) feed(p []byte) {
	for i := 0; i < len(p) && !s.done; i++ {
		c := p[i]
		if s.inValue {
			if len(s.value) >= maxIDBytes {
				s.badValue = true
			}
			if len(s.value) > 0 && s.value[0] == '"' {
				if !s.badValue {
					s.value = append(s.value, c)
				}
				if s.esc {
					s.esc = false
					continue
				}
				switch c {
				case '\\':
					s.esc = true
				case '"':
					s.inValue = false
					s.inStr = false
					if !s.badValue {
						s.found = append([]byte(nil), s.value...)
						s.done = true
					}
					s.value = s.value[:0]
				}
				continue
			}
			switch c {
			case ' ', '\t', '\r', '\n':
				if len(s.value) == 0 {
					continue
				}
				s.finishValue()
			case ',', '}':
				s.finishValue()
				if c == '}' {
					s.depth--
				} else {
					s.atKey = true
				}
			case '"':
				if len(s.value) == 0 {
					s.value = append(s.value, c)
					s.inStr = true
					continue
				}
				s.badValue = true
			case '{', '[':
				s.inValue = false
				s.badValue = false
				s.value = s.value[:0]
				s.depth++
			default:
				if !s.badValue {
					s.value = append(s.value, c)
				}
			}
			continue
		}
		if s.inStr {
			if s.depth == 1 && s.atKey {
				if len(s.key) < 8 {
					s.key = append(s.key, c)
				} else {
					s.keyLong = true
				}
			}
			if s.esc {
				s.esc = false
				continue
			}
			switch c {
			case '\\':
				s.esc = true
			case '"':
				s.inStr = false
				if s.depth == 1 && s.atKey {
					k := s.key[:len(s.key)-1] // without the closing quote
					s.idNext = !s.keyLong && string(k) == "id"
					s.atKey = false
					s.key, s.keyLong = s.key[:0], false
				}
			}
			continue
		}
		switch c {
		case '"':
			s.inStr = true
		case '{', '[':
			s.depth++
			if s.depth == 1 && c == '{' {
				s.atKey = true
			}
		case '}', ']':
			s.depth--
		case ',':
			if s.depth == 1 {
				s.atKey = true
			}
		case ':':
			if s.depth == 1 && s.idNext {
				s.idNext = false
				s.inValue = true
				s.value = s.value[:0]
				s.badValue = false
			}
		}
	}
}
