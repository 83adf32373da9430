package clowl

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"github.com/clutchprotocol/clutch/adapters/internal/rawjson"
	"strconv"
	"strings"
	"time"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/adapters/internal/bound"
	"github.com/clutchprotocol/clutch/adapters/internal/redact"
	"github.com/clutchprotocol/clutch/protocol"
)

// maxTS is the last second RFC 3339 can write (9999-12-31T23:59:59Z).
const maxTS = 253402300799

// Prefixes of the ids the adapter derives (docs/protocol.md Appendix B reserves
// task:, run: and group:).
const (
	taskPrefix = protocol.PrefixTask
	runPrefix  = protocol.PrefixRun
	broadcast  = protocol.PrefixGroup + "*"
)

// toEnvelope maps a parsed CLowl message (see the package doc's table).
func (a *Adapter) toEnvelope(ctx context.Context, cm *Message, cs []Coercion) (*protocol.Message, error) {
	if cm.TS > maxTS {
		return nil, inErr(protocol.CodeInvalidField, "/ts", "ts is after the year 9999", nil)
	}
	if a.opts.Authenticate != nil {
		if err := a.opts.Authenticate(ctx, cm.From, cm.Auth); err != nil {
			return nil, inErr(protocol.CodeUnauthorized, "/auth", "sender "+cm.From+" is not authorised", err)
		}
	}
	m := &protocol.Message{
		V:        protocol.Version,
		ID:       cm.MID,
		TS:       protocol.Timestamp(time.Unix(cm.TS, 0)),
		ThreadID: cm.CID,
		RunID:    cm.TID,
		From:     protocol.Participant{AgentID: protocol.PrefixAgent + cm.From},
		To:       make([]protocol.Participant, len(cm.To)),
		Attempt:  1,
	}
	if m.RunID == "" {
		m.RunID = runPrefix + cm.CID
	}
	for i, t := range cm.To {
		if t == "*" {
			m.To[i].AgentID = broadcast
		} else {
			m.To[i].AgentID = protocol.PrefixAgent + t
		}
	}
	meta := map[string]any{
		adapters.MetaSource: Source,
		MetaPerformative:    string(cm.P),
		MetaTaskType:        cm.Body.T,
	}
	if cm.PID != "" {
		meta[MetaInReplyTo] = cm.PID
	}
	if cm.Det != nil {
		meta[MetaDet] = *cm.Det
	}
	if cm.ToList && len(cm.To) == 1 {
		meta[MetaToList] = true
	}
	if len(cs) > 0 {
		l := make([]any, len(cs))
		for i, c := range cs {
			l[i] = map[string]any{"field": c.Field, "original": metaValue(c.Original), "coerced": metaValue(c.Coerced), "reason": c.Reason}
			if redact.Key(c.Field[strings.LastIndexByte(c.Field, '.')+1:]) {
				l[i].(map[string]any)["original"] = redact.Redacted // an ignored credential is not stored
			}
		}
		meta[MetaCoercions] = l
	}
	m.Meta = meta

	// The task tree: a REQ or DLGT starts task "task:<mid>"; every other
	// message belongs to the task of the message it answers (pid).
	own := taskPrefix + cm.MID
	var err error
	switch cm.P {
	case REQ, DLGT:
		m.Type, m.TaskID = protocol.TypeTaskRequest, own
		if cm.P == DLGT {
			if cm.PID != "" {
				m.ParentTaskID = a.links.TaskOf(ctx, cm.PID)
			}
			if mode, ok := delegationMode(cm.Body.D); ok {
				meta[MetaDelegationMode] = mode
			}
		}
		m.Payload = cm.Body.D
	case ACK, PROG, DONE, INF, QRY:
		m.Type = map[Performative]protocol.Type{ACK: protocol.TypeTaskAccept, PROG: protocol.TypeTaskProgress,
			DONE: protocol.TypeTaskResult, INF: protocol.TypeChatMessage, QRY: protocol.TypeChatMessage}[cm.P]
		m.TaskID = a.answering(ctx, cm, own)
		m.Payload = cm.Body.D
	case ERR:
		m.Type, m.TaskID = protocol.TypeTaskError, a.answering(ctx, cm, own)
		m.Payload, err = errorPayload(cm.Body.D)
	case CNCL:
		m.Type, m.TaskID = protocol.TypeTaskCancel, a.answering(ctx, cm, own)
		m.Payload, err = cancelPayload(cm.Body.D)
	case CAPS:
		// The first CAPS of an agent registers it; a later one (another
		// mid: a re-sent CAPS translates the same) updates its card.
		m.Type, m.TaskID = protocol.TypeAgentRegister, own
		if a.links.Registered(ctx, m.From.AgentID, own) {
			m.Type = protocol.TypeAgentUpdate
		}
		m.Payload, err = capsCard(m.From.AgentID, cm.Body.D)
	}
	if err != nil {
		return nil, err
	}
	if err := a.context(ctx, cm, m); err != nil {
		return nil, err
	}
	if cm.Auth != "" {
		auth := &protocol.Auth{Scheme: AuthScheme, Sig: cm.Auth}
		if a.opts.RedactAuth {
			auth.Sig = ""
		}
		m.Security = &protocol.Security{Auth: auth}
	}
	// Credentials in the body are not stored, and the envelope fits the
	// event store (package doc, Caveats).
	if err := redact.Message(m); err != nil {
		return nil, inErr(protocol.CodeOf(err), "/body/d", "payload", err)
	}
	if err := bound.Fit(m, 0); err != nil {
		return nil, inErr(protocol.CodeTooLarge, "", "the message does not fit in one envelope", err)
	}
	if err := m.Validate(); err != nil {
		// Every field above is derived so that this cannot happen; a
		// failure is a bug, reported with the rule that broke.
		return nil, inErr(protocol.CodeOf(err), "", "the translated envelope is invalid", err)
	}
	a.links.Remember(ctx, m, cm.Body.T)
	if cm.P == CAPS {
		a.links.Register(ctx, m.From.AgentID, own)
	}
	return m, nil
}

