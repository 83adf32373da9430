package telemetry

// scanToolFields reads the members of f from payload in one pass over
// its bytes, when payload is a JSON object whose strings are ASCII
// without escapes, with no details member and no object of more than
// maxScanNames members — what tool payloads usually are. It reports false,
// having set nothing, for any other input, which the decoder then reads
// (readToolFields). It reads what the decoder would read: a name
// repeated in an object, invalid JSON or trailing bytes make it report
// false.
func scanToolFields(p []byte, f *toolFields) bool {
	g := *f
	i := skipSpace(p, 0)
	if i >= len(p) || p[i] != '{' {
		return false
	}
	var names [maxScanNames][]byte
	n := 0
	i = skipSpace(p, i+1)
	if i < len(p) && p[i] == '}' {
		return skipSpace(p, i+1) == len(p)
	}
	for {
		name, j, ok := scanString(p, i)
		if !ok || n == len(names) || repeated(names[:n], name) {
			return false
		}
		names[n] = name
		n++
		i = skipSpace(p, j)
		if i >= len(p) || p[i] != ':' {
			return false
		}
		i = skipSpace(p, i+1)
		var dst *string
		switch string(name) {
		case "tool":
			dst = &g.tool
		case "name":
			dst = &g.name
		case "call_id":
			dst = &g.callID
		case "code":
			dst = &g.code
		case "message":
			dst = &g.message
		case "details":
			return false
		}
		if dst != nil && i < len(p) && p[i] == '"' {
			v, j, ok := scanString(p, i)
			if !ok {
				return false
			}
			*dst, i = string(v), j
		} else if i, ok = skipValue(p, i, 0); !ok {
			return false // a member of another type keeps f's value, as in the decoder
		}
		var more bool
		if i, more, ok = next(p, i, '}'); !ok {
			return false
		}
		if !more {
			if skipSpace(p, i) != len(p) {
				return false
			}
			*f = g
			return true
		}
	}
}

// next reads what follows a member or an element ending before p[i]: after
// ',' it returns the index of the next one and more; after end (the
// closing '}' or ']') the index after it.
func next(p []byte, i int, end byte) (j int, more, ok bool) {
	i = skipSpace(p, i)
	if i >= len(p) {
		return 0, false, false
	}
	switch p[i] {
	case ',':
		return skipSpace(p, i+1), true, true
	case end:
		return i + 1, false, true
	}
	return 0, false, false
}

// maxScanNames bounds the members of an object scanToolFields reads, and
// maxScanDepth the nesting of the values it skips.
const (
	maxScanNames = 16
	maxScanDepth = 32
)

// repeated reports whether name is among names.
func repeated(names [][]byte, name []byte) bool {
	for _, n := range names {
		if string(n) == string(name) {
			return true
		}
	}
	return false
}

func skipSpace(p []byte, i int) int {
	for i < len(p) && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r') {
		i++
	}
	return i
}

// scanString reads the string at p[i], ASCII without escapes: its
// contents and the index after it.
func scanString(p []byte, i int) ([]byte, int, bool) {
	if i >= len(p) || p[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(p); j++ {
		switch c := p[j]; {
		case c == '"':
			return p[i+1 : j], j + 1, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// skipValue returns the index after the JSON value at p[i].
func skipValue(p []byte, i, depth int) (int, bool) {
	if i >= len(p) || depth > maxScanDepth {
		return 0, false
	}
	switch c := p[i]; {
	case c == '"':
		_, j, ok := scanString(p, i)
		return j, ok
	case c == '{':
		var names [maxScanNames][]byte
		n := 0
		i = skipSpace(p, i+1)
		if i < len(p) && p[i] == '}' {
			return i + 1, true
		}
		for {
			name, j, ok := scanString(p, i)
			if !ok || n == len(names) || repeated(names[:n], name) {
				return 0, false
			}
			names[n] = name
			n++
			i = skipSpace(p, j)
			if i >= len(p) || p[i] != ':' {
				return 0, false
			}
			if i, ok = skipValue(p, skipSpace(p, i+1), depth+1); !ok {
				return 0, false
			}
			var more bool
			if i, more, ok = next(p, i, '}'); !ok || !more {
				return i, ok
			}
		}
	case c == '[':
		i = skipSpace(p, i+1)
		if i < len(p) && p[i] == ']' {
			return i + 1, true
		}
		for {
			var ok, more bool
			if i, ok = skipValue(p, i, depth+1); !ok {
				return 0, false
			}
			if i, more, ok = next(p, i, ']'); !ok || !more {
				return i, ok
			}
		}
	case c == 't':
		return literal(p, i, "true")
	case c == 'f':
		return literal(p, i, "false")
	case c == 'n':
		return literal(p, i, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		return skipNumber(p, i)
	}
	return 0, false
}

func literal(p []byte, i int, lit string) (int, bool) {
	if len(p)-i >= len(lit) && string(p[i:i+len(lit)]) == lit {
		return i + len(lit), true
	}
	return 0, false
}

// skipNumber returns the index after the JSON number at p[i]
// (-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?).
func skipNumber(p []byte, i int) (int, bool) {
	digits := func(i int) int {
		for i < len(p) && p[i] >= '0' && p[i] <= '9' {
			i++
		}
		return i
	}
	if p[i] == '-' {
		i++
	}
	switch {
	case i < len(p) && p[i] == '0':
		i++
	case i < len(p) && p[i] >= '1' && p[i] <= '9':
		i = digits(i + 1)
	default:
		return 0, false
	}
	if i < len(p) && p[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(p) && (p[i] == 'e' || p[i] == 'E') {
		i++
		if i < len(p) && (p[i] == '+' || p[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}
