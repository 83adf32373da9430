package mcp

import (
	"context"
	"net/http"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/clutchprotocol/clutch/internal/traceparent"
	"github.com/clutchprotocol/clutch/protocol"
)

// Trace context crosses MCP as a W3C traceparent, in the tools/call's
// _meta (any transport) and, over Streamable HTTP, as a header too: a
// call sends the trace of its tool.call event (the execute_tool span when
// package telemetry observes the router), and submit_task reads the
// caller's from _meta, else from the HTTP request, into the task.request
// it submits.

type traceKey struct{}

// withTraceparent returns ctx carrying the traceparent value of tr for
// the call made with it ("" adds nothing).
func withTraceparent(ctx context.Context, tr *protocol.Trace) context.Context {
	if v := traceparent.Format(tr); v != "" {
		return context.WithValue(ctx, traceKey{}, v)
	}
	return ctx
}

// traceparentOf returns the traceparent value ctx carries, or "".
func traceparentOf(ctx context.Context) string {
	v, _ := ctx.Value(traceKey{}).(string)
	return v
}

// setTraceparent sets the traceparent header of a request to a Streamable
// HTTP server from its context; req must be a clone the caller owns.
func setTraceparent(req *http.Request) {
	if v := traceparentOf(req.Context()); v != "" && req.Header.Get(traceparent.Header) == "" {
		req.Header.Set(traceparent.Header, v)
	}
}

// callerTrace returns the caller's trace of a tools/call: _meta.traceparent,
// else the traceparent header of the HTTP request; nil when neither holds a
// valid one.
func callerTrace(req *sdk.CallToolRequest) *protocol.Trace {
	if req == nil {
		return nil
	}
	if req.Params != nil {
		if v, ok := req.Params.GetMeta()[traceparent.Header].(string); ok {
			if tr, ok := traceparent.Parse(v); ok {
				return tr
			}
		}
	}
	if req.Extra != nil && req.Extra.Header != nil {
		if tr, ok := traceparent.Parse(req.Extra.Header.Get(traceparent.Header)); ok {
			return tr
		}
	}
	return nil
}
