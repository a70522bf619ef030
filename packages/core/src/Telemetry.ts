/**
 * The fleet's metrics. Spans are named where the work happens (`flotta.turn`, `flotta.run`); exporting them
 * over OpenTelemetry is the application's choice (a layer at the edge), never the engine's.
 */
import { Metric, MetricBoundaries } from "effect"

/** Finished turns, tagged by agent and outcome (`ok` or the error's tag). */
export const turnsTotal = Metric.counter("flotta_turns_total", { incremental: true })

export const turnDurationMs = Metric.histogram(
  "flotta_turn_duration_ms",
  MetricBoundaries.exponential({ start: 1, factor: 2, count: 22 })
)

export const costUsdTotal = Metric.counter("flotta_cost_usd_total", { incremental: true })

/** Agents with a live process or starting one. */
export const agentsLive = Metric.gauge("flotta_agents_live")
