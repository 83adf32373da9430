package autogen

import (
	"context"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/adapters/internal/rawjson"
	"github.com/clutchprotocol/clutch/protocol"
)

// Stop reasons of AutoGen's termination conditions that do not end a run
// with a result (autogen_agentchat/conditions/_terminations.py).
const (
	stopHandoffPrefix = "Handoff to "
	stopExternal      = "External termination requested"
	stopTimeoutPrefix = "Timeout of "
)

// taskResult maps a TaskResult: its messages in order, then the envelope
// that ends the task, chosen by the stop reason (see the package doc).
func (t *translation) taskResult(ctx context.Context, ms []rawjson.Member, path string) error {
	var msgs, stop jsontext.Value
	var extra []rawjson.Member
	for _, m := range ms {
		switch m.Name {
		case "messages":
			msgs = m.Value
		case "stop_reason":
			stop = m.Value
		case "__class__":
			if s, ok := rawjson.Str(m.Value); !ok || s != kindTaskResult {
				return inErr(protocol.CodeInvalidField, path+"/__class__", "want \"TaskResult\"", ErrNotAutoGen)
			}
		default:
			extra = append(extra, m)
		}
	}
	if rawjson.Kind(msgs) != '[' {
		return inErr(protocol.CodeWrongType, path+"/messages", "want an array, got "+rawjson.KindName(msgs), nil)
	}
	reason, hasReason, code, detail := rawjson.OptString(stop)
	if code != "" {
		return inErr(code, path+"/stop_reason", detail, nil)
	}
	if err := t.list(ctx, msgs, path+"/messages"); err != nil {
		return err
	}
	it := &item{path: path, raw: rawjson.Object(ms), kind: kindTaskResult}
	// From the agent that spoke last.
	it.source, it.hasSource = t.lastSource, t.lastSource != ""
	t.resolve(ctx, it)
	t.index++
	// One id per run and stop reason: a TaskResult posted again dedups.
	it.id, it.hasID = "task_result", true
	m := t.base(it, protocol.TypeTaskResult, 0, 1)
	delete(m.Meta, MetaID)
	m.IdempotencyKey = "autogen:task_result"
	if hasReason && len(reason) <= maxMetaReason {
		m.Meta[MetaStopReason] = reason // a longer one is in the payload only
	}
	if len(extra) > 0 {
		m.Meta[MetaExtra] = rawjson.ToAny(rawjson.Object(extra))
	}
	ep := protocol.ErrorPayload{Message: reason} // the stop reason
	switch {
	case strings.HasPrefix(reason, stopHandoffPrefix):
		m.Type, ep.Code = protocol.TypeTaskError, protocol.CodeInputRequired
	case reason == stopExternal:
		m.Type, ep.Code = protocol.TypeTaskCancel, protocol.CodeCancelled
	case strings.HasPrefix(reason, stopTimeoutPrefix):
		m.Type, ep.Code = protocol.TypeTaskTimeout, protocol.CodeTimeout
	}
	var err error
	if m.Type == protocol.TypeTaskResult {
		out := []rawjson.Member{rawjson.Field("stop_reason", nullOr(stop)), rawjson.Field("messages", jsontext.Value(strconv.Itoa(t.countIn(msgs))))}
		if t.last != nil && rawjson.Kind(t.last.content) == '"' {
			out = append(out, rawjson.Field("text", t.last.content))
		}
		m.Payload = rawjson.Object(out)
	} else if m.Payload, err = rawjson.FromAny(ep); err != nil {
		return inErr(protocol.CodeInternal, path, "encoding the error", err)
	}
	return t.emit(ctx, it, m)
}

// maxMetaReason bounds the stop reason meta.stop_reason repeats.
const maxMetaReason = 256

func nullOr(v jsontext.Value) jsontext.Value {
	if v == nil {
		return jsontext.Value("null")
	}
	return v
}

func (t *translation) countIn(list jsontext.Value) int {
	var elems []jsontext.Value
	if adapters.DecodeJSON(Name, list, &elems) != nil {
		return 0
	}
	return len(elems)
}

// response maps an agent's Response {chat_message, inner_messages}: the
// inner messages, then the chat message.
func (t *translation) response(ctx context.Context, ms []rawjson.Member, path string) error {
	var chat, inner jsontext.Value
	for _, m := range ms {
		switch m.Name {
		case "chat_message":
			chat = m.Value
		case "inner_messages":
			inner = m.Value
		default:
			return inErr(protocol.CodeUnknownField, path+"/"+m.Name, "a Response has chat_message and inner_messages", nil)
		}
	}
	switch rawjson.Kind(inner) {
	case 0, 'n':
	case '[':
		if err := t.list(ctx, inner, path+"/inner_messages"); err != nil {
			return err
		}
	default:
		return inErr(protocol.CodeWrongType, path+"/inner_messages", "want an array, got "+rawjson.KindName(inner), nil)
	}
	if rawjson.Kind(chat) != '{' {
		return inErr(protocol.CodeWrongType, path+"/chat_message", "want an object, got "+rawjson.KindName(chat), nil)
	}
	return t.decoded(ctx, chat, path+"/chat_message")
}
