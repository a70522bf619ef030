/**
 * `@flotta/core/Otlp`: the fleet's spans and metrics exported over OpenTelemetry (OTLP/HTTP, JSON), switched on
 * by the config's `telemetry` section or the standard `OTEL_EXPORTER_OTLP_*` environment, and off when neither
 * names an endpoint. `layer(section)` is provided at the edge, beneath everything that makes spans; closing it
 * flushes what is buffered, so even a short `flotta run` exports its spans.
 *
 * The OpenTelemetry SDK is loaded only when telemetry is on (`internal/otlpSdk.ts`): a fleet that does not
 * export pays nothing for it at start-up.
 */
import { Config, Effect, Layer, Option, Schema } from "effect"
import type { Duration } from "effect"
import * as Telemetry from "./Telemetry.js"

const isHttpUrl = (text: string) => {
  if (!URL.canParse(text)) return false
  const url = new URL(text)
  return (url.protocol === "http:" || url.protocol === "https:") && url.search === "" && url.hash === ""
}

/** An `http://` or `https://` URL without a query or fragment. */
export const HttpUrl = Schema.String.pipe(
  Schema.filter((text) => isHttpUrl(text) || "expected an http:// or https:// URL (like http://127.0.0.1:4318)")
)

/** The config file's `telemetry` section. */
export const FileSection = Schema.Struct({
  otlp: Schema.optionalWith(HttpUrl, { exact: true }).annotations({
    description: "The collector's base URL (`http://` or `https://`): spans go to `<otlp>/v1/traces`, metrics to " +
      "`<otlp>/v1/metrics`. It wins over `OTEL_EXPORTER_OTLP_ENDPOINT`."
  }),
  children: Schema.optionalWith(Schema.Boolean, { exact: true }).annotations({
    description: "`true`: each child `claude` process exports its own telemetry there too, under the fleet's spans."
  }),
  serviceName: Schema.optionalWith(Schema.String.pipe(Schema.minLength(1)), { exact: true }).annotations({
    description: "The `service.name` of the fleet's spans and metrics (default `flotta`, or `OTEL_SERVICE_NAME`)."
  }),
  headers: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.String }), { exact: true })
    .annotations({
      description: "Sent with every export (an API key, say), over any in `OTEL_EXPORTER_OTLP_HEADERS`."
    })
})
export type FileSection = typeof FileSection.Type

/** A URL that cannot be exported to; `field` names where it came from (`telemetry.otlp`, or the variable). */
export class OtlpConfigError extends Schema.TaggedError<OtlpConfigError>()("OtlpConfigError", {
  field: Schema.String,
  value: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `${this.field}: ${this.reason}, got ${JSON.stringify(this.value)}`
  }
}

/** What code (tests, mostly) may set beyond the config. */
export interface Options {
  /** How often metrics are exported (default `OTEL_METRIC_EXPORT_INTERVAL`, else 60 s); they are also at close. */
  readonly metricExportIntervalMs?: number
  /**
   * How long closing may take to flush, and one export with its retries (default 3 s): a collector that is down
   * holds up an exit by about that much, never the exporter's default 10 s per signal.
   */
  readonly shutdownTimeout?: Duration.DurationInput
}

/** Where and how the fleet exports: the section and the environment, resolved. */
export interface Settings {
  /** Full URL of the trace export, or null: no spans are exported. */
  readonly tracesUrl: string | null
  /** Full URL of the metric export, or null: no metrics are exported. */
  readonly metricsUrl: string | null
  /** The base URL, as children get it (`OTEL_EXPORTER_OTLP_ENDPOINT`); null when only per-signal URLs are set. */
  readonly endpoint: string | null
  readonly headers: Readonly<Record<string, string>>
  readonly serviceName: string
  readonly children: boolean
  readonly metricExportIntervalMs: number
  readonly shutdownTimeout: Duration.DurationInput
}

const env = (name: string) =>
  Config.option(Config.string(name)).pipe(
    Effect.map(Option.filter((value) => value.trim().length > 0)),
    Effect.map(Option.map((value) => value.trim())),
    Effect.orElseSucceed(() => Option.none<string>())
  )

const checked = (field: string, value: string) =>
  isHttpUrl(value)
    ? Effect.succeed(value)
    : new OtlpConfigError({ field, value, reason: "expected an http:// or https:// URL (like http://127.0.0.1:4318)" })

/** `<base>/v1/<signal>`, as OTLP/HTTP wants it (a base with a path keeps it: `http://host/otlp/v1/traces`). */
export const signalUrl = (base: string, signal: "traces" | "metrics" | "logs") =>
  `${base.replace(/\/+$/, "")}/v1/${signal}`

/** `OTEL_EXPORTER_OTLP_HEADERS`: `key=value` pairs, comma separated, values percent-encoded. */
export const parseHeaders = (text: string): Record<string, string> => {
  const headers: Record<string, string> = {}
  for (const pair of text.split(",")) {
    const at = pair.indexOf("=")
    if (at <= 0) continue
    const key = pair.slice(0, at).trim()
    const raw = pair.slice(at + 1).trim()
    if (key.length === 0) continue
    try {
      headers[key] = decodeURIComponent(raw)
    } catch {
      headers[key] = raw
    }
  }
  return headers
}

