package a2a

import (
	"context"
	"net/http"

	"github.com/clutchprotocol/clutch/internal/traceparent"
	"github.com/clutchprotocol/clutch/protocol"
)

// Trace context crosses A2A as the W3C traceparent header: a forwarded
// task sends the trace of its attempt (router.Task.Trace), and a request
// this Server receives with a valid traceparent becomes a task.request
// whose trace ids are the caller's, so the task continues the caller's
// trace (see package telemetry).

// The context keys of the outbound traceparent value and of the
// inbound caller's trace.
type (
	outTraceKey struct{}
	inTraceKey  struct{}
)

// withTraceparent returns ctx carrying the traceparent value of tr for
// the outbound requests made with it ("" adds nothing).
func withTraceparent(ctx context.Context, tr *protocol.Trace) context.Context {
	if v := traceparent.Format(tr); v != "" {
		return context.WithValue(ctx, outTraceKey{}, v)
	}
	return ctx
}

// setTraceparent sets the traceparent header of an outbound request from
// its context; it reports whether it did (the request is then a clone).
func setTraceparent(req *http.Request) (*http.Request, bool) {
	v, _ := req.Context().Value(outTraceKey{}).(string)
	if v == "" || req.Header.Get(traceparent.Header) != "" {
		return req, false
	}
	req = req.Clone(req.Context())
	req.Header.Set(traceparent.Header, v)
	return req, true
}

// withInboundTrace puts the trace of a valid traceparent header of r in
// its context, for the requests its handlers submit.
func withInboundTrace(r *http.Request) *http.Request {
	v := r.Header.Get(traceparent.Header)
	if v == "" {
		return r
	}
	tr, ok := traceparent.Parse(v)
	if !ok {
		return r // malformed: ignored, as W3C Trace Context asks
	}
	return r.WithContext(context.WithValue(r.Context(), inTraceKey{}, tr))
}

// inboundTrace returns the caller's trace put in ctx by withInboundTrace,
// or nil.
func inboundTrace(ctx context.Context) *protocol.Trace {
	tr, _ := ctx.Value(inTraceKey{}).(*protocol.Trace)
	return tr
}
