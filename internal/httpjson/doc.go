// Package httpjson is how Clutch's HTTP surfaces (the gateway's /v1 API,
// the rules API and the HTTP adapters) speak HTTP about protocol errors
// and JSON bodies, one way each:
//
//   - [Status] maps a protocol error code to the HTTP status answered for
//     it, from one table that has an entry for every code of
//     [protocol.Codes] (the HTTP column of docs/protocol.md §5.4); a code
//     outside the table is 500.
//   - [Write] and [WriteBody] write a JSON response: the body with a
//     trailing newline (Write encodes a value; WriteBody takes a body the
//     caller encoded), Content-Type application/json, no caching and no
//     content sniffing. A value that cannot be encoded becomes a 500 with
//     the protocol's INTERNAL error body, never a half-written response.
//   - [Marshal] is the one JSON encoding of those bodies and of the
//     streams' events: encoding/json without HTML escaping, so "<", ">"
//     and "&" reach the client as they are, not as "\u003c". Responses
//     are application/json with nosniff, never HTML.
package httpjson
