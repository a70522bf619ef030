/**
 * The cost console's data, as Schemas: what `costs` is asked (a window and a grouping) and what it answers (the
 * total and the groups), each turn's cost per model as the store keeps it, and how a window's bounds are read
 * (`7d`, `24h`, an ISO date). A leaf module: the store, the facade, MCP, the CLI and the dashboard share it.
 */
import { Clock, Effect, Either, Schema } from "effect"
import type { Labels } from "./AgentOptions.js"
import type { TurnRow } from "./AgentView.js"
import { exact } from "./Decode.js"
import { InvalidSpec } from "./Errors.js"

/** The groupings that are a column of their own: the agent, the run, the model, the day or the hour (UTC). */
export const CostColumn = Schema.Literal("agent", "run", "model", "day", "hour")
export type CostColumn = typeof CostColumn.Type

export const COST_BY: ReadonlyArray<CostColumn> = CostColumn.literals

/** A label's grouping: `label:KEY` groups by that label's value (`label:team`). */
export const LabelBy = Schema.TemplateLiteral(Schema.Literal("label:"), Schema.String).pipe(
  Schema.filter((by) => by.length > "label:".length || "a label's key after \"label:\" (label:team)")
)

/** What spend is grouped by: one of the columns, or any label (`label:team`). */
export const CostBy = Schema.Union(CostColumn, LabelBy)
export type CostBy = typeof CostBy.Type

/** Whether a grouping is by a label; its key is `labelKey(by)`. */
export const isLabelBy = (by: CostBy): by is typeof LabelBy.Type => by.startsWith("label:")

/** The label key of a label's grouping (`label:team` is `team`). */
export const labelKey = (by: typeof LabelBy.Type): string => by.slice("label:".length)

const isCostBy = Schema.is(CostBy)

/** What `costs` is asked: turns finished in `[since, until)` (ISO instants, or `7d`, `24h`, `30m` back from now). */
export const CostQuery = Schema.Struct({
  since: exact(Schema.String),
  until: exact(Schema.String),
  by: exact(CostBy)
})
export type CostQuery = typeof CostQuery.Type

/** One group: its key (null: turns outside any run, or without the label), what it spent, and in how many turns. */
export const CostGroup = Schema.Struct({
  key: Schema.NullOr(Schema.String),
  costUsd: Schema.Number,
  turns: Schema.Number
})
export type CostGroup = typeof CostGroup.Type

/**
 * What `costs` answers: the window (resolved to ISO instants, null when open), the total and the groups. Groups by
 * day and hour come in time order; the others biggest spender first.
 */
export const CostReport = Schema.Struct({
  by: CostBy,
  since: Schema.NullOr(Schema.String),
  until: Schema.NullOr(Schema.String),
  totalUsd: Schema.Number,
  turns: Schema.Number,
  groups: Schema.Array(CostGroup)
})
export type CostReport = typeof CostReport.Type

/** A window resolved to instants, and the grouping: what a store is asked. */
export interface CostWindow {
  readonly since: string | null
  readonly until: string | null
  readonly by: CostBy
}

/** One turn's spend on one model, as the store keeps it for the console (`at`: when the turn finished). */
export interface CostRow {
  readonly agent: string
  readonly turnId: string
  readonly model: string
  readonly at: string
  readonly costUsd: number
  readonly run: string | null
  /** The agent's labels when the turn was saved. */
  readonly labels: Labels
}

/** The model a turn's cost is booked on when the CLI did not say per model. */
export const UNKNOWN_MODEL = "unknown"

const RELATIVE = /^(\d+(?:\.\d+)?)\s*(m|h|d|w)$/
const UNIT_MS = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 } as const

/**
 * A window's bound: `7d`, `24h`, `30m`, `2w` back from `now`, or a date or instant (`2025-01-31`,
 * `2025-01-31T12:00:00Z`), as an ISO instant; the reason when it is neither.
 */
export const resolveBound = (text: string, now: number): Either.Either<string, string> => {
  const trimmed = text.trim()
  const relative = RELATIVE.exec(trimmed)
  if (relative !== null) {
    return Either.right(
      new Date(now - Number(relative[1]) * UNIT_MS[relative[2] as keyof typeof UNIT_MS]).toISOString()
    )
  }
  const millis = /^\d{4}-\d{2}-\d{2}/.test(trimmed) ? Date.parse(trimmed) : Number.NaN
  return Number.isFinite(millis)
    ? Either.right(new Date(millis).toISOString())
    : Either.left(`"${text}" is neither a span back from now (7d, 24h, 30m, 2w) nor a date (2025-01-31)`)
}

