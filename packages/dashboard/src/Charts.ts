/**
 * The charts' data (`GET /api/charts`), from the report log's `result` entries of the last 24 hours: each
 * finished turn (a session's or a run's) posts one with its `costUsd` and `durationMs`. The shape is uPlot's
 * own, aligned columns: `data[0]` the x values (Unix seconds), then one column per series, so the page only
 * hands it over. The busiest agents get a series each, the rest share one ("others"), in the same order in both
 * charts so an agent keeps its colour.
 */
import type { StoreUnavailable } from "@flotta/core/Errors"
import { Flotta } from "@flotta/core/Flotta"
import { MAX_LIMIT } from "@flotta/core/ReportLog"
import type { ReportEntry } from "@flotta/core/ReportLog"
import { Clock, Effect } from "effect"

export const HOUR = 3_600_000
export const WINDOW_HOURS = 24
/** Series of their own; beyond that a legend stops being readable. */
export const MAX_SERIES = 8
export const OTHERS = "others"

export interface Chart {
  readonly series: ReadonlyArray<string>
  readonly data: ReadonlyArray<ReadonlyArray<number | null>>
}

export interface ChartData {
  readonly from: string
  readonly to: string
  /** x: the start of each hour; y: dollars spent in turns that finished in it. */
  readonly costPerHour: Chart
  /** x: when each turn finished; y: its duration in ms (null where another series has the point). */
  readonly turnDuration: Chart
}

export interface TurnPoint {
  readonly agent: string
  readonly at: number
  readonly costUsd: number
  readonly durationMs: number
}

/** The finished turns a `result` entry describes (a verify's result has no cost: it is no turn). */
export const pointOf = (entry: ReportEntry): TurnPoint | undefined => {
  const data = entry.data as { readonly costUsd?: unknown; readonly durationMs?: unknown } | null
  if (entry.kind !== "result" || typeof data?.costUsd !== "number" || typeof data.durationMs !== "number") return
  return { agent: entry.agent, at: Date.parse(entry.at), costUsd: data.costUsd, durationMs: data.durationMs }
}

const seconds = (millis: number) => millis / 1000
// To the micro-dollar: float sums print as 0.30000000000000004 otherwise.
const roundUsd = (usd: number) => Math.round(usd * 1e6) / 1e6

/** The charts for the 24 hours up to `now`, from the turns that finished in them. */
export const build = (points: ReadonlyArray<TurnPoint>, now: number): ChartData => {
  const lastHour = Math.floor(now / HOUR)
  const firstHour = lastHour - WINDOW_HOURS + 1
  const recent = points.filter((p) => p.at >= firstHour * HOUR && p.at <= now).sort((a, b) => a.at - b.at)

  // The busiest first: by spend, then by turns.
  const totals = new Map<string, { cost: number; turns: number }>()
  for (const p of recent) {
    const t = totals.get(p.agent) ?? { cost: 0, turns: 0 }
    totals.set(p.agent, { cost: t.cost + p.costUsd, turns: t.turns + 1 })
  }
  const ranked = [...totals].sort(([a, x], [b, y]) => y.cost - x.cost || y.turns - x.turns || a.localeCompare(b))
  const own = ranked.length <= MAX_SERIES + 1 ? ranked.length : MAX_SERIES
  const series = [...ranked.slice(0, own).map(([name]) => name), ...(ranked.length > own ? [OTHERS] : [])]
  const column = new Map(series.map((name, i) => [name, i]))
  const columnOf = (agent: string) => column.get(agent) ?? column.get(OTHERS)!

  const hours = Array.from({ length: WINDOW_HOURS }, (_, i) => (firstHour + i) * HOUR)
  const costs = series.map(() => hours.map(() => 0))
  for (const p of recent) costs[columnOf(p.agent)]![Math.floor(p.at / HOUR) - firstHour]! += p.costUsd

  const durations = series.map(() => recent.map((): number | null => null))
  recent.forEach((p, i) => (durations[columnOf(p.agent)]![i] = p.durationMs))

  return {
    from: new Date(firstHour * HOUR).toISOString(),
    to: new Date(now).toISOString(),
    costPerHour: { series, data: [hours.map(seconds), ...costs.map((c) => c.map(roundUsd))] },
    turnDuration: { series, data: [recent.map((p) => seconds(p.at)), ...durations] }
  }
}

/** The charts now, from the report log's tail. */
export const chartData: Effect.Effect<ChartData, StoreUnavailable, Flotta> = Effect.gen(function*() {
  const fleet = yield* Flotta
  const now = yield* Clock.currentTimeMillis
  const page = yield* fleet.reports({ kinds: ["result"], last: MAX_LIMIT })
  return build(page.entries.flatMap((entry) => pointOf(entry) ?? []), now)
})
