package clowl_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/adapters/adaptertest"
	"github.com/clutchprotocol/clutch/adapters/clowl"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/schema"
)

var update = flag.Bool("update", false, "rewrite testdata/english.golden")

// msg builds a CLowl message from a template; fields override members.
func msg(p string, fields string) []byte {
	base := `"clowl":"0.2","mid":"m1","ts":1709078400,"tid":"t1","p":"` + p + `","from":"oscar","cid":"c1"`
	if !strings.Contains(fields, `"to":`) {
		base += `,"to":"radar"`
	}
	if !strings.Contains(fields, `"body"`) {
		base += `,"body":{"t":"search","d":{}}`
	}
	if fields != "" {
		base += "," + fields
	}
	return []byte("{" + base + "}")
}

func inbound(t *testing.T, a *clowl.Adapter, raw []byte) *protocol.Message {
	t.Helper()
	msgs, err := a.Inbound(context.Background(), raw)
	if err != nil {
		t.Fatalf("inbound %s: %v", raw, err)
	}
	if len(msgs) != 1 {
		t.Fatalf("inbound gave %d messages", len(msgs))
	}
	if err := msgs[0].Validate(); err != nil {
		t.Fatalf("invalid envelope: %v", err)
	}
	return msgs[0]
}

func TestPerformatives(t *testing.T) {
	for _, c := range []struct {
		p, fields string
		typ       protocol.Type
		task      string
		parent    string
		payload   string
	}{
		{"REQ", `"body":{"t":"search","d":{"q":"x"}}`, protocol.TypeTaskRequest, "task:m1", "", `{"q":"x"}`},
		{"REQ", `"pid":"m0","body":{"t":"search","d":{}}`, protocol.TypeTaskRequest, "task:m1", "", `{}`},
		{"DLGT", `"pid":"m0","body":{"t":"draft","d":{"delegation_mode":"fork","x":1}}`, protocol.TypeTaskRequest, "task:m1", "task:m0", `{"delegation_mode":"fork","x":1}`},
		{"DLGT", `"body":{"t":"draft","d":{"delegation_mode":"assist"}}`, protocol.TypeTaskRequest, "task:m1", "", `{"delegation_mode":"assist"}`},
		{"ACK", `"pid":"m0"`, protocol.TypeTaskAccept, "task:m0", "", `{}`},
		{"ACK", ``, protocol.TypeTaskAccept, "task:m1", "", `{}`},
		{"PROG", `"pid":"m0","body":{"t":"s","d":{"pct":40,"note":"n"}}`, protocol.TypeTaskProgress, "task:m0", "", `{"pct":40,"note":"n"}`},
		{"DONE", `"pid":"m0","body":{"t":"s","d":{"r":[1,2]}}`, protocol.TypeTaskResult, "task:m0", "", `{"r":[1,2]}`},
		{"ERR", `"pid":"m0","body":{"t":"error","d":{"code":"E006","msg":"slow","retry":true,"cascade_err":"E007"}}`, protocol.TypeTaskError, "task:m0", "",
			`{"code":"TIMEOUT","message":"slow","retryable":true,"details":{"cascade_err":"E007"}}`},
		{"CNCL", `"pid":"m0","body":{"t":"search","d":{"reason":"scope","by":"oscar"}}`, protocol.TypeTaskCancel, "task:m0", "",
			`{"code":"CANCELLED","message":"scope","retryable":false,"details":{"by":"oscar"}}`},
		{"INF", `"pid":"m0","body":{"t":"notify","d":{"message":"hi"}}`, protocol.TypeChatMessage, "task:m0", "", `{"message":"hi"}`},
		{"QRY", `"body":{"t":"search","d":{"q":"?"}}`, protocol.TypeChatMessage, "task:m1", "", `{"q":"?"}`},
		{"CAPS", `"to":"*","body":{"t":"capabilities","d":{"supports":["search:web","summarize","search:web"],"clowl":"0.2"}}`, protocol.TypeAgentRegister, "task:m1", "",
			`{"v":"clutch/0.1","agent_id":"agent:oscar","capabilities":[{"id":"search:web"},{"id":"skill:summarize"}],"clowl":{"supports":["search:web","summarize","search:web"],"clowl":"0.2"}}`},
	} {
		t.Run(c.p+" "+c.fields, func(t *testing.T) {
			m := inbound(t, clowl.New(nil), msg(c.p, c.fields))
			if m.Type != c.typ || m.TaskID != c.task || m.ParentTaskID != c.parent {
				t.Errorf("got %s task %s parent %q, want %s %s %q", m.Type, m.TaskID, m.ParentTaskID, c.typ, c.task, c.parent)
			}
			if err := adaptertest.JSONEqual([]byte(c.payload), m.Payload, nil); err != nil {
				t.Errorf("payload %s: %v", m.Payload, err)
			}
			if m.ID != "m1" || m.RunID != "t1" || m.ThreadID != "c1" || m.From.AgentID != "agent:oscar" || m.TS != "2024-02-28T00:00:00.000Z" {
				t.Errorf("ids: %+v", m)
			}
			if m.Meta[clowl.MetaPerformative] != c.p || adapters.Source(m) != clowl.Source {
				t.Errorf("meta %v", m.Meta)
			}
			if c.p == "DLGT" && m.Meta[clowl.MetaDelegationMode] == nil {
				t.Errorf("no delegation_mode in meta %v", m.Meta)
			}
			wantTo := "agent:radar"
			if c.p == "CAPS" {
				wantTo = "group:*"
			}
			if len(m.To) != 1 || m.To[0].AgentID != wantTo {
				t.Errorf("to %v", m.To)
			}
		})
	}
}

