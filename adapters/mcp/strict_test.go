package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/clutchprotocol/clutch/adapters/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestToolSchemasSingleTyped walks the input schema of every tool the
// server lists, as a host receives it, and fails on what a strict client
// (the MCP Inspector's --strict, hosts that map tool schemas onto
// Gemini-style single-type declarations, VS Code's tool validator)
// refuses: a "type" that is not one string, a schema without a type (nor
// an anyOf of typed branches), a bare true/false schema where a member's
// schema belongs, an array without "items", a root that is not an object,
// a "required" name without its property, "nullable" and "const".
func TestToolSchemasSingleTyped(t *testing.T) {
	tm := newTeam(t)
	cs, _ := tm.connect(t)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) < 8 {
		t.Fatalf("%d tools listed", len(res.Tools))
	}
	for _, tool := range res.Tools {
		b, err := json.Marshal(tool.InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		var root map[string]any
		if err := json.Unmarshal(b, &root); err != nil {
			t.Fatalf("%s: input schema %s is not an object", tool.Name, b)
		}
		if root["type"] != "object" {
			t.Errorf("%s: the input schema's type is %v, want \"object\"", tool.Name, root["type"])
		}
		for _, p := range strictProblems(root, "") {
			t.Errorf("%s: %s", tool.Name, p)
		}
	}
	// The check itself finds what it is for.
	bad := map[string]any{"type": "object", "required": []any{"x", "gone"}, "properties": map[string]any{
		"x": map[string]any{"type": []any{"null", "array"}}, "y": true, "z": map[string]any{"description": "untyped"},
	}}
	if got := strictProblems(bad, ""); len(got) != 4 {
		t.Errorf("the check found %d problems in a bad schema, want 4: %q", len(got), got)
	}
}

// strictProblems lists what a strict client refuses in schema s at path.
func strictProblems(s map[string]any, path string) []string {
	var out []string
	at := func(format string, args ...any) { out = append(out, "at "+path+"/: "+fmt.Sprintf(format, args...)) }
	typ, hasType := s["type"]
	anyOf, hasAnyOf := s["anyOf"].([]any)
	switch t := typ.(type) {
	case string:
	case nil:
		if !hasAnyOf {
			at("no type")
		}
	default:
		at("type %v is not one string", t)
	}
	for _, k := range []string{"nullable", "const", "oneOf", "allOf", "$ref"} {
		if _, ok := s[k]; ok {
			at("uses %s", k)
		}
	}
	if hasType && typ == "array" {
		items, ok := s["items"].(map[string]any)
		if !ok {
			at("an array without an items schema")
		} else {
			out = append(out, strictProblems(items, path+"/items")...)
		}
	}
	props, _ := s["properties"].(map[string]any)
	for _, name := range sortedKeys(props) {
		p, ok := props[name].(map[string]any)
		if !ok {
			at("property %q is %v, not a schema", name, props[name])
			continue
		}
		out = append(out, strictProblems(p, path+"/properties/"+name)...)
	}
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			if _, ok := props[r.(string)]; !ok {
				at("required %q is not a property", r)
			}
		}
	}
	for i, b := range anyOf {
		bs, ok := b.(map[string]any)
		if !ok {
			at("anyOf[%d] is not a schema", i)
			continue
		}
		out = append(out, strictProblems(bs, fmt.Sprintf("%s/anyOf/%d", path, i))...)
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// TestOptionalNullIsNotGiven: with one type per member, a host that sends
// null for a member it does not give is still understood.
func TestOptionalNullIsNotGiven(t *testing.T) {
	tm := newTeam(t)
	cs, _ := tm.connect(t)
	sc, isErr := callTool(t, cs, mcp.ToolSubmitTask, map[string]any{
		"payload_type": "research.query.v1", "payload": map[string]any{"query": "rails"},
		"requires": []string{"skill:research"}, "prefers": nil, "to": nil, "tool_allowlist": nil, "domain": nil, "wait_sec": nil,
	}, false)
	if isErr || sc["status"] != "result" {
		t.Fatalf("submit_task with null members: %v", sc)
	}
}

// TestToolErrorTexts: a tool error says what is wrong once, without Go
// package prefixes or HTML escapes, and its violations have lower-case
// members.
func TestToolErrorTexts(t *testing.T) {
	tm := newTeam(t)
	cs, _ := tm.connect(t)
	sc, isErr := callTool(t, cs, mcp.ToolSubmitTask, map[string]any{"payload_type": "research.query.v2", "payload": map[string]any{}}, false)
	if !isErr || sc["code"] != "VALIDATION" || sc["error"] != `unknown payload type "research.query.v2"` {
		t.Errorf("unknown payload type: %v", sc)
	}
	sc, isErr = callTool(t, cs, mcp.ToolSubmitTask, map[string]any{"payload_type": "research.query.v1", "payload": map[string]any{"query": ""}}, false)
	details, _ := sc["details"].(map[string]any)
	vs, _ := details["violations"].([]any)
	if !isErr || len(vs) == 0 {
		t.Fatalf("invalid payload: %v", sc)
	}
	for _, v := range vs {
		m := v.(map[string]any)
		if _, ok := m["path"]; !ok || m["keyword"] == nil || m["message"] == nil || len(m) != 3 {
			t.Errorf("violation %v: want the members path, keyword and message", m)
		}
	}
	if msg := sc["error"].(string); strings.Contains(msg, "schema: ") || strings.Contains(msg, "router: ") {
		t.Errorf("invalid payload: the message has package prefixes: %q", msg)
	}
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: mcp.ToolGetTaskTree, Arguments: map[string]any{"run_id": "run_<x>"}})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(*sdk.TextContent).Text; !strings.Contains(text, "run_<x>") || strings.Contains(text, `\u003c`) {
		t.Errorf("the text block escapes HTML: %s", text)
	}
}
