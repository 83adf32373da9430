package httpjson

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// internal is the body written when a value cannot be encoded.
const internal = `{"error":{"code":"INTERNAL","message":"internal error","retryable":true}}`

// Marshal encodes v as JSON the way every HTTP surface writes it: as
// encoding/json does, without escaping '<', '>' and '&' (the API's JSON is
// never inlined in HTML, and "\u003c" in a message only confuses its
// reader). The result has no trailing newline.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'}), nil
}

// Write writes v as the JSON body of a response with status.
func Write(w http.ResponseWriter, status int, v any) {
	b, err := Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(internal)
	}
	WriteBody(w, status, append(b, '\n'))
}

// WriteBody writes body, a JSON text already encoded with its trailing
// newline, as the body of a response with status.
func WriteBody(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