/** A query's window, resolved against the clock (`by` defaults to `agent`), or `InvalidSpec` naming the field. */
export const windowOf = Effect.fnUntraced(function*(query: CostQuery = {}) {
  const now = yield* Clock.currentTimeMillis
  const by = query.by ?? "agent"
  if (!isCostBy(by)) {
    return yield* new InvalidSpec({
      path: "by",
      reason: `"${String(by)}" is not one of ${COST_BY.join(", ")} or label:KEY`
    })
  }
  const bound = (field: "since" | "until") => {
    const text = query[field]
    if (text === undefined) return Effect.succeed(null)
    return Either.match(resolveBound(String(text), now), {
      onLeft: (reason) => new InvalidSpec({ path: field, reason }),
      onRight: Effect.succeed
    })
  }
  return { since: yield* bound("since"), until: yield* bound("until"), by }
})

/** A resolved window as a query again (ISO bounds resolve to themselves): to ask another host for it. */
export const queryOf = (window: CostWindow): CostQuery => ({
  by: window.by,
  ...(window.since === null ? {} : { since: window.since }),
  ...(window.until === null ? {} : { until: window.until })
})

/** The key a cost row is grouped under. */
export const keyOf = (row: CostRow, by: CostBy): string | null => {
  if (isLabelBy(by)) return row.labels[labelKey(by)] ?? null
  switch (by) {
    case "agent":
      return row.agent
    case "run":
      return row.run
    case "model":
      return row.model
    case "day":
      return row.at.slice(0, 10)
    case "hour":
      return row.at.slice(0, 13)
  }
}

/** Whether a row falls in the window. */
export const inWindow = (row: CostRow, window: CostWindow) =>
  (window.since === null || row.at >= window.since) && (window.until === null || row.at < window.until)

/** Groups in their order: by time for days and hours, else the biggest spender first (then by key). */
export const ordered = (groups: ReadonlyArray<CostGroup>, by: CostBy): Array<CostGroup> =>
  [...groups].sort((a, b) =>
    by === "day" || by === "hour"
      ? (a.key ?? "").localeCompare(b.key ?? "")
      : b.costUsd - a.costUsd || (a.key ?? "").localeCompare(b.key ?? "")
  )

/** The report over rows held in memory (the memory store's, and the reference the SQL stores are tested against). */
export const aggregate = (rows: Iterable<CostRow>, window: CostWindow): CostReport => {
  const groups = new Map<string | null, { costUsd: number; turns: Set<string> }>()
  const turns = new Set<string>()
  let totalUsd = 0
  for (const row of rows) {
    if (!inWindow(row, window)) continue
    const key = keyOf(row, window.by)
    let group = groups.get(key)
    if (group === undefined) groups.set(key, group = { costUsd: 0, turns: new Set() })
    const turn = `${row.agent}\u0000${row.turnId}`
    group.costUsd += row.costUsd
    group.turns.add(turn)
    turns.add(turn)
    totalUsd += row.costUsd
  }
  return {
    by: window.by,
    since: window.since,
    until: window.until,
    totalUsd,
    turns: turns.size,
    groups: ordered([...groups].map(([key, g]) => ({ key, costUsd: g.costUsd, turns: g.turns.size })), window.by)
  }
}

/** Reports of the same window from several stores (a cluster's hosts) as one: groups of a key are summed. */
export const merge = (reports: ReadonlyArray<CostReport>, window: CostWindow): CostReport => {
  const groups = new Map<string | null, { costUsd: number; turns: number }>()
  for (const report of reports) {
    for (const group of report.groups) {
      const into = groups.get(group.key) ?? { costUsd: 0, turns: 0 }
      groups.set(group.key, { costUsd: into.costUsd + group.costUsd, turns: into.turns + group.turns })
    }
  }
  return {
    ...window,
    totalUsd: reports.reduce((sum, r) => sum + r.totalUsd, 0),
    turns: reports.reduce((sum, r) => sum + r.turns, 0),
    groups: ordered([...groups].map(([key, g]) => ({ key, ...g })), window.by)
  }
}

/** A report as CSV: a header, then one line per group (an empty key for null). */
export const toCsv = (report: CostReport): string => {
  const cell = (value: string) => (/[",\n\r]/.test(value) ? `"${value.replaceAll("\"", "\"\"")}"` : value)
  const lines = [`${report.by},cost_usd,turns`]
  for (const group of report.groups) lines.push(`${cell(group.key ?? "")},${group.costUsd.toFixed(6)},${group.turns}`)
  return lines.join("\n") + "\n"
}

/**
 * A stored turn's cost rows: one per model it spent on (its whole cost on `unknown` when the CLI did not say per
 * model), once it has finished; none for a turn that spent nothing.
 */
export const costRowsOf = (row: TurnRow): Array<CostRow> => {
  const { costUsd, finishedAt, modelCosts, turnId } = row.record
  if (finishedAt === null) return []
  const base = { agent: row.agent, turnId, at: finishedAt, run: row.run ?? null, labels: row.labels ?? {} }
  const byModel = modelCosts !== undefined && Object.keys(modelCosts).length > 0
    ? Object.entries(modelCosts)
    : costUsd > 0
    ? [[UNKNOWN_MODEL, costUsd] as const]
    : []
  return byModel.map(([model, usd]) => ({ ...base, model, costUsd: usd }))
}
