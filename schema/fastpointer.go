package schema

import (
	"strconv"
	"strings"
)

// pointerPresent reports whether the JSON pointer ptr resolves in payload,
// as resolvePointer does on the decoded payload, reading the bytes. It is
// only called on payloads the fast path accepted, which are well-formed
// JSON with valid UTF-8. ok is false when it cannot tell (a member name
// with an escape encoding/json would replace by U+FFFD).
func pointerPresent(payload []byte, ptr string) (present, ok bool) {
	if ptr == "" {
		return true, true
	}
	if ptr[0] != '/' {
		return false, true
	}
	return walkPresent(payload, ptr[1:], true)
}

// requiredPresent reports whether an expects.required entry (see
// requiredPointer) is present in payload, like pointerPresent.
func requiredPresent(payload []byte, name string) (present, ok bool) {
	if name != "" && name[0] == '/' {
		return pointerPresent(payload, name)
	}
	return walkPresent(payload, name, false)
}

// walkPresent follows path: "/"-separated escaped tokens when pointer is
// true, else one member name.
func walkPresent(payload []byte, path string, pointer bool) (present, ok bool) {
	r := fastRun{data: payload}
	defer func() {
		if recover() != nil {
			present, ok = false, false
		}
		r.release()
	}()
	cur := skipWS(payload, 0)
	for more := true; more; {
		tok := path
		if pointer {
			var rest string
			tok, rest, more = strings.Cut(path, "/")
			path = rest
			if strings.Contains(tok, "~") {
				tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
			}
		} else {
			more = false
		}
		var found bool
		if cur >= len(payload) {
			return false, false
		}
		switch payload[cur] {
		case '{':
			cur, found, ok = r.member(cur, tok)
		case '[':
			cur, found, ok = r.element(cur, tok)
		default:
			return false, true
		}
		if !ok || !found {
			return false, ok
		}
	}
	return true, true
}

// member finds the value of the last member named name of the object at
// d[i] (encoding/json keeps the last of duplicates).
func (r *fastRun) member(i int, name string) (at int, found, ok bool) {
	d := r.data
	i = skipWS(d, i+1)
	for i < len(d) && d[i] == '"' {
		ke, esc, sok := r.scanString(i)
		if !sok {
			return 0, false, false
		}
		key := d[i+1 : ke-1]
		if esc {
			sc := r.scratch()
			if sc.buf, sok = unescape(sc.buf[:0], key); !sok {
				return 0, false, false
			}
			key = sc.buf
		}
		i = skipWS(d, skipWS(d, ke)+1) // past ':'
		if string(key) == name {
			at, found = i, true
		}
		end, res := r.skip(i, 0)
		if res != fastValid {
			return 0, false, false
		}
		i = skipWS(d, end)
		if i < len(d) && d[i] == ',' {
			i = skipWS(d, i+1)
		}
	}
	return at, found, true
}

// element finds the element of the array at d[i] that tok indexes, with
// resolvePointer's rules for indexes.
func (r *fastRun) element(i int, tok string) (at int, found, ok bool) {
	n, err := strconv.Atoi(tok)
	if err != nil || n < 0 || (len(tok) > 1 && tok[0] == '0') {
		return 0, false, true
	}
	d := r.data
	i = skipWS(d, i+1)
	for k := 0; i < len(d) && d[i] != ']'; k++ {
		if k == n {
			return i, true, true
		}
		end, res := r.skip(i, 0)
		if res != fastValid {
			return 0, false, false
		}
		i = skipWS(d, end)
		if i < len(d) && d[i] == ',' {
			i = skipWS(d, i+1)
		}
	}
	return 0, false, true
}
