/**
 * The fleet's metrics, and what a child `claude` process is told so that its own telemetry joins the fleet's.
 * Spans are named where the work happens (`flotta.turn`, `flotta.run`, `flotta.spawn`, ...); exporting them over
 * OpenTelemetry is the application's choice (`@flotta/core/Otlp`, a layer at the edge), never the engine's.
 */
import { Context, Metric, MetricBoundaries, Option } from "effect"
import type { Tracer } from "effect"

/** Finished turns, tagged by agent and outcome (`ok` or the error's tag). */
export const turnsTotal = Metric.counter("flotta_turns_total", { incremental: true })

export const turnDurationMs = Metric.histogram(
  "flotta_turn_duration_ms",
  MetricBoundaries.exponential({ start: 1, factor: 2, count: 22 })
)

export const costUsdTotal = Metric.counter("flotta_cost_usd_total", { incremental: true })

/** Agents with a live process or starting one. */
export const agentsLive = Metric.gauge("flotta_agents_live")

/**
 * The environment every child gets so that Claude Code exports its own telemetry where the fleet does
 * (`telemetry.children`; `Otlp.layer` provides it): `null`, the default, leaves the children's telemetry alone.
 * A reference with a default, so that the engine needs nothing of OpenTelemetry unless it is switched on.
 */
export class ChildTelemetry extends Context.Reference<ChildTelemetry>()("@flotta/core/ChildTelemetry", {
  defaultValue: (): Readonly<Record<string, string>> | null => null
}) {}

const TRACE_ID = /^[0-9a-f]{32}$/
const SPAN_ID = /^[0-9a-f]{16}$/

/** The W3C `traceparent` of a span (`00-<trace id>-<span id>-<flags>`), when its ids have the W3C form. */
export const traceparent = (span: Tracer.AnySpan): Option.Option<string> =>
  TRACE_ID.test(span.traceId) && SPAN_ID.test(span.spanId) && !/^0+$/.test(span.traceId)
    ? Option.some(`00-${span.traceId}-${span.spanId}-${span.sampled ? "01" : "00"}`)
    : Option.none()

/**
 * One child's telemetry environment: the shared settings, its agent as a resource attribute (after any the child
 * inherits), and the span current when it starts as its `TRACEPARENT`. The CLI reads `TRACEPARENT` once, at
 * start: every turn of that process hangs under the same span (the spawn's, or the restart's).
 */
export const childEnvironment = (
  shared: Readonly<Record<string, string>>,
  agent: string,
  span: Option.Option<Tracer.AnySpan>,
  inheritedResource: string | undefined
): Record<string, string> => {
  const resource = [inheritedResource, `flotta.agent=${encodeURIComponent(agent)}`]
    .filter((part) => part !== undefined && part.length > 0)
    .join(",")
  const parent = Option.flatMap(span, traceparent)
  return {
    ...shared,
    OTEL_RESOURCE_ATTRIBUTES: resource,
    ...(Option.isSome(parent) ? { TRACEPARENT: parent.value } : {})
  }
}