/**
 * The settings for a section (or none) and the environment: `None` when nothing names an endpoint. The section's
 * `otlp` wins over every variable; without it, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `_METRICS_ENDPOINT` (used as
 * they are) win over `OTEL_EXPORTER_OTLP_ENDPOINT` (a base). The section's headers win over the variable's.
 */
export const resolve = Effect.fnUntraced(function*(section: FileSection | undefined, options: Options = {}) {
  const base = section?.otlp !== undefined
    ? Option.some(yield* checked("telemetry.otlp", section.otlp))
    : yield* env("OTEL_EXPORTER_OTLP_ENDPOINT").pipe(
      Effect.flatMap(Option.match({
        onNone: () => Effect.succeed(Option.none<string>()),
        onSome: (value) => Effect.map(checked("OTEL_EXPORTER_OTLP_ENDPOINT", value), Option.some)
      }))
    )
  const signal = (name: "traces" | "metrics") =>
    Effect.gen(function*() {
      if (section?.otlp !== undefined) return signalUrl(section.otlp, name)
      const variable = `OTEL_EXPORTER_OTLP_${name.toUpperCase()}_ENDPOINT`
      const own = yield* env(variable)
      if (Option.isSome(own)) return yield* checked(variable, own.value)
      return Option.isSome(base) ? signalUrl(base.value, name) : null
    })
  const tracesUrl = yield* signal("traces")
  const metricsUrl = yield* signal("metrics")
  if (tracesUrl === null && metricsUrl === null) return Option.none()
  const headersEnv = yield* env("OTEL_EXPORTER_OTLP_HEADERS")
  const serviceEnv = yield* env("OTEL_SERVICE_NAME")
  const intervalEnv = yield* env("OTEL_METRIC_EXPORT_INTERVAL")
  const interval = Option.getOrUndefined(
    Option.filter(Option.map(intervalEnv, Number), (n) => Number.isFinite(n) && n > 0)
  )
  return Option.some<Settings>({
    tracesUrl,
    metricsUrl,
    endpoint: Option.getOrNull(base),
    headers: { ...Option.match(headersEnv, { onNone: () => ({}), onSome: parseHeaders }), ...section?.headers },
    serviceName: section?.serviceName ?? Option.getOrElse(serviceEnv, () => "flotta"),
    children: section?.children === true,
    metricExportIntervalMs: options.metricExportIntervalMs ?? interval ?? 60_000,
    shutdownTimeout: options.shutdownTimeout ?? "3 seconds"
  })
})

const serializeHeaders = (headers: Readonly<Record<string, string>>) =>
  Object.entries(headers).map(([key, value]) => `${key}=${encodeURIComponent(value)}`).join(",")

/**
 * What every child gets when `children` is on: Claude Code's telemetry switched on (its spans are a beta that
 * needs `CLAUDE_CODE_ENHANCED_TELEMETRY_BETA`), exporting OTLP/HTTP JSON to where the fleet exports. Each process
 * adds its agent and its `TRACEPARENT` (`Telemetry.childEnvironment`).
 */
export const sharedChildEnvironment = (settings: Settings): Record<string, string> => ({
  CLAUDE_CODE_ENABLE_TELEMETRY: "1",
  CLAUDE_CODE_ENHANCED_TELEMETRY_BETA: "1",
  OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
  OTEL_TRACES_EXPORTER: "otlp",
  OTEL_METRICS_EXPORTER: "otlp",
  OTEL_LOGS_EXPORTER: "otlp",
  ...(settings.endpoint === null ? {} : { OTEL_EXPORTER_OTLP_ENDPOINT: settings.endpoint }),
  // The fleet's own URLs win over per-signal ones a child would otherwise inherit from the host.
  ...(settings.tracesUrl === null ? {} : { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: settings.tracesUrl }),
  ...(settings.metricsUrl === null ? {} : { OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: settings.metricsUrl }),
  ...(Object.keys(settings.headers).length === 0
    ? {}
    : { OTEL_EXPORTER_OTLP_HEADERS: serializeHeaders(settings.headers) })
})

/** The exporters for resolved settings, and the children's environment when they join in. */
export const layerSettings = (settings: Settings): Layer.Layer<never> =>
  Layer.unwrapEffect(
    Effect.map(Effect.promise(() => import("./internal/otlpSdk.js")), (sdk) => sdk.layer(settings))
  ).pipe(
    Layer.merge(
      settings.children ? Layer.succeed(Telemetry.ChildTelemetry, sharedChildEnvironment(settings)) : Layer.empty
    )
  )

/**
 * Export for a config section (or none: the environment alone): `Layer.empty` when nothing names an endpoint,
 * else the fleet's spans and metrics over OTLP/HTTP JSON until the layer closes (which flushes them).
 */
export const layer = (section?: FileSection, options: Options = {}): Layer.Layer<never, OtlpConfigError> =>
  Layer.unwrapEffect(
    Effect.map(resolve(section, options), Option.match({ onNone: () => Layer.empty, onSome: layerSettings }))
  )
