package protocol

import (
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// scanner is the strict JSON reader under Decode. It works on one owned copy
// of the input (data) and a string copy of it (s), so strings without escapes
// become substrings of s and cost no allocation each. It enforces RFC 8259
// syntax plus the I-JSON rules of RFC 7493 that signing relies on: valid
// UTF-8, no lone surrogates in escapes, no duplicate keys in any object.
type scanner struct {
	data     []byte
	s        string
	pos      int
	maxDepth int
	// borrow makes sub return strings that share data's memory, for a
	// scan that drops its keys before returning (checkJSON: keys are only
	// compared, and copied into errors).
	borrow bool
}

func (sc *scanner) err(code Code, format string, args ...any) *Error {
	return newError(code, "", sc.pos, format, args...)
}

func (sc *scanner) ws() {
	for sc.pos < len(sc.data) {
		switch sc.data[sc.pos] {
		case ' ', '\t', '\n', '\r':
			sc.pos++
		default:
			return
		}
	}
}

// peek returns the next non-space byte without consuming it, or 0 at EOF.
func (sc *scanner) peek() byte {
	sc.ws()
	if sc.pos < len(sc.data) {
		return sc.data[sc.pos]
	}
	return 0
}

func (sc *scanner) expect(c byte) *Error {
	if sc.peek() != c {
		if sc.pos >= len(sc.data) {
			return sc.err(CodeInvalidJSON, "unexpected end of input, want %q", c)
		}
		return sc.err(CodeInvalidJSON, "unexpected %q, want %q", sc.data[sc.pos], c)
	}
	sc.pos++
	return nil
}

// kind returns the JSON kind of the next value for WRONG_TYPE messages.
func kindOf(c byte) string {
	switch c {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	case 0:
		return "end of input"
	}
	if c == '-' || c >= '0' && c <= '9' {
		return "number"
	}
	return "invalid JSON"
}

// wrongType reports a value of the wrong kind; invalid JSON wins over it.
func (sc *scanner) wrongType(want string) *Error {
	c := sc.peek()
	k := kindOf(c)
	if k == "invalid JSON" || k == "end of input" {
		return sc.err(CodeInvalidJSON, "unexpected %s", k)
	}
	return sc.err(CodeWrongType, "want %s, got %s", want, k)
}

// str reads a string value and returns it. Strings without escapes are
// substrings of sc.s.
func (sc *scanner) str() (string, *Error) {
	if sc.peek() != '"' {
		return "", sc.wrongType("string")
	}
	a, b, esc, err := sc.strRange()
	if err != nil {
		return "", err
	}
	if !esc {
		return sc.sub(a, b), nil
	}
	return unescape(sc.data[a:b]), nil
}

// sub returns data[a:b] as a string: a substring of s when the scanner has
// one, else a copy.
func (sc *scanner) sub(a, b int) string {
	if sc.s != "" {
		return sc.s[a:b]
	}
	if sc.borrow && b > a {
		return unsafe.String(&sc.data[a], b-a)
	}
	return string(sc.data[a:b])
}

// skipPlainWords returns the index of the first byte of d from i on that
// is not plain (see plainASCII), reading 8 bytes at a time; it stops
// earlier, at the first index fewer than 8 bytes before the end, when the
// bytes up to there are all plain. It is skipPlain's loop over bytes: one
// function generic over string and []byte would not be inlined into
// strRange.
func skipPlainWords(d []byte, i int) int {
	for i+8 <= len(d) {
		if m := notPlain(binary.LittleEndian.Uint64(d[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
		i += 8
	}
	return i
}

// strRange consumes a string starting at the opening quote and returns the
// range of its content and whether it holds escapes.
func (sc *scanner) strRange() (a, b int, esc bool, e *Error) {
	sc.pos++ // opening quote
	a = sc.pos
	d := sc.data
	for i := sc.pos; i < len(d); {
		i = skipPlainWords(d, i)
		if i >= len(d) {
			break
		}
		c := d[i]
		if plainASCII[c] {
			i++
			continue
		}
		switch {
		case c == '"':
			sc.pos = i + 1
			return a, i, esc, nil
		case c == '\\':
			esc = true
			if i+1 >= len(d) {
				sc.pos = i
				return 0, 0, false, sc.err(CodeInvalidJSON, "unterminated string")
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				r, ok := hex4(d, i+2)
				if !ok {
					sc.pos = i
					return 0, 0, false, sc.err(CodeInvalidJSON, "invalid \\u escape")
				}
				i += 6
				if utf16.IsSurrogate(r) {
					// A high surrogate must be followed by an escaped low one.
					r2, ok2 := rune(0), false
					if r < 0xDC00 && i+1 < len(d) && d[i] == '\\' && d[i+1] == 'u' {
						r2, ok2 = hex4(d, i+2)
					}
					if !ok2 || r2 < 0xDC00 || r2 > 0xDFFF {
						sc.pos = i - 6
						return 0, 0, false, sc.err(CodeInvalidUTF8, "lone surrogate in \\u escape")
					}
					i += 6
				}
			default:
				sc.pos = i
				return 0, 0, false, sc.err(CodeInvalidJSON, "invalid escape \\%c", d[i+1])
			}
		case c < 0x20:
			sc.pos = i
			return 0, 0, false, sc.err(CodeInvalidJSON, "control character in string")
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(d[i:])
			if r == utf8.RuneError && size == 1 {
				sc.pos = i
				return 0, 0, false, sc.err(CodeInvalidUTF8, "invalid UTF-8 in string")
			}
			i += size
		}
	}
	sc.pos = len(d)
	return 0, 0, false, sc.err(CodeInvalidJSON, "unterminated string")
}

// plainASCII marks the bytes a string may hold as they are: printable ASCII
// other than '"' and '\\'.
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func hex4(d []byte, i int) (rune, bool) {
	if i+4 > len(d) {
		return 0, false
	}
	var r rune
	for _, c := range d[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// unescape decodes the content of a string already checked by strRange.
func unescape(b []byte) string {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		c := b[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		switch b[i+1] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, _ := hex4(b, i+2)
			if utf16.IsSurrogate(r) {
				r2, _ := hex4(b, i+8)
				r = utf16.DecodeRune(r, r2)
				i += 6
			}
			out = utf8.AppendRune(out, r)
			i += 6
			continue
		default: // '"', '\\', '/'
			out = append(out, b[i+1])
		}
		i += 2
	}
	return string(out)
}

// number consumes a JSON number and returns its range.
func (sc *scanner) number() (a, b int, e *Error) {
	d := sc.data
	i := sc.pos
	a = i
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		sc.pos = i
		return 0, 0, sc.err(CodeInvalidJSON, "invalid number")
	}
	if i < len(d) && d[i] == '.' {
		i++
		j := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		if i == j {
			sc.pos = i
			return 0, 0, sc.err(CodeInvalidJSON, "invalid number")
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		j := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		if i == j {
			sc.pos = i
			return 0, 0, sc.err(CodeInvalidJSON, "invalid number")
		}
	}
	sc.pos = i
	return a, i, nil
}

// integer reads a JSON number that must be an integer in int64 range.
func (sc *scanner) integer() (int64, *Error) {
	c := sc.peek()
	if c != '-' && (c < '0' || c > '9') {
		return 0, sc.wrongType("integer")
	}
	start := sc.pos
	a, b, err := sc.number()
	if err != nil {
		return 0, err
	}
	n, perr := strconv.ParseInt(string(sc.data[a:b]), 10, 64)
	if perr != nil {
		sc.pos = start
		return 0, sc.err(CodeWrongType, "want integer, got %s", sc.data[a:b])
	}
	return n, nil
}

func (sc *scanner) literal(lit string) *Error {
	if len(sc.data)-sc.pos < len(lit) || string(sc.data[sc.pos:sc.pos+len(lit)]) != lit {
		return sc.err(CodeInvalidJSON, "invalid literal")
	}
	sc.pos += len(lit)
	return nil
}

// null consumes a null literal if one is next.
func (sc *scanner) null() bool {
	if sc.peek() == 'n' && sc.literal("null") == nil {
		return true
	}
	return false
}

func (sc *scanner) boolean() (bool, *Error) {
	switch sc.peek() {
	case 't':
		return true, sc.literal("true")
	case 'f':
		return false, sc.literal("false")
	}
	return false, sc.wrongType("boolean")
}

// keySet detects duplicate keys in one object without allocating for the
// usual small object.
type keySet struct {
	small [16]string
	n     int
	big   map[string]struct{}
}

func (k *keySet) add(s string) bool {
	if k.big != nil {
		if _, dup := k.big[s]; dup {
			return false
		}
		k.big[s] = struct{}{}
		return true
	}
	for _, p := range k.small[:k.n] {
		if p == s {
			return false
		}
	}
	if k.n < len(k.small) {
		k.small[k.n] = s
		k.n++
		return true
	}
	k.big = make(map[string]struct{}, 2*len(k.small))
	for _, p := range k.small {
		k.big[p] = struct{}{}
	}
	k.big[s] = struct{}{}
	return true
}

// key reads an object key and the colon after it.
func (sc *scanner) key() (string, *Error) {
	if sc.peek() != '"' {
		return "", sc.err(CodeInvalidJSON, "want object key")
	}
	k, err := sc.str()
	if err != nil {
		return "", err
	}
	if err := sc.expect(':'); err != nil {
		return "", err
	}
	return k, nil
}

// object iterates the members of an object, calling member with the key
// once the scanner stands on its value. It rejects duplicate keys.
func (sc *scanner) object(member func(key string) *Error) *Error {
	return sc.objectDedup(member, true)
}

// objectDedup is object; with dedup false the caller detects duplicate keys
// itself (the envelope's top level does, with a bit set).
func (sc *scanner) objectDedup(member func(key string) *Error, dedup bool) *Error {
	if err := sc.expect('{'); err != nil {
		return err
	}
	var ks keySet
	if sc.peek() == '}' {
		sc.pos++
		return nil
	}
	for {
		keyPos := sc.pos
		k, err := sc.key()
		if err != nil {
			return err
		}
		if dedup && !ks.add(k) {
			sc.pos = keyPos
			e := sc.err(CodeDuplicateKey, "duplicate key %q", k)
			e.Path = "/" + escapePointer(k)
			return e
		}
		sc.ws()
		if err := member(k); err != nil {
			return err
		}
		switch sc.peek() {
		case ',':
			sc.pos++
		case '}':
			sc.pos++
			return nil
		default:
			return sc.err(CodeInvalidJSON, "want ',' or '}' after object member")
		}
	}
}

// array iterates the elements of an array.
func (sc *scanner) array(elem func(i int) *Error) *Error {
	if err := sc.expect('['); err != nil {
		return err
	}
	if sc.peek() == ']' {
		sc.pos++
		return nil
	}
	for i := 0; ; i++ {
		sc.ws()
		if err := elem(i); err != nil {
			return err
		}
		switch sc.peek() {
		case ',':
			sc.pos++
		case ']':
			sc.pos++
			return nil
		default:
			return sc.err(CodeInvalidJSON, "want ',' or ']' after array element")
		}
	}
}

// skip validates one value of any kind and returns its range.
func (sc *scanner) skip(depth int) (a, b int, e *Error) {
	c := sc.peek()
	a = sc.pos
	switch {
	case c == '{' || c == '[':
		if depth >= sc.maxDepth {
			return 0, 0, sc.err(CodeTooDeep, "nested deeper than %d", sc.maxDepth)
		}
		if c == '{' {
			e = sc.object(func(k string) *Error {
				_, _, err := sc.skip(depth + 1)
				return prefix(err, k)
			})
		} else {
			e = sc.array(func(i int) *Error {
				_, _, err := sc.skip(depth + 1)
				return prefixIndex(err, i)
			})
		}
	case c == '"':
		_, _, _, e = sc.strRange()
	case c == 't':
		e = sc.literal("true")
	case c == 'f':
		e = sc.literal("false")
	case c == 'n':
		e = sc.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		_, _, e = sc.number()
	case c == 0 && sc.pos >= len(sc.data):
		e = sc.err(CodeInvalidJSON, "unexpected end of input")
	default:
		e = sc.err(CodeInvalidJSON, "unexpected %q", c)
	}
	return a, sc.pos, e
}

// anyValue reads a value into the Go form Meta uses: map[string]any, []any,
// string, json.Number, bool or nil.
func (sc *scanner) anyValue(depth int) (any, *Error) {
	switch c := sc.peek(); {
	case c == '{':
		if depth >= sc.maxDepth {
			return nil, sc.err(CodeTooDeep, "nested deeper than %d", sc.maxDepth)
		}
		m := map[string]any{}
		err := sc.object(func(k string) *Error {
			v, err := sc.anyValue(depth + 1)
			m[k] = v
			return prefix(err, k)
		})
		return m, err
	case c == '[':
		if depth >= sc.maxDepth {
			return nil, sc.err(CodeTooDeep, "nested deeper than %d", sc.maxDepth)
		}
		// Elements gather on the stack; the list gets one allocation of
		// its exact size (JSON arrays are mostly short).
		var few [8]any
		l := few[:0]
		err := sc.array(func(i int) *Error {
			v, err := sc.anyValue(depth + 1)
			l = append(l, v)
			return prefixIndex(err, i)
		})
		return append(make([]any, 0, len(l)), l...), err
	case c == '"':
		return sc.str()
	case c == 't' || c == 'f':
		return sc.boolean()
	case c == 'n':
		return nil, sc.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		a, b, err := sc.number()
		return json.Number(sc.sub(a, b)), err
	case c == 0 && sc.pos >= len(sc.data):
		return nil, sc.err(CodeInvalidJSON, "unexpected end of input")
	default:
		return nil, sc.err(CodeInvalidJSON, "unexpected %q", c)
	}
}

// prefix puts a member name in front of an error's path as it travels up.
func prefix(e *Error, key string) *Error {
	if e != nil {
		e.Path = "/" + escapePointer(key) + e.Path
	}
	return e
}

func prefixIndex(e *Error, i int) *Error {
	if e != nil {
		e.Path = "/" + strconv.Itoa(i) + e.Path
	}
	return e
}

// escapePointer escapes a key for a JSON pointer (RFC 6901).
func escapePointer(k string) string {
	for i := 0; i < len(k); i++ {
		if k[i] == '~' || k[i] == '/' {
			out := make([]byte, 0, len(k)+4)
			for j := 0; j < len(k); j++ {
				switch k[j] {
				case '~':
					out = append(out, '~', '0')
				case '/':
					out = append(out, '~', '1')
				default:
					out = append(out, k[j])
				}
			}
			return string(out)
		}
	}
	return k
}

// checkJSON reports whether b is exactly one strict JSON value.
func checkJSON(b []byte, path string) error {
	if len(b) == 0 {
		return &Error{Code: CodeInvalidJSON, Path: path, Offset: 0, Detail: "empty JSON"}
	}
	// skip reads only data, and the keys it compares for duplicates need
	// not outlive it: no string copy is needed here.
	sc := scanner{data: b, maxDepth: DefaultMaxDepth, borrow: true}
	if _, _, err := sc.skip(0); err != nil {
		err.Path = path + err.Path
		return err
	}
	if sc.peek() != 0 || sc.pos < len(b) {
		return &Error{Code: CodeInvalidJSON, Path: path, Offset: int64(sc.pos), Detail: "data after the JSON value"}
	}
	return nil
}