func TestCAPSRegisterThenUpdate(t *testing.T) {
	a := clowl.New(nil)
	caps := func(mid string) []byte {
		return []byte(`{"clowl":"0.2","mid":"` + mid + `","ts":1,"p":"CAPS","from":"radar","to":"*","cid":"system","body":{"t":"capabilities","d":{"supports":["search:web"],"clowl":"0.2"}}}`)
	}
	if m := inbound(t, a, caps("c1")); m.Type != protocol.TypeAgentRegister {
		t.Fatalf("first CAPS: %s", m.Type)
	}
	if m := inbound(t, a, caps("c1")); m.Type != protocol.TypeAgentRegister {
		t.Fatalf("re-sent CAPS: %s", m.Type)
	}
	m := inbound(t, a, caps("c2"))
	if m.Type != protocol.TypeAgentUpdate {
		t.Fatalf("second CAPS: %s", m.Type)
	}
	card, err := protocol.DecodeAgentCard(m.Payload)
	if err != nil || card.AgentID != "agent:radar" || card.Capabilities[0].ID != "search:web" {
		t.Fatalf("card %+v %v", card, err)
	}
}

// The Index links replies to the task they belong to, even when pid names
// a message that is not the request (examples-v0.2.md §6).
func TestPipelineTaskTree(t *testing.T) {
	a := clowl.New(nil)
	tasks := map[string][2]string{}
	for _, c := range examples(t)[8:18] { // the 5-agent pipeline, pipe001
		m := inbound(t, a, c.Raw)
		tasks[m.ID] = [2]string{m.TaskID, m.ParentTaskID}
	}
	want := map[string][2]string{
		"m001": {"task:m001", ""}, "m002": {"task:m001", ""}, "m003": {"task:m001", ""},
		"m004": {"task:m004", "task:m001"}, // DLGT whose pid is the DONE m003
		"m005": {"task:m004", ""},          // QRY from Muse while on m004
		"m006": {"task:m004", ""},          // INF answering the QRY
		"m007": {"task:m007", "task:m004"}, // fork
		"m008": {"task:m007", ""}, "m009": {"task:m007", ""},
		"m010": {"task:m004", ""},
	}
	for id, w := range want {
		if tasks[id] != w {
			t.Errorf("%s: task, parent = %v, want %v", id, tasks[id], w)
		}
	}
}

