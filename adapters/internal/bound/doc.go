// Package bound makes the envelopes a translator builds fit the event
// store. Outside input may be far larger than one event may be (a crewAI
// tracing batch holds whole prompts; an AutoGen tool result a whole
// file), and a translator has no artifact store at hand, so text that
// does not fit is cut, visibly:
//
//   - Fit leaves a message whose encoding is within the limit untouched.
//   - Otherwise it cuts the longest strings of payload and meta to one
//     common length, the least that makes the message fit, each at a
//     character boundary and ending in Marker and the original size in
//     bytes ("… [truncated, 2097152 bytes]"), and lists what it cut in
//     meta.truncated ([{path, bytes}], JSON pointers into the envelope,
//     the first MaxListed of them).
//   - Roles (from.role, to[].role) longer than MaxRole bytes are cut the
//     same way whatever the size.
//   - A message that cannot fit even so (its size is in structure, not
//     text) is refused with TOO_LARGE.
//
// Ids are never cut: a translator refuses an outside id that would make
// an envelope id too long with INVALID_FIELD before it gets here.
package bound
