// Package redact keeps credentials out of the envelopes translators
// build, and so out of the event store. Outside systems echo request
// headers, webhook configurations and connection settings into what they
// emit; a translator passes every message it builds through Message:
//
//   - the value of a member whose name is a credential's (Key: the
//     authorization, cookie and API key headers, token, secret and
//     password fields, any case, '-' and '_' alike) is replaced by
//     Redacted, whatever its type;
//   - a string that carries an HTTP credential (a "Bearer " or "Basic "
//     authorization value) is replaced by Redacted wherever it is;
//
// in the payload and in meta, at any depth. Ids and the other envelope
// fields are not touched: a translator does not build them from
// credentials.
package redact
