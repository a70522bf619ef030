/**
 * The OpenTelemetry SDK wiring behind `Otlp.layer`, in a module of its own so that it is loaded only when
 * telemetry is on. Spans go through a batch processor and metrics through a periodic reader, both to OTLP/HTTP
 * JSON exporters; @effect/opentelemetry's NodeSdk makes them Effect's tracer and metric producer, and flushes
 * both when the layer closes (bounded by `shutdownTimeout`).
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { OTLPMetricExporter } from "@opentelemetry/exporter-metrics-otlp-http"
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http"
import { PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics"
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Duration, Layer } from "effect"

/** What the exporters need of `Otlp.Settings` (declared here: this module is loaded by `Otlp`, never the reverse). */
export interface ExportSettings {
  readonly tracesUrl: string | null
  readonly metricsUrl: string | null
  readonly headers: Readonly<Record<string, string>>
  readonly serviceName: string
  readonly metricExportIntervalMs: number
  readonly shutdownTimeout: Duration.DurationInput
}

export const layer = (settings: ExportSettings): Layer.Layer<never> =>
  Layer.discard(
    NodeSdk.layer(() => {
      const headers = { ...settings.headers }
      // An export gives up (retries included) within the shutdown's bound: an export abandoned at exit would
      // otherwise keep retrying, and keep the process alive, for the exporter's default 10 s.
      const timeoutMillis = Duration.toMillis(settings.shutdownTimeout)
      return {
        resource: { serviceName: settings.serviceName },
        spanProcessor: settings.tracesUrl === null
          ? undefined
          : new BatchSpanProcessor(new OTLPTraceExporter({ url: settings.tracesUrl, headers, timeoutMillis })),
        metricReader: settings.metricsUrl === null ? undefined : new PeriodicExportingMetricReader({
          exporter: new OTLPMetricExporter({ url: settings.metricsUrl, headers, timeoutMillis }),
          exportIntervalMillis: settings.metricExportIntervalMs,
          // The reader's export timeout may not exceed its interval.
          exportTimeoutMillis: Math.min(settings.metricExportIntervalMs, 30_000)
        }),
        shutdownTimeout: settings.shutdownTimeout
      }
    })
  )
