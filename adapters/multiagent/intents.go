package multiagent

import (
	"strings"

	"github.com/clutchprotocol/clutch/protocol"
)

// The ten intents of multiagent-1.0 (docs/protocol.md §12, "Minimal TypeScript types").
const (
	Plan      = "plan"
	Decompose = "decompose"
	Execute   = "execute"
	Route     = "route"
	Retrieve  = "retrieve"
	Analyze   = "analyze"
	Summarize = "summarize"
	Reflect   = "reflect"
	Finalize  = "finalize"
	ToolCall  = "tool.call"
)

// IntentInfo is how an intent maps to the envelope: its domain, the type
// of a message asking for it (role user or system) and the type of a
// message answering it (role agent or tool).
type IntentInfo struct {
	Intent  string
	Domain  string
	Request protocol.Type
	Answer  protocol.Type
}

var intentTable = []IntentInfo{
	{Plan, "planning", protocol.TypeTaskRequest, protocol.TypeTaskResult},
	{Decompose, "planning", protocol.TypeTaskRequest, protocol.TypeTaskResult},
	{Execute, "execution", protocol.TypeTaskRequest, protocol.TypeTaskResult},
	{Route, "routing", protocol.TypeTaskRequest, protocol.TypeTaskResult},
	{Retrieve, "retrieval", protocol.TypeTaskRequest, protocol.TypeTaskResult},
	{Analyze, "analysis", protocol.TypeTaskRequest, protocol.TypeTaskResult},
	{Summarize, "summarization", protocol.TypeTaskRequest, protocol.TypeTaskResult},
	{Reflect, "review", protocol.TypeTaskRequest, protocol.TypeTaskResult},
	{Finalize, "finalization", protocol.TypeTaskRequest, protocol.TypeTaskResult},
	{ToolCall, "tools", protocol.TypeToolCall, protocol.TypeToolResult},
}

// Intents returns the table of the ten intents, in the order of docs/protocol.md §12.
func Intents() []IntentInfo { return append([]IntentInfo(nil), intentTable...) }

// LookupIntent returns the table row of an intent. An intent outside the
// ten is not an error on the wire (the adapter maps it like a task with
// no domain); ok says whether it is one of the ten.
func LookupIntent(intent string) (IntentInfo, bool) {
	for _, i := range intentTable {
		if i.Intent == intent {
			return i, true
		}
	}
	return IntentInfo{Intent: intent, Request: protocol.TypeTaskRequest, Answer: protocol.TypeTaskResult}, false
}

// PayloadType returns the payload_type of an intent's messages:
// "multiagent.<intent>.v1" with the dot of tool.call written "_"
// ("multiagent.tool_call.v1"); "" for an intent that cannot be part of a
// payload_type.
func PayloadType(intent string) string {
	pt := "multiagent." + strings.ReplaceAll(intent, ".", "_") + ".v1"
	if !protocol.ValidPayloadType(pt) || strings.Count(pt, ".") != 2 {
		return ""
	}
	return pt
}

// intentOfPayloadType is the inverse of PayloadType.
func intentOfPayloadType(pt string) string {
	rest, ok := strings.CutPrefix(pt, "multiagent.")
	if !ok {
		return ""
	}
	name, ok := strings.CutSuffix(rest, ".v1")
	if !ok || name == "" || strings.Contains(name, ".") {
		return ""
	}
	if name == "tool_call" {
		return ToolCall
	}
	return name
}

// intentOfDomain maps a domain back to the first intent of the table
// with that domain.
func intentOfDomain(d string) string {
	for _, i := range intentTable {
		if i.Domain == d {
			return i.Intent
		}
	}
	return ""
}