// AuthScheme is the security.auth scheme that carries a CLowl auth token.
const AuthScheme = "bearer"

// answering returns the task of the message cm answers: the Index's
// answer for pid, else "task:<pid>" (the task a REQ with that mid
// started), else the message's own task when it answers nothing.
func (a *Adapter) answering(ctx context.Context, cm *Message, own string) string {
	if cm.PID == "" {
		return own
	}
	return a.links.TaskOf(ctx, cm.PID)
}

func delegationMode(d []byte) (string, bool) {
	ms, err := rawjson.Members(d)
	if err != nil {
		return "", false
	}
	for _, mb := range ms {
		if mb.Name == "delegation_mode" {
			return rawjson.Str(mb.Value)
		}
	}
	return "", false
}

// errorPayload maps an ERR body.d {code, msg, retry, cascade_err?} to the
// wire error of docs/protocol.md §5.4 through the protocol error table.
func errorPayload(d []byte) ([]byte, error) {
	ms, err := rawjson.Members(d)
	if err != nil {
		return nil, adapters.JSONError(Name, "/body/d", err)
	}
	var (
		ep                  protocol.ErrorPayload
		eCode, clutch       string
		hasRetry, hasClutch bool
		details             = map[string]any{}
	)
	for _, mb := range ms {
		var ok bool
		switch mb.Name {
		case "code":
			eCode, ok = rawjson.Str(mb.Value)
		case "msg":
			ep.Message, ok = rawjson.Str(mb.Value)
		case "retry":
			k := rawjson.Kind(mb.Value)
			ep.Retryable, hasRetry, ok = k == 't', true, k == 't' || k == 'f'
		case "clutch_code":
			if clutch, ok = rawjson.Str(mb.Value); ok {
				hasClutch = true
				continue
			}
			details[mb.Name] = rawjson.ToAny(mb.Value)
			continue
		default:
			details[mb.Name] = rawjson.ToAny(mb.Value)
			continue
		}
		if !ok {
			// error-codes.md: code and msg are strings, retry a boolean.
			return nil, inErr(protocol.CodeInvalidField, "/body/d/"+mb.Name, "an ERR "+mb.Name+" must be a "+map[string]string{"code": "string", "msg": "string", "retry": "boolean"}[mb.Name], nil)
		}
	}
	if eCode == "" {
		eCode = CodeFor(protocol.CodeInternal)
	}
	ep.Code = ProtocolCode(eCode)
	if hasClutch {
		// Sent by a Clutch outbound: the exact code, when it agrees.
		if c := protocol.Code(clutch); c.Known() && CodeFor(c) == eCode {
			ep.Code = c
		} else {
			details["clutch_code"] = clutch
		}
	}
	if CodeFor(ep.Code) != eCode {
		details[detailCLowlCode] = eCode // E100–E999 and the like
	}
	if !hasRetry {
		ep.Retryable = ep.Code.Retryable()
	}
	if len(details) > 0 {
		ep.Details = details
	}
	return encodePayload(&ep)
}

// detailCLowlCode keeps a CLowl code the error table does not round-trip.
const detailCLowlCode = "clowl_code"

// cancelPayload maps a CNCL body.d {reason?} to the payload of the
// router's own task.cancel events: a wire error with code CANCELLED.
func cancelPayload(d []byte) ([]byte, error) {
	ms, err := rawjson.Members(d)
	if err != nil {
		return nil, adapters.JSONError(Name, "/body/d", err)
	}
	ep := protocol.ErrorPayload{Code: protocol.CodeCancelled}
	details := map[string]any{}
	for _, mb := range ms {
		s, isStr := rawjson.Str(mb.Value)
		switch {
		case mb.Name == "reason" && isStr:
			ep.Message = s
		case mb.Name == "clutch_code" && isStr && protocol.Code(s).Known() && protocol.Code(s) != protocol.CodeCancelled:
			ep.Code = protocol.Code(s) // sent by a Clutch outbound
		default:
			details[mb.Name] = rawjson.ToAny(mb.Value)
		}
	}
	if len(details) > 0 {
		ep.Details = details
	}
	return encodePayload(&ep)
}