func TestErrorCodes(t *testing.T) {
	a := clowl.New(nil)
	for i := 1; i <= 16; i++ {
		e := fmt.Sprintf("E%03d", i)
		m := inbound(t, a, msg("ERR", `"body":{"t":"error","d":{"code":"`+e+`","msg":"m","retry":false}}`))
		ep, err := protocol.DecodePayload[protocol.ErrorPayload](m)
		if err != nil {
			t.Fatal(err)
		}
		if ep.Code != clowl.ProtocolCode(e) || clowl.CodeFor(ep.Code) != e || ep.Details != nil {
			t.Errorf("%s → %s (back %s), details %v", e, ep.Code, clowl.CodeFor(ep.Code), ep.Details)
		}
		out := outbound(t, a, m)
		if !strings.Contains(string(out), `"code":"`+e+`"`) || strings.Contains(string(out), "clutch_code") {
			t.Errorf("%s out: %s", e, out)
		}
	}
	// A reserved-range code survives in details.
	m := inbound(t, a, msg("ERR", `"body":{"t":"error","d":{"code":"E901","msg":"app","retry":true}}`))
	ep, _ := protocol.DecodePayload[protocol.ErrorPayload](m)
	if ep.Code != protocol.CodeInternal || ep.Details["clowl_code"] != "E901" || !ep.Retryable {
		t.Errorf("E901: %+v", ep)
	}
	if out := outbound(t, a, m); !strings.Contains(string(out), `"code":"E901"`) {
		t.Errorf("E901 out: %s", out)
	}
	// Retry absent: the code's default. Wrong types: refused.
	m = inbound(t, a, msg("ERR", `"body":{"t":"error","d":{"code":"E004","msg":"busy"}}`))
	if ep, _ := protocol.DecodePayload[protocol.ErrorPayload](m); !ep.Retryable {
		t.Errorf("E004 without retry: %+v", ep)
	}
	for _, d := range []string{`{"code":4}`, `{"code":"E001","retry":"yes"}`, `{"msg":false}`} {
		_, err := a.Inbound(context.Background(), msg("ERR", `"body":{"t":"error","d":`+d+`}`))
		if !errors.Is(err, protocol.CodeInvalidField) {
			t.Errorf("ERR %s: %v", d, err)
		}
	}
	// Every Clutch code goes out as its CLowl code and comes back exact.
	for _, c := range protocol.Codes() {
		e := protocol.NewMessage(protocol.TypeTaskError, "agent:ken")
		e.To = []protocol.Participant{{AgentID: "agent:oscar"}}
		if err := e.SetPayload(protocol.ErrorPayload{Code: c, Message: "x", Retryable: c.Retryable()}); err != nil {
			t.Fatal(err)
		}
		out := outbound(t, a, e)
		var body struct {
			Body struct{ D map[string]any } `json:"body"`
		}
		if err := json.Unmarshal(out, &body); err != nil || body.Body.D["code"] != clowl.CodeFor(c) {
			t.Errorf("%s out: %s", c, out)
		}
		back := inbound(t, a, out)
		if ep, _ := protocol.DecodePayload[protocol.ErrorPayload](back); ep.Code != c {
			t.Errorf("%s came back as %s (%s)", c, ep.Code, out)
		}
	}
}

func outbound(t *testing.T, a *clowl.Adapter, m *protocol.Message) []byte {
	t.Helper()
	out, err := a.Outbound(context.Background(), m)
	if err != nil {
		t.Fatalf("outbound: %v", err)
	}
	if err := clowl.Validate(out); err != nil {
		t.Fatalf("outbound breaks the schema: %v\n%s", err, out)
	}
	return out
}

func TestVersions(t *testing.T) {
	for _, raw := range []string{
		`{"clowl":"0.1","mid":"m","ts":1,"p":"REQ","from":"a","to":"b","cid":"c","body":{"t":"x","d":{}}}`,
		`{"clowl":"1.0","mid":"m"}`,
		`{"clowl":0.2,"mid":"m","ts":1,"p":"REQ","from":"a","to":"b","cid":"c","body":{"t":"x","d":{}}}`,
		`{"cl":"0.1","mid":"m","p":"REQ","from":"a","to":"b","cid":"c","body":{"t":"x","d":{}},"ctx":"r"}`,
	} {
		for _, lenient := range []bool{false, true} {
			_, err := clowl.New(&clowl.Options{Lenient: lenient}).Inbound(context.Background(), []byte(raw))
			if !errors.Is(err, protocol.CodeUnsupportedVersion) || !errors.Is(err, clowl.ErrVersion) || clowl.CodeFor(protocol.CodeOf(err)) != "E014" {
				t.Errorf("lenient=%v %s: %v", lenient, raw, err)
			}
		}
	}
}

