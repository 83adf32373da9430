package langgraph

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/clutchprotocol/clutch/adapters/internal/rawjson"
	"github.com/clutchprotocol/clutch/protocol"
)

// Outbound translates an envelope into LangGraph's bytes:
//
//   - a message translated from a stream frame whose payload is the frame's
//     data (values, updates, custom and checkpoint progress, x.langgraph.*
//     extension events) gives the frame back in the SDK's parsed form
//     {"event", "data", "id"?};
//   - a task.request gives the body of a run creation
//     (POST /threads/{id}/runs/stream): {"assistant_id", "input"}, the
//     assistant being the first recipient without "agent:" (meta
//     lg_assistant_id wins), the input the request's payload.
//
// Anything else is refused with UNSUPPORTED_TASK (ErrNotMappable).
func (t *Translator) Outbound(_ context.Context, m *protocol.Message) ([]byte, error) {
	if m == nil {
		return nil, outErr(protocol.CodeMissingField, "", "nil message", ErrNotMappable)
	}
	if len(m.Payload) == 0 {
		return nil, outErr(protocol.CodeMissingField, "/payload", "no payload", ErrNotMappable)
	}
	if !json.Valid(m.Payload) {
		return nil, outErr(protocol.CodeInvalidJSON, "/payload", "payload is not JSON", ErrNotMappable)
	}
	if frameOf(m) && isOurs(m) {
		ms := []rawjson.Member{rawjson.Field("event", []byte(quote(rawjson.MetaString(m, MetaEvent)))), rawjson.Field("data", rawjson.Compact(m.Payload))}
		if seq := rawjson.MetaString(m, MetaSeq); seq != "" {
			ms = append(ms, rawjson.Field("id", []byte(quote(seq))))
		}
		return rawjson.Object(ms), nil
	}
	if m.Type == protocol.TypeTaskRequest {
		assistant := rawjson.MetaString(m, "lg_assistant_id")
		if assistant == "" {
			for _, p := range m.To {
				if a, ok := strings.CutPrefix(p.AgentID, protocol.PrefixAgent); ok && a != "" {
					assistant = a
					break
				}
			}
		}
		if assistant == "" {
			return nil, outErr(protocol.CodeMissingField, "/to", "a task.request names no assistant (to[0] or meta.lg_assistant_id)", ErrNotMappable)
		}
		return rawjson.Object([]rawjson.Member{
			rawjson.Field("assistant_id", []byte(quote(assistant))),
			rawjson.Field("input", rawjson.Compact(m.Payload)),
		}), nil
	}
	return nil, outErr(protocol.CodeUnsupportedTask, "/type", "LangGraph has no form for "+string(m.Type)+" here", ErrNotMappable)
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
