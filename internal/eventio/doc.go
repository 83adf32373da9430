// Package eventio reads and writes the event streams of `clutch export`
// and `clutch import`: JSON lines and CloudEvents 1.0 structured JSON, one
// event per line. The stored bytes of each message travel unchanged, so a
// signature made over them still verifies after a round trip.
//
// # JSON lines
//
// One object per line, the shape of the gateway's event objects:
//
//	{"seq":12,"time":"2026-11-26T08:00:00.123Z","message":{...the envelope as stored...}}
//
// seq and time are the event's in the store it was exported from. A
// message whose stored bytes cannot sit on one line as they are (they hold
// a line break, or begin or end with white space) is written as
// "message_base64" (standard base64 of the bytes) instead of "message".
//
// # CloudEvents
//
// One CloudEvents 1.0 event per line, in the JSON event format:
//
//	specversion      "1.0"
//	id               the message id
//	source           "/runs/" + the run_id, path-escaped
//	type             "io.github.clutchprotocol." + the message type (e.g. ...task.request)
//	subject          the task_id
//	time             the message ts
//	datacontenttype  "application/json"
//	data             the envelope, as stored (data_base64 when it cannot sit on one line)
//	clutchseq        the event's seq in the store it was exported from (extension)
//
// On reading, specversion must be "1.0", data (or data_base64) must hold a
// message whose id is the event's id and whose type is the one the event's
// type names; source, subject, time and extensions are not checked.
//
// # Reading
//
// [Reader] takes either format, line by line (a line with "specversion"
// is a CloudEvent), and decodes each message strictly (protocol.Decode):
// any malformed line gives an error naming its line number and matching
// [ErrRecord]. Blank lines are skipped. Unknown members are ignored, so
// CloudEvents extensions pass.
package eventio