func TestContextHash(t *testing.T) {
	content := []byte("Q1 trends")
	sum := sha256.Sum256(content)
	good := hex.EncodeToString(sum[:])
	bad := strings.Repeat("ab", 32)
	resolve := func(_ context.Context, ref string) ([]byte, error) {
		switch ref {
		case "research/q1.md":
			return content, nil
		case "skip/me":
			return nil, clowl.ErrSkip
		}
		return nil, os.ErrNotExist
	}
	ctxMsg := func(ref, inline, hash string) []byte {
		q := func(s string) string {
			if s == "" {
				return "null"
			}
			return `"` + s + `"`
		}
		return msg("REQ", `"ctx":{"ref":`+q(ref)+`,"inline":`+q(inline)+`,"hash":`+q(hash)+`}`)
	}
	a := clowl.New(&clowl.Options{Resolve: resolve})
	for _, c := range []struct {
		name              string
		ref, inline, hash string
		err               error
		fallback          bool
	}{
		{"hash matches", "research/q1.md", "", good, nil, false},
		{"no hash", "research/q1.md", "", "", nil, false},
		{"hash mismatch", "research/q1.md", "", bad, clowl.ErrHashMismatch, false},
		{"unreachable, no inline", "gone.md", "", "", clowl.ErrContextUnreachable, false},
		{"unreachable, inline", "gone.md", "fallback", bad, nil, true},
		{"skipped", "skip/me", "", bad, nil, false},
		{"inline only, hash matches", "", "Q1 trends", good, nil, false},
		{"inline only, hash mismatch", "", "Q1 trendz", good, clowl.ErrHashMismatch, false},
	} {
		msgs, err := a.Inbound(context.Background(), ctxMsg(c.ref, c.inline, c.hash))
		if c.err != nil {
			if !errors.Is(err, c.err) || !errors.Is(err, protocol.CodeContextUnavailable) || clowl.CodeFor(protocol.CodeOf(err)) != "E003" {
				t.Errorf("%s: %v, want %v (E003)", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		m := msgs[0]
		if fb, _ := m.Meta[clowl.MetaCtxFallback].(bool); fb != c.fallback {
			t.Errorf("%s: fallback %v", c.name, m.Meta)
		}
		if c.ref != "" && (len(m.Attachments) != 1 || m.Attachments[0].Ref != c.ref || m.Attachments[0].SHA256 != c.hash || m.Attachments[0].Name != "ctx") {
			t.Errorf("%s: attachments %+v", c.name, m.Attachments)
		}
		if c.inline != "" && m.Meta[clowl.MetaCtxInline] != c.inline {
			t.Errorf("%s: inline %v", c.name, m.Meta)
		}
	}
	// Without a Resolver, refs pass unchecked (the examples' hashes are
	// made up).
	m := inbound(t, clowl.New(nil), ctxMsg("research/q1.md", "", bad))
	if m.Attachments[0].SHA256 != bad || m.Attachments[0].Kind != "path" {
		t.Errorf("unresolved: %+v", m.Attachments)
	}
	for ref, kind := range map[string]string{"artifact:sha256:" + good: "artifact_ref", "https://x/y": "url", "a/b": "path"} {
		if m := inbound(t, clowl.New(nil), ctxMsg(ref, "", "")); m.Attachments[0].Kind != kind {
			t.Errorf("%s: kind %s", ref, m.Attachments[0].Kind)
		}
	}
}

func TestLenient(t *testing.T) {
	a := clowl.New(&clowl.Options{Lenient: true})
	for _, c := range []struct {
		name, raw string
		reasons   []string
		check     func(*protocol.Message) bool
	}{
		{"ts as string", `{"clowl":"0.2","mid":"m","ts":"1709078400","p":"REQ","from":"a","to":"b","cid":"c","body":{"t":"s","d":{}}}`,
			[]string{"numeric-string-to-int"}, func(m *protocol.Message) bool { return m.TS == "2024-02-28T00:00:00.000Z" }},
		{"lower-case p", `{"clowl":"0.2","mid":"m","ts":1,"p":"req","from":"a","to":"b","cid":"c","body":{"t":"s","d":{}}}`,
			[]string{"uppercase-performative"}, func(m *protocol.Message) bool { return m.Type == protocol.TypeTaskRequest }},
		{"padded p", `{"clowl":"0.2","mid":"m","ts":1,"p":"REQ ","from":"a","to":"b","cid":"c","body":{"t":"s","d":{}}}`,
			[]string{"trim-performative"}, nil},
		{"mode upper", `{"clowl":"0.2","mid":"m","ts":1,"p":"DLGT","from":"a","to":"b","cid":"c","body":{"t":"s","d":{"delegation_mode":"TRANSFER"}}}`,
			[]string{"lowercase-delegation-mode"}, func(m *protocol.Message) bool { return clowl.ModeOf(m) == clowl.Transfer }},
		{"unknown members", `{"clowl":"0.2","mid":"m","ts":1,"p":"REQ","from":"a","to":"b","cid":"c","body":{"t":"s","d":{"extra":1},"zz":2},"unknown_top":"ignored"}`,
			[]string{"ignore-unknown-field", "ignore-unknown-field"}, func(m *protocol.Message) bool { return string(m.Payload) == `{"extra":1}` }},
		{"missing mid", `{"clowl":"0.2","ts":1709078400,"p":"REQ","from":"a","to":"b","cid":"c","body":{"t":"s","d":{}}}`,
			[]string{"generate-mid"}, func(m *protocol.Message) bool { return len(m.ID) == 36 && strings.HasPrefix(m.ID, "018ded02-cc00-7") }},
		{"non-string ids and det", `{"clowl":"0.2","mid":"m","ts":1,"tid":123,"pid":456,"det":"yes","p":"REQ","from":"a","to":"b","cid":"c","body":{"t":"s","d":{}}}`,
			[]string{"stringify-tid", "stringify-pid", "coerce-det-to-bool"}, func(m *protocol.Message) bool { return m.RunID == "123" && m.Meta["det"] == true }},
		{"pct clamp", `{"clowl":"0.2","mid":"m","ts":1,"p":"PROG","from":"a","to":"b","cid":"c","body":{"t":"s","d":{"seq":1,"pct":150}}}`,
			[]string{"clamp-pct-range"}, func(m *protocol.Message) bool { return string(m.Payload) == `{"seq":1,"pct":100}` }},
		{"seq, pct strings", `{"clowl":"0.2","mid":"m","ts":1,"p":"PROG","from":"a","to":"b","cid":"c","body":{"t":"s","d":{"seq":"2","pct":"50"}}}`,
			[]string{"numeric-string-to-seq", "numeric-string-to-pct"}, nil},
		{"final yes", `{"clowl":"0.2","mid":"m","ts":1,"p":"PROG","from":"a","to":"b","cid":"c","body":{"t":"s","d":{"final":"yes","pct":10}}}`,
			[]string{"coerce-final-to-bool"}, nil},
		{"no version", `{"mid":"m","ts":1,"p":"REQ","from":"a","to":"b","cid":"c","body":{"t":"s","d":{}}}`,
			[]string{"default-clowl-version"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := clowl.New(nil).Inbound(context.Background(), []byte(c.raw)); err == nil {
				t.Errorf("strict accepts it")
			}
			m := inbound(t, a, []byte(c.raw))
			cs, _ := m.Meta[clowl.MetaCoercions].([]any)
			var reasons []string
			for _, x := range cs {
				reasons = append(reasons, x.(map[string]any)["reason"].(string))
			}
			if strings.Join(reasons, ",") != strings.Join(c.reasons, ",") {
				t.Errorf("coercions %v, want %v", reasons, c.reasons)
			}
			if c.check != nil && !c.check(m) {
				t.Errorf("wrong result: %+v payload %s", m, m.Payload)
			}
		})
	}
	// Not coercible in either mode.
	for _, raw := range []string{
		`{"clowl":"0.2","mid":"m","ts":1709078400.5,"p":"REQ","from":"a","to":"b","cid":"c","body":{"t":"s","d":{}}}`,
		`{"clowl":"0.2","mid":"m","ts":1,"p":"PROG","from":"a","to":"b","cid":"c","body":{"t":"s","d":{"seq":2.5}}}`,
		`{"clowl":"0.2","mid":"m","ts":1,"p":"PROG","from":"a","to":"b","cid":"c","body":{"t":"s","d":{"pct":"abc"}}}`,
		`{"clowl":"0.2","mid":"m","ts":1,"p":"PROG","from":"a","to":"b","cid":"c","body":{"t":"s","d":{"partial":"x"}}}`,
		`{"clowl":"0.2","mid":"m","ts":1,"p":"XXX","from":"a","to":"b","cid":"c","body":{"t":"s","d":{}}}`,
		`{"clowl":"0.2","mid":"m","ts":1,"p":"REQ","from":"","to":"b","cid":"c","body":{"t":"s","d":{}}}`,
		`{"clowl":"0.2","mid":"m","ts":1,"p":"INF","from":"a","to":[],"cid":"c","body":{"t":"s","d":{}}}`,
		`"not-an-object"`,
	} {
		if _, err := a.Inbound(context.Background(), []byte(raw)); err == nil {
			t.Errorf("lenient accepts %s", raw)
		}
	}
	// The generated mid is deterministic: a re-sent message dedups.
	raw := []byte(`{"clowl":"0.2","ts":1709078400,"p":"REQ","from":"a","to":"b","cid":"c","body":{"t":"s","d":{}}}`)
	if inbound(t, a, raw).ID != inbound(t, a, raw).ID {
		t.Error("generated mid differs between two sends")
	}
}

// Schema violations carry a code, the path and the violations.
func TestSchemaErrors(t *testing.T) {
	a := clowl.New(nil)
	for _, c := range []struct {
		raw  []byte
		code protocol.Code
		path string
	}{
		{msg("DLGT", `"body":{"t":"x","d":{}}`), protocol.CodeMissingField, "/body/d/delegation_mode"},
		{msg("DLGT", `"body":{"t":"x","d":{"delegation_mode":"swap"}}`), protocol.CodeInvalidField, "/body/d/delegation_mode"},
		{msg("PROG", `"body":{"t":"x","d":{"pct":101}}`), protocol.CodeInvalidField, "/body/d/pct"},
		{msg("REQ", `"ctx":{"ref":null,"inline":null,"hash":"abc"}`), protocol.CodeInvalidField, "/ctx/hash"},
		{msg("REQ", `"x":1`), protocol.CodeUnknownField, "/x"},
		{msg("REQ", `"det":"yes"`), protocol.CodeWrongType, "/det"},
		{[]byte(`{"clowl":"0.2","mid":"m","ts":-5,"p":"REQ","from":"a","to":"b","cid":"c","body":{"t":"s","d":{}}}`), protocol.CodeInvalidField, "/ts"},
		{[]byte(`{"clowl":"0.2","mid":"m","ts":1,"p":"REQ","from":"a","to":"b","cid":"c","body":{"d":{}}}`), protocol.CodeMissingField, "/body/t"},
		{[]byte(`{"clowl":"0.2","mid":"m","ts":1,"p":"REQ","from":"a","to":"b","cid":"c","body":{"t":"s","d":"x"}}`), protocol.CodeWrongType, "/body/d"},
	} {
		_, err := a.Inbound(context.Background(), c.raw)
		var ae *adapters.Error
		if !errors.As(err, &ae) || ae.Code != c.code || ae.Path != c.path || !errors.Is(err, clowl.ErrSchema) {
			t.Errorf("%s: %v, want %s at %s", c.raw, err, c.code, c.path)
			continue
		}
		var ve *schema.ValidationError
		if !errors.As(err, &ve) || len(ve.Violations) == 0 {
			t.Errorf("no violations in %v", err)
		}
	}
	if _, err := a.Inbound(context.Background(), []byte(`{"clowl":"0.2","mid":"m","mid":"n"}`)); !errors.Is(err, protocol.CodeDuplicateKey) {
		t.Errorf("duplicate key: %v", err)
	}
	big := clowl.New(&clowl.Options{MaxBytes: 64})
	if _, err := big.Inbound(context.Background(), msg("REQ", "")); !errors.Is(err, protocol.CodeTooLarge) {
		t.Errorf("too large: %v", err)
	}
	if _, err := a.Inbound(context.Background(), []byte(`{"clowl":"0.2","mid":"m","ts":253402300800,"p":"REQ","from":"a","to":"b","cid":"c","body":{"t":"s","d":{}}}`)); !errors.Is(err, protocol.CodeInvalidField) {
		t.Errorf("year 10000: %v", err)
	}
}

func TestAuth(t *testing.T) {
	raw := msg("REQ", `"auth":"tok-1"`)
	m := inbound(t, clowl.New(nil), raw)
	if m.Security == nil || m.Security.Auth.Scheme != "bearer" || m.Security.Auth.Sig != "tok-1" {
		t.Fatalf("auth %+v", m.Security)
	}
	if out := outbound(t, clowl.New(nil), m); !strings.Contains(string(out), `"auth":"tok-1"`) {
		t.Errorf("auth not sent back: %s", out)
	}
	m = inbound(t, clowl.New(&clowl.Options{RedactAuth: true}), raw)
	if m.Security.Auth.Sig != "" {
		t.Errorf("redacted: %+v", m.Security.Auth)
	}
	deny := clowl.New(&clowl.Options{Authenticate: func(_ context.Context, from, token string) error {
		if from == "oscar" && token == "tok-1" {
			return nil
		}
		return errors.New("bad token")
	}})
	inbound(t, deny, raw)
	_, err := deny.Inbound(context.Background(), msg("REQ", `"auth":"forged"`))
	if !errors.Is(err, protocol.CodeUnauthorized) || clowl.CodeFor(protocol.CodeOf(err)) != "E002" {
		t.Errorf("forged token: %v", err)
	}
}

// Outbound of envelopes that did not come from CLowl: router events.
func TestOutboundOfClutchEvents(t *testing.T) {
	a := clowl.New(&clowl.Options{Peers: []string{"agent:radar"}})
	ids := protocol.NewIDs(nil)
	req := inbound(t, a, msg("REQ", `"body":{"t":"search","d":{"q":"x"}}`))

	accept := ids.Reply(req, protocol.TypeTaskAccept, "agent:radar")
	var body map[string]any
	decode := func(b []byte) map[string]any {
		body = nil
		if err := json.Unmarshal(b, &body); err != nil {
			t.Fatal(err)
		}
		return body
	}
	got := decode(outbound(t, a, accept))
	if got["p"] != "ACK" || got["pid"] != "m1" || got["tid"] != "t1" || got["cid"] != "c1" || got["to"] != "oscar" || got["from"] != "radar" {
		t.Errorf("accept: %v", got)
	}

	timeout := ids.Reply(req, protocol.TypeTaskTimeout, "agent:orchestrator")
	_ = timeout.SetPayload(protocol.ErrorPayload{Code: protocol.CodeTimeout, Message: "max_runtime_sec of 1s passed", Retryable: true,
		Details: map[string]any{"max_runtime_sec": 1}})
	got = decode(outbound(t, a, timeout))
	d := got["body"].(map[string]any)["d"].(map[string]any)
	if got["p"] != "ERR" || d["code"] != "E006" || d["retry"] != true || d["max_runtime_sec"] != 1.0 {
		t.Errorf("timeout: %v", got)
	}

	sub := ids.NewMessage(protocol.TypeTaskRequest, "agent:oscar")
	sub.ParentTaskID = req.TaskID
	sub.To = []protocol.Participant{{AgentID: "agent:radar"}}
	sub.Domain = "research"
	_ = sub.SetPayload(map[string]any{"q": "y"})
	got = decode(outbound(t, a, sub))
	d = got["body"].(map[string]any)["d"].(map[string]any)
	if got["p"] != "DLGT" || d["delegation_mode"] != "assist" || got["body"].(map[string]any)["t"] != "research" {
		t.Errorf("subtask: %v", got)
	}
	if !a.CanHandle(sub) {
		t.Error("CanHandle refuses a message to a peer")
	}

	sys := ids.NewMessage(protocol.TypeChatSystem, "agent:orchestrator")
	_ = sys.SetPayload("maintenance at noon")
	got = decode(outbound(t, a, sys))
	if got["p"] != "INF" || got["to"] != "*" || got["body"].(map[string]any)["d"].(map[string]any)["value"] != "maintenance at noon" {
		t.Errorf("chat.system: %v", got)
	}

	card := &protocol.AgentCard{V: protocol.Version, AgentID: "agent:ken", Capabilities: []protocol.Capability{{ID: "skill:research"}}}
	reg := ids.NewMessage(protocol.TypeAgentRegister, "agent:ken")
	cb, _ := protocol.EncodeAgentCard(card)
	reg.Payload = cb
	got = decode(outbound(t, a, reg))
	if got["p"] != "CAPS" || got["to"] != "*" {
		t.Errorf("register: %v", got)
	}

	cancel := ids.Reply(req, protocol.TypeTaskCancel, "agent:orchestrator")
	_ = cancel.SetPayload(protocol.ErrorPayload{Code: protocol.CodeCancelled, Message: "cancelled by the caller"})
	got = decode(outbound(t, a, cancel))
	if got["p"] != "CNCL" || got["body"].(map[string]any)["d"].(map[string]any)["reason"] != "cancelled by the caller" {
		t.Errorf("cancel: %v", got)
	}

	for _, typ := range []protocol.Type{protocol.TypeToolCall, protocol.TypeAgentHeartbeat, protocol.TypeRoutingDecision, "x.acme.thing"} {
		m := ids.NewMessage(typ, "agent:a")
		m.To = []protocol.Participant{{AgentID: "agent:radar"}}
		if a.CanHandle(m) {
			t.Errorf("CanHandle(%s)", typ)
		}
		if _, err := a.Outbound(context.Background(), m); !errors.Is(err, clowl.ErrNotMappable) || !errors.Is(err, adapters.ErrOutbound) || protocol.CodeOf(err) != protocol.CodeUnsupportedTask {
			t.Errorf("%s: %v", typ, err)
		}
	}
	long := ids.NewMessage(protocol.TypeTaskResult, "agent:a")
	long.ID = strings.Repeat("x", 200)
	if _, err := a.Outbound(context.Background(), long); !errors.Is(err, protocol.CodeInvalidField) {
		t.Errorf("200-byte id: %v", err)
	}
}

func TestEnglish(t *testing.T) {
	var lines []string
	for _, c := range examples(t) {
		s, err := clowl.Translate(c.Raw)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := clowl.Translate(c.Raw)
		if s != again {
			t.Errorf("%s: not deterministic", c.Name)
		}
		lines = append(lines, c.Name+"\t"+s)
	}
	got := strings.Join(lines, "\n") + "\n"
	if *update {
		if err := os.WriteFile("testdata/english.golden", []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile("testdata/english.golden")
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("translations changed (go test -update to accept):\n%s", got)
	}
	// Member order does not change the sentence.
	a, _ := clowl.Translate(msg("DONE", `"body":{"t":"s","d":{"a":1,"b":[2]}}`))
	b, _ := clowl.Translate(msg("DONE", `"body":{"t":"s","d":{"b":[2],"a":1}}`))
	if a != b {
		t.Errorf("%q != %q", a, b)
	}
	if _, err := clowl.Translate([]byte("{")); err == nil {
		t.Error("Translate of garbage")
	}
	// An envelope that came from CLowl translates as the CLowl message did.
	ad := clowl.New(nil)
	for _, c := range examples(t) {
		want, _ := clowl.Translate(c.Raw)
		if got, err := clowl.EnglishOf(inbound(t, ad, c.Raw)); err != nil || got != want {
			t.Errorf("%s: EnglishOf %q, %v\nwant %q", c.Name, got, err, want)
		}
	}
	if _, err := clowl.EnglishOf(protocol.NewMessage(protocol.TypeToolCall, "agent:a")); !errors.Is(err, clowl.ErrNotMappable) {
		t.Errorf("EnglishOf(tool.call): %v", err)
	}
}

func TestSystemPrompt(t *testing.T) {
	want, err := os.ReadFile("testdata/system-prompt-seed003.txt")
	if err != nil {
		t.Fatal(err)
	}
	if clowl.SystemPrompt != strings.TrimRight(string(want), "\n") {
		t.Errorf("SystemPrompt differs from the spec's text")
	}
	// The spec's prompt makes v0.1 messages: refused with E014.
	_, err = clowl.New(nil).Inbound(context.Background(), []byte(`{"cl":"0.1","mid":"m1","p":"REQ","from":"a","to":"b","cid":"c","body":{"t":"search","d":{}},"ctx":"r"}`))
	if clowl.CodeFor(protocol.CodeOf(err)) != "E014" {
		t.Errorf("v0.1 output: %v", err)
	}
}

func TestDetect(t *testing.T) {
	reg, err := adapters.NewRegistry(clowl.New(nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range examples(t) {
		if _, err := reg.ForRaw(c.Raw); err != nil {
			t.Errorf("%s not detected", c.Name)
		}
	}
	for _, s := range []string{`{"v":"clutch/0.1","p":1}`, `{"protocol":"multiagent-1.0"}`, `[]`, ``} {
		if _, err := reg.ForRaw([]byte(s)); err == nil {
			t.Errorf("%s detected", s)
		}
	}
}