func encodePayload(v any) ([]byte, error) {
	var m protocol.Message
	if err := m.SetPayload(v); err != nil {
		return nil, inErr(protocol.CodeOf(err), "/body/d", "", err)
	}
	return m.Payload, nil
}

// capsCard maps a CAPS body.d {supports, clowl} to an AgentCard (docs/protocol.md
// §1.4): each supported entry becomes a capability id, and body.d itself
// is kept verbatim as the card's "clowl" extension.
func capsCard(agentID string, d []byte) ([]byte, error) {
	card := &protocol.AgentCard{V: protocol.Version, AgentID: agentID, Capabilities: capabilities(d),
		Extensions: map[string]json.RawMessage{cardExtension: d}}
	b, err := protocol.EncodeAgentCard(card)
	if err != nil {
		return nil, inErr(protocol.CodeOf(err), "/body/d", "CAPS does not make a valid AgentCard", err)
	}
	return b, nil
}

// cardExtension is the AgentCard extension member holding a CAPS body.d.
const cardExtension = "clowl"

// capabilities returns the capability list of a CAPS body.d "supports".
func capabilities(d []byte) []protocol.Capability {
	out := []protocol.Capability{}
	ms, err := rawjson.Members(d)
	if err != nil {
		return out
	}
	for _, mb := range ms {
		if mb.Name != "supports" || rawjson.Kind(mb.Value) != '[' {
			continue
		}
		var l []json.RawMessage
		if json.Unmarshal(mb.Value, &l) != nil {
			return out
		}
		for _, e := range l {
			s, ok := rawjson.Str(e)
			if !ok {
				continue
			}
			if id := CapabilityID(s); id != "" && !containsCap(out, id) {
				out = append(out, protocol.Capability{ID: id})
			}
		}
	}
	return out
}

func containsCap(l []protocol.Capability, id string) bool {
	for _, c := range l {
		if c.ID == id {
			return true
		}
	}
	return false
}

// CapabilityID returns the capability id (docs/protocol.md §1.5) of a CAPS
// "supports" entry: the entry itself when it already has the form
// <kind>:<name> ("search:web"), else "skill:<entry>"; "" when the entry
// cannot be an id (empty, spaces or control characters).
func CapabilityID(s string) string {
	if s == "" || len(s) > protocol.MaxIDLength-len("skill:") || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return ""
	}
	if kind, name, ok := strings.Cut(s, ":"); ok && kind != "" && name != "" && !strings.ContainsFunc(kind, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-')
	}) {
		return s
	}
	return "skill:" + s
}

// context maps ctx (docs/protocol.md §14.5): ref → an attachment (hash checked when
// a Resolver gives the content), inline → meta, hash without ref → meta.
func (a *Adapter) context(ctx context.Context, cm *Message, m *protocol.Message) error {
	c := cm.Ctx
	if c == nil {
		return nil
	}
	if c.Ref != "" {
		if a.opts.Resolve != nil {
			content, err := a.opts.Resolve(ctx, c.Ref)
			switch {
			case err == nil:
				if c.Hash != "" && !hashMatches(content, c.Hash) {
					return inErr(protocol.CodeContextUnavailable, "/ctx/hash", "the content of "+c.Ref+" does not have this SHA-256", ErrHashMismatch)
				}
			case errors.Is(err, ErrSkip):
			case c.Inline == "":
				return inErr(protocol.CodeContextUnavailable, "/ctx/ref", c.Ref+" is unreachable and ctx.inline is null", errors.Join(ErrContextUnreachable, err))
			default:
				m.Meta[MetaCtxFallback] = true // docs/protocol.md §14.5: monitoring should flag it
			}
		}
		m.Attachments = []protocol.Attachment{{Kind: refKind(c.Ref), Ref: c.Ref, Name: AttachmentName, SHA256: c.Hash}}
	} else if c.Hash != "" {
		// No ref: the hash can only be of the inline content.
		if c.Inline != "" && !hashMatches([]byte(c.Inline), c.Hash) {
			return inErr(protocol.CodeContextUnavailable, "/ctx/hash", "ctx.inline does not have this SHA-256", ErrHashMismatch)
		}
		m.Meta[MetaCtxHash] = c.Hash
	}
	if c.Inline != "" {
		m.Meta[MetaCtxInline] = c.Inline
	}
	return nil
}

func hashMatches(content []byte, want string) bool {
	sum := sha256.Sum256(content)
	return hex.EncodeToString(sum[:]) == strings.ToLower(want)
}

// refKind is the attachment kind of a ctx.ref: "artifact_ref" for an
// artifact of the event store, "url" for a URL, "path" otherwise.
func refKind(ref string) string {
	switch {
	case strings.HasPrefix(ref, protocol.PrefixArtifact):
		return "artifact_ref"
	case strings.Contains(ref, "://"):
		return "url"
	}
	return "path"
}

// metaValue converts a Coercion value to the types meta values have.
func metaValue(v any) any {
	switch x := v.(type) {
	case int64:
		return json.Number(strconv.Itoa(int(x)))
	case int:
		return json.Number(strconv.Itoa(x))
	}
	return v
}
