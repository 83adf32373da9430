package rawjson

import (
	"bytes"
	"errors"
	"io"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/clutchprotocol/clutch/adapters"
)

// Values splits outside input into its top-level JSON values, each checked
// by adapters.DecodeJSON (the event store's strictness): raw is either one
// value or JSON lines, several values each starting on a line of its own.
//
// Which of the two raw is follows from where its values end, never from how
// it is indented, so a refusal has the same code whatever the input's
// formatting: an object with a duplicate key is DUPLICATE_KEY on one line
// and pretty-printed over many. A refusal of one of several values has its
// Path prefixed with "/<index>" and its Detail with "line <n>: ".
func Values(adapter string, raw []byte) ([]jsontext.Value, error) {
	var one jsontext.Value
	whole := adapters.DecodeJSON(adapter, raw, &one)
	if whole == nil {
		return []jsontext.Value{one}, nil
	}
	// Find where the values end. Duplicate names and invalid UTF-8 do not
	// end a value: each value is judged strictly below.
	dec := jsontext.NewDecoder(bytes.NewReader(raw), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	type span struct{ start, end int64 }
	var spans []span
	var broken error
	for {
		v, err := dec.ReadValue()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			broken = err
			break
		}
		end := dec.InputOffset()
		start := end - int64(len(v))
		if len(spans) > 0 && !bytes.Contains(raw[spans[len(spans)-1].end:start], []byte{'\n'}) {
			return nil, whole // two values on one line: not JSON lines
		}
		spans = append(spans, span{start, end})
	}
	if len(spans) == 0 || (len(spans) == 1 && broken == nil) {
		return nil, whole
	}
	out := make([]jsontext.Value, 0, len(spans))
	for i, sp := range spans {
		var v jsontext.Value
		if err := adapters.DecodeJSON(adapter, raw[sp.start:sp.end], &v); err != nil {
			return nil, atLine(err, i, raw, sp.start)
		}
		out = append(out, v)
	}
	if broken == nil {
		return out, nil
	}
	// Every value before the break is sound: the break is the error.
	var off int64
	var syn *jsontext.SyntacticError
	if errors.As(broken, &syn) {
		off = syn.ByteOffset
	}
	return nil, atLine(adapters.JSONError(adapter, "", broken), len(spans), raw, off)
}

// atLine places the error of the i-th value, which starts at off.
func atLine(err error, i int, raw []byte, off int64) error {
	var ae *adapters.Error
	if !errors.As(err, &ae) {
		return err
	}
	off = min(max(off, 0), int64(len(raw)))
	ae.Path = "/" + strconv.Itoa(i) + ae.Path
	line := "line " + strconv.Itoa(1+bytes.Count(raw[:off], []byte{'\n'}))
	if ae.Detail == "" {
		ae.Detail = line
	} else {
		ae.Detail = line + ": " + ae.Detail
	}
	return ae
}
