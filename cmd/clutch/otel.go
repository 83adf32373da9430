package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"

	"github.com/clutchprotocol/clutch/telemetry"
)

// otlpTelemetry returns package telemetry over OpenTelemetry SDK providers
// that export traces and metrics over OTLP/HTTP when
// OTEL_EXPORTER_OTLP_ENDPOINT is set (the exporters read the standard
// OTEL_EXPORTER_OTLP_* variables), and nil otherwise. shutdown flushes
// and stops the providers.
func otlpTelemetry(ctx context.Context, logger *slog.Logger) (tel *telemetry.Telemetry, shutdown func(context.Context) error, err error) {
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" {
		return nil, func(context.Context) error { return nil }, nil
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName("clutch")))
	if err != nil {
		return nil, nil, err
	}
	spans, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, nil, err
	}
	metrics, err := otlpmetrichttp.New(ctx)
	if err != nil {
		return nil, nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithBatcher(spans))
	mp := metric.NewMeterProvider(metric.WithResource(res),
		metric.WithReader(metric.NewPeriodicReader(metrics, metric.WithInterval(30*time.Second))))
	shutdown = func(ctx context.Context) error { return errors.Join(tp.Shutdown(ctx), mp.Shutdown(ctx)) }
	tel, err = telemetry.New(&telemetry.Options{TracerProvider: tp, MeterProvider: mp, Logger: logger})
	if err != nil {
		_ = shutdown(ctx)
		return nil, nil, err
	}
	return tel, shutdown, nil
}
