/**
 * `Otlp`'s settings, decoded from the config's `telemetry` section and the standard OTEL_EXPORTER_OTLP_*
 * environment (supplied here through a ConfigProvider), and the environment a child gets with `children` on.
 * No exporter runs here: test/telemetry.test.ts exports to a receiver.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Either, Exit, Layer, Option, Schema, Tracer } from "effect"
import * as Otlp from "../src/Otlp.js"
import * as Telemetry from "../src/Telemetry.js"

const withEnv = (env: Record<string, string>) =>
  Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))

const resolve = (section: Otlp.FileSection | undefined, env: Record<string, string> = {}, options?: Otlp.Options) =>
  Otlp.resolve(section, options).pipe(withEnv(env))

const settingsOf = (section: Otlp.FileSection | undefined, env: Record<string, string> = {}, options?: Otlp.Options) =>
  resolve(section, env, options).pipe(Effect.map(Option.getOrThrow))

describe("Otlp settings", () => {
  it.effect("off when neither the section nor the environment names an endpoint", () =>
    Effect.gen(function*() {
      assert.isTrue(Option.isNone(yield* resolve(undefined)))
      assert.isTrue(Option.isNone(yield* resolve({ children: true, serviceName: "x" }, { OTEL_SERVICE_NAME: "y" })))
      assert.isTrue(Option.isNone(yield* resolve(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: "  " })))
    }))

  it.effect("the section's base URL: traces and metrics under /v1, service flotta, children off", () =>
    Effect.gen(function*() {
      const settings = yield* settingsOf({ otlp: "http://127.0.0.1:4318/" })
      assert.deepStrictEqual(settings, {
        tracesUrl: "http://127.0.0.1:4318/v1/traces",
        metricsUrl: "http://127.0.0.1:4318/v1/metrics",
        endpoint: "http://127.0.0.1:4318/",
        headers: {},
        serviceName: "flotta",
        children: false,
        metricExportIntervalMs: 60_000,
        shutdownTimeout: "3 seconds"
      })
      assert.strictEqual(
        (yield* settingsOf({ otlp: "https://collector.example/otlp" })).tracesUrl,
        "https://collector.example/otlp/v1/traces"
      )
    }))

  it.effect("the environment alone: a base, and per-signal URLs used as they are", () =>
    Effect.gen(function*() {
      const base = yield* settingsOf(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })
      assert.deepInclude(base, {
        tracesUrl: "http://collector:4318/v1/traces",
        metricsUrl: "http://collector:4318/v1/metrics",
        endpoint: "http://collector:4318"
      })
      const traces = yield* settingsOf(undefined, {
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318",
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://tempo:4318/api/traces"
      })
      assert.deepInclude(traces, {
        tracesUrl: "http://tempo:4318/api/traces",
        metricsUrl: "http://collector:4318/v1/metrics"
      })
      const onlyMetrics = yield* settingsOf(undefined, {
        OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: "http://m:4318/v1/metrics"
      })
      assert.deepInclude(onlyMetrics, { tracesUrl: null, metricsUrl: "http://m:4318/v1/metrics", endpoint: null })
    }))

  it.effect("the section wins over the environment's URLs; its headers over the variable's", () =>
    Effect.gen(function*() {
      const settings = yield* settingsOf({ otlp: "http://mine:4318", headers: { "x-a": "section" } }, {
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://theirs:4318",
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://theirs:4318/v1/traces",
        OTEL_EXPORTER_OTLP_HEADERS: "x-a=env, x-b=two%20words,broken,=nokey",
        OTEL_SERVICE_NAME: "from-env",
        OTEL_METRIC_EXPORT_INTERVAL: "5000"
      })
      assert.deepInclude(settings, {
        tracesUrl: "http://mine:4318/v1/traces",
        endpoint: "http://mine:4318",
        serviceName: "from-env",
        metricExportIntervalMs: 5000
      })
      assert.deepStrictEqual(settings.headers, { "x-a": "section", "x-b": "two words" })
      assert.strictEqual(
        (yield* settingsOf({ otlp: "http://a", serviceName: "fleet" }, { OTEL_SERVICE_NAME: "env" })).serviceName,
        "fleet"
      )
      assert.strictEqual(
        (yield* settingsOf({ otlp: "http://a" }, { OTEL_METRIC_EXPORT_INTERVAL: "5000" }, {
          metricExportIntervalMs: 100
        }))
          .metricExportIntervalMs,
        100
      )
    }))

  it.effect("a bad URL is an OtlpConfigError naming where it came from", () =>
    Effect.gen(function*() {
      const fromSection = yield* Effect.flip(resolve({ otlp: "localhost:4318" }))
      assert.deepStrictEqual([fromSection._tag, fromSection.field], ["OtlpConfigError", "telemetry.otlp"])
      assert.match(
        fromSection.message,
        /^telemetry\.otlp: expected an http:\/\/ or https:\/\/ URL .*got "localhost:4318"$/
      )
      const fromEnv = yield* Effect.flip(resolve(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: "ftp://x" }))
      assert.strictEqual(fromEnv.field, "OTEL_EXPORTER_OTLP_ENDPOINT")
      const signal = yield* Effect.flip(resolve(undefined, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "not a url" }))
      assert.strictEqual(signal.field, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
      // The layer fails the same way, before anything is loaded.
      const exit = yield* Effect.exit(Layer.build(Otlp.layer({ otlp: "nope" })).pipe(Effect.scoped))
      assert.isTrue(Exit.isFailure(exit))
    }))

  it("the section's schema: the URL form, and unknown fields refused", () => {
    const decode = Schema.decodeUnknownEither(Otlp.FileSection, { onExcessProperty: "error" })
    assert.isTrue(Either.isRight(decode({ otlp: "http://127.0.0.1:4318", children: true, headers: { a: "b" } })))
    assert.isTrue(Either.isLeft(decode({ otlp: "http://127.0.0.1:4318?x=1" })))
    assert.isTrue(Either.isLeft(decode({ serviceName: "" })))
    assert.isTrue(Either.isLeft(decode({ exporter: "otlp" })))
  })
})

describe("the children's environment", () => {
  it.effect("Claude Code's telemetry, exporting JSON where the fleet does", () =>
    Effect.gen(function*() {
      const settings = yield* settingsOf({ otlp: "http://127.0.0.1:4318", children: true, headers: { "x-k": "a b,c" } })
      // Every variable, by name.
      assert.deepStrictEqual(Otlp.sharedChildEnvironment(settings), {
        CLAUDE_CODE_ENABLE_TELEMETRY: "1",
        CLAUDE_CODE_ENHANCED_TELEMETRY_BETA: "1",
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318",
        OTEL_EXPORTER_OTLP_HEADERS: "x-k=a%20b%2Cc",
        OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: "http://127.0.0.1:4318/v1/metrics",
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://127.0.0.1:4318/v1/traces",
        OTEL_LOGS_EXPORTER: "otlp",
        OTEL_METRICS_EXPORTER: "otlp",
        OTEL_TRACES_EXPORTER: "otlp"
      })
      assert.deepStrictEqual(Otlp.parseHeaders("x-k=a%20b%2Cc"), { "x-k": "a b,c" })
    }))

  it("each process: its agent after the inherited resource attributes, and the span it starts under", () => {
    const span = Tracer.externalSpan({ traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331" })
    assert.deepStrictEqual(Telemetry.childEnvironment({ A: "1" }, "scout", Option.some(span), "team=x"), {
      A: "1",
      OTEL_RESOURCE_ATTRIBUTES: "team=x,flotta.agent=scout",
      TRACEPARENT: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    })
    assert.deepStrictEqual(Telemetry.childEnvironment({}, "scout", Option.none(), undefined), {
      OTEL_RESOURCE_ATTRIBUTES: "flotta.agent=scout"
    })
    const unsampled = Tracer.externalSpan({
      traceId: "0af7651916cd43dd8448eb211c80319c",
      spanId: "b7ad6b7169203331",
      sampled: false
    })
    assert.deepStrictEqual(
      Telemetry.traceparent(unsampled),
      Option.some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00")
    )
    // Ids that are not W3C's (a custom tracer's) give no TRACEPARENT rather than a malformed one.
    assert.isTrue(Option.isNone(Telemetry.traceparent(Tracer.externalSpan({ traceId: "abc", spanId: "def" }))))
    assert.isTrue(
      Option.isNone(Telemetry.traceparent(Tracer.externalSpan({ traceId: "0".repeat(32), spanId: "b7ad6b7169203331" })))
    )
  })

  it.effect("off by default: the engine sees no ChildTelemetry unless Otlp.layer provides it", () =>
    Effect.gen(function*() {
      assert.isNull(yield* Telemetry.ChildTelemetry)
      const provided = yield* Telemetry.ChildTelemetry.pipe(
        Effect.provide(Layer.succeed(Telemetry.ChildTelemetry, { A: "1" }))
      )
      assert.deepStrictEqual(provided, { A: "1" })
      assert.isTrue(Context.isReference(Telemetry.ChildTelemetry))
    }))
})
