package protocol

// validJSON reports whether b is exactly one strict JSON value that
// checkJSON accepts, in one loop: no closures, no per-object key set to
// clear, keys compared as bytes. It answers true only when sure; false
// means "not sure" (the input is invalid, or a key holds an escape, or an
// object has many keys, or the nesting is deep), and checkJSON then runs
// the scanner, which decides and builds the error. FuzzValidJSON checks
// that it never accepts what the scanner refuses.
func validJSON(b []byte) bool {
	// Each open container is -1 for an array and, for an object, where
	// its keys start in keys.
	var stack [DefaultMaxDepth]int32
	var keys [64][2]int32 // key ranges of the open objects
	if len(b) > 1<<31-1 {
		return false
	}
	depth, nkeys := 0, 0
	sc := scanner{data: b}
	i := 0
	var top int32
value:
	i = skipWS(b, i)
	if i >= len(b) {
		return false
	}
	switch c := b[i]; {
	case c == '{' || c == '[':
		if depth >= len(stack) {
			return false
		}
		stack[depth] = -1
		if c == '{' {
			stack[depth] = int32(nkeys)
		}
		depth++
		i = skipWS(b, i+1)
		if i >= len(b) {
			return false
		}
		if c == '[' {
			if b[i] == ']' {
				i++
				depth--
				goto next
			}
			goto value
		}
		if b[i] == '}' {
			i++
			depth--
			goto next
		}
		goto key
	case c == '"':
		sc.pos = i
		if _, _, _, err := sc.strRange(); err != nil {
			return false
		}
		i = sc.pos
	case c == 't':
		if !hasLiteral(b, i, "true") {
			return false
		}
		i += 4
	case c == 'f':
		if !hasLiteral(b, i, "false") {
			return false
		}
		i += 5
	case c == 'n':
		if !hasLiteral(b, i, "null") {
			return false
		}
		i += 4
	case c == '-' || c >= '0' && c <= '9':
		sc.pos = i
		if _, _, err := sc.number(); err != nil {
			return false
		}
		i = sc.pos
	default:
		return false
	}
next: // after a value: the end, or the next member or element
	i = skipWS(b, i)
	if depth == 0 {
		return i == len(b)
	}
	if i >= len(b) {
		return false
	}
	top = stack[depth-1]
	switch b[i] {
	case ',':
		i = skipWS(b, i+1)
		if top >= 0 {
			goto key
		}
		goto value
	case '}':
		if top < 0 {
			return false
		}
		nkeys = int(top)
	case ']':
		if top >= 0 {
			return false
		}
	default:
		return false
	}
	i++
	depth--
	goto next
key: // i is at the key of an object's member
	if i >= len(b) || b[i] != '"' {
		return false
	}
	{
		sc.pos = i
		ka, kb, esc, err := sc.strRange()
		if err != nil || esc || nkeys == len(keys) {
			return false // an escaped key is compared unescaped: the scanner does it
		}
		k := b[ka:kb]
		for _, r := range keys[stack[depth-1]:nkeys] {
			if string(b[r[0]:r[1]]) == string(k) {
				return false // a duplicate: the scanner reports it
			}
		}
		keys[nkeys] = [2]int32{int32(ka), int32(kb)}
		nkeys++
		i = skipWS(b, sc.pos)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i++
	}
	goto value
}

// skipWS returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// hasLiteral reports whether b holds lit at i.
func hasLiteral(b []byte, i int, lit string) bool {
	return len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}
