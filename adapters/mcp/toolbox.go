package mcp

import (
	"context"
	"errors"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
)

// Toolbox is a Client bound to one task: what a handler hands its LLM.
// Tools lists only the tools of servers the task's policy allows, and
// calls go through [Client.Call] on the task's behalf.
type Toolbox struct {
	c *Client
	t *router.Task
}

// Toolbox returns the toolbox of task t.
func (c *Client) Toolbox(t *router.Task) *Toolbox { return &Toolbox{c: c, t: t} }

// Allowed reports whether the task may use the server (docs/protocol.md §6: the
// request's tool allowlist and the agent card's tools).
func (b *Toolbox) Allowed(server string) bool { return policyDenied(b.t, ServerID(server)) == "" }

// Tools returns the tools of the servers the task may use, with their
// LLM names. Servers it may not use are not contacted. As with
// Client.LLMTools, unreachable servers are left out and their errors
// joined.
func (b *Toolbox) Tools(ctx context.Context) ([]Tool, error) {
	var out []Tool
	var errs []error
	for _, s := range b.c.order {
		if !b.Allowed(s.cfg.Name) {
			continue
		}
		ts, err := s.toolSet(ctx, false)
		if err != nil {
			errs = append(errs, s.listError(err))
			continue
		}
		out = append(out, ts.list...)
	}
	return out, errors.Join(errs...)
}

// Call calls a tool for the task; see Client.Call.
func (b *Toolbox) Call(ctx context.Context, server, tool string, args any, opts *CallOptions) (*ToolResult, error) {
	return b.c.Call(ctx, b.t, server, tool, args, opts)
}

// CallLLM calls a tool by the flattened name an LLM chose
// ("mcp_<server>_<tool>"). A name that maps to no server is recorded as a
// tool.error TOOL_NOT_FOUND listing the tools the task may use.
func (b *Toolbox) CallLLM(ctx context.Context, llmName string, args any, opts *CallOptions) (*ToolResult, error) {
	server, tool, ok := b.c.Resolve(llmName)
	if !ok {
		oc := outcome{code: protocol.CodeToolNotFound, message: "no tool is named " + llmName}
		if tools, _ := b.Tools(ctx); len(tools) > 0 {
			names := make([]string, 0, len(tools))
			for _, t := range tools {
				names = append(names, t.LLMName)
			}
			oc.detail("available_tools", names)
		}
		return nil, b.c.fail(ctx, b.t, "", oc, map[string]any{"name": llmName}, nil)
	}
	return b.c.Call(ctx, b.t, server, tool, args, opts)
}
