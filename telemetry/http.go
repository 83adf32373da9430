package telemetry

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
)

// Extract returns ctx with the remote span context of the W3C
// "traceparent" (and "tracestate") header of h, when it holds a valid one;
// ctx otherwise. A task submitted with the returned context, whose request
// carries no trace ids of its own, continues the caller's trace.
func Extract(ctx context.Context, h http.Header) context.Context {
	return propagation.TraceContext{}.Extract(ctx, propagation.HeaderCarrier(h))
}

// Handler is HTTP middleware that does Extract for every request: the
// handler's request context carries the caller's span context, so the
// tasks it submits continue the caller's trace.
func Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("traceparent") != "" {
			r = r.WithContext(Extract(r.Context(), r.Header))
		}
		next.ServeHTTP(w, r)
	})
}
