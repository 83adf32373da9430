package multiagent

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/adapters/internal/rawjson"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/clutchprotocol/clutch/protocol"
)

// The per-model prompt renderings of docs/protocol.md §12 ("Adapters (one file per
// model)": the fromEnvelope functions of adapters/claude.ts, gpt5.ts and
// gemini.ts), as plain functions over an envelope, for LLM-backed agents:
// a handler renders its task.request with the function of its model.
// Each reads the multiagent-1.0 view of the message (what Outbound would
// send: intent, task, inputs.context, content.text and content.data) and
// follows the TypeScript exactly, with two differences: JSON is written
// as the message holds it (member order and number spelling kept, no
// re-escaping), and an object or array interpolated into text is written
// as JSON where JavaScript would write "[object Object]".

// ClaudePrompt renders m the way adapters/claude.ts does ("Claude wants a
// compact, role-labeled prompt"):
//
//	[INTENT:<intent>] [TASK:<task>]
//	CONTEXT:
//	<inputs.context, or "">
//	CONTENT:
//	<content.text, or content.data as JSON, or {}>
func ClaudePrompt(m *protocol.Message) (string, error) {
	e, err := view(m)
	if err != nil {
		return "", err
	}
	text, ok := e.field(e.content, "text")
	body := ""
	if ok {
		body = interpolate(text)
	} else {
		body = string(e.data())
	}
	return "[INTENT:" + e.intent + "] [TASK:" + e.task + "]\nCONTEXT:\n" + e.context("") + "\nCONTENT:\n" + body, nil
}

// GPTPrompt renders m the way adapters/gpt5.ts does: a system prompt
// naming the intent, and a user prompt that is the JSON {task, context}
// (context null when there is none).
func GPTPrompt(m *protocol.Message) (system, user string, err error) {
	e, err := view(m)
	if err != nil {
		return "", "", err
	}
	ctx, ok := e.field(e.inputs, "context")
	if !ok {
		ctx = []byte("null")
	}
	task, _ := jsontext.AppendQuote(nil, e.task)
	u := append(append(append(append([]byte(`{"task":`), task...), `,"context":`...), ctx...), '}')
	return "You speak Envelope v1. Intent=" + e.intent + ". Return JSON only.", string(u), nil
}

// GeminiPrompt renders m the way adapters/gemini.ts does ("Gemini likes
// concise tool-centric prompts"):
//
//	Goal: <task>
//	Intent: <intent>
//	Context: <inputs.context, or n/a>
//	Data:<content.data as JSON indented by two spaces, or {}>
func GeminiPrompt(m *protocol.Message) (string, error) {
	e, err := view(m)
	if err != nil {
		return "", err
	}
	var data bytes.Buffer
	if err := json.Indent(&data, e.data(), "", "  "); err != nil {
		data.Reset()
		data.Write(e.data())
	}
	return "Goal: " + e.task + "\nIntent: " + e.intent + "\nContext: " + e.context("n/a") + "\nData:" + data.String(), nil
}

// view maps m as Outbound does, without an Index.
func view(m *protocol.Message) (*outEnv, error) {
	return plain.fromEnvelope(context.Background(), m)
}

var plain = New(&Options{Index: noIndex{}})

type noIndex struct{}

func (noIndex) Lookup(context.Context, string) (adapters.Link, bool) { return adapters.Link{}, false }
func (noIndex) Remember(context.Context, string, adapters.Link)      {}

// field returns the member name of a JSON object; null counts as absent
// (JavaScript's ?? operator).
func (e *outEnv) field(obj []byte, name string) ([]byte, bool) {
	if obj == nil {
		return nil, false
	}
	v := member0(obj, name)
	if !present(v) {
		return nil, false
	}
	return rawjson.Compact(v), true
}

// context is inputs.context interpolated, or def.
func (e *outEnv) context(def string) string {
	v, ok := e.field(e.inputs, "context")
	if !ok {
		return def
	}
	return interpolate(v)
}

// data is content.data as compact JSON, or {}.
func (e *outEnv) data() []byte {
	if v, ok := e.field(e.content, "data"); ok {
		return v
	}
	return []byte("{}")
}

// interpolate writes a JSON value as a JavaScript template literal would:
// a string as its text, other values as JSON.
func interpolate(v []byte) string {
	if s, ok := rawjson.Str(v); ok {
		return s
	}
	return string(v)
}
