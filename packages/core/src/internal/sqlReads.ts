/**
 * The durable store's reads: each is one picture at one instant, what the database holds overlaid with what
 * waits in the write-behind buffer. Stored rows are decoded with the views' Schemas; a row that does not
 * decode is skipped and logged as `StoreRowInvalid` (naming its table and key), so one bad row does not keep
 * the rest from coming back.
 */
import type { SqlClient } from "@effect/sql/SqlClient"
import { Effect, Either, Option, ParseResult, Schema } from "effect"
import { AgentRow, TurnRow } from "../AgentView.js"
import * as Costs from "../Costs.js"
import { RunRow, StoreRowInvalid } from "../Store.js"
import type { StoreShape } from "../Store.js"
import { DEFAULT_LIMIT, matches, MAX_LIMIT, reportWhere } from "./reportQuery.js"
import type { ReportEntry, ReportPage, ReportQuery } from "./reportQuery.js"
import { turnKey } from "./sqlWriter.js"
import type { Batch, Writer } from "./sqlWriter.js"

/** The SQL a cost row is grouped by, for each grouping (times are ISO text: a day and an hour are prefixes). */
const GROUP_KEYS: Record<Costs.CostColumn, string> = {
  agent: "agent",
  run: "run",
  model: "model",
  day: "substr(at, 1, 10)",
  hour: "substr(at, 1, 13)"
}

/** A report entry's row, as the driver gives it (`seq` is text from Postgres' bigint). */
interface ReportRow {
  readonly seq: number | string
  readonly at: string
  readonly agent: string
  readonly kind: string
  readonly turn_id: string | null
  readonly data: string
}

const decodeJson = Schema.decodeUnknownEither(Schema.parseJson())

type Keyed = Pick<Batch, "agents" | "turns" | "runs">

/** The reads of a store over `sql` whose writes go through `writer`. */
export const make = (
  sql: SqlClient,
  location: string,
  writer: Writer
): Pick<
  StoreShape,
  "readReports" | "agents" | "agent" | "turns" | "lastTurn" | "runs" | "run" | "loadState" | "costs"
> => {
  const invalid = (table: string, key: string, error: ParseResult.ParseError) =>
    Effect.logWarning(
      new StoreRowInvalid({ location, table, key, reason: ParseResult.TreeFormatter.formatErrorSync(error) })
    )

  /** A table's rows decoded with `schema`: one that does not decode is logged and skipped. */
  const rowsOf = <A, I>(table: string, schema: Schema.Schema<A, I>) => {
    const decode = Schema.decodeUnknownEither(Schema.parseJson(schema))
    const one = (key: string, text: string): Effect.Effect<Option.Option<A>> =>
      Either.match(decode(text), {
        onLeft: (error) => Effect.as(invalid(table, key, error), Option.none()),
        onRight: (row) => Effect.succeed(Option.some(row))
      })
    const all = (rows: ReadonlyArray<{ readonly key: string; readonly row: string }>) =>
      Effect.map(Effect.forEach(rows, (r) => one(r.key, r.row)), (decoded) => decoded.flatMap(Option.toArray))
    return { one, all }
  }
  const agentRows = rowsOf("flotta_agents", AgentRow)
  const turnRows = rowsOf("flotta_turns", TurnRow)
  const runRows = rowsOf("flotta_runs", RunRow)

  const fromRow = (row: ReportRow): Effect.Effect<Option.Option<ReportEntry>> =>
    Either.match(decodeJson(row.data), {
      onLeft: (error) => Effect.as(invalid("flotta_reports", `seq ${row.seq}`, error), Option.none()),
      onRight: (data) =>
        Effect.succeed(Option.some<ReportEntry>(
          row.turn_id === null
            ? { seq: Number(row.seq), at: row.at, agent: row.agent, kind: row.kind, data }
            : { seq: Number(row.seq), at: row.at, agent: row.agent, kind: row.kind, turnId: row.turn_id, data }
        ))
    })

  const fromRows = (rows: ReadonlyArray<ReportRow>) =>
    Effect.map(Effect.forEach(rows, fromRow), (entries) => entries.flatMap(Option.toArray))

  const readReports = (query: ReportQuery): Effect.Effect<ReportPage> =>
    Effect.suspend(() => {
      const { agent, kinds, last, limit = DEFAULT_LIMIT, since = 0 } = query
      // One picture at one instant: committed up to `bound` in the database, the rest in the buffer.
      const bound = writer.committedSeq()
      const buffered = writer.buffers().flatMap((batch) => batch.reports)
        .filter((e) => e.seq > bound && e.seq > since && matches(e, agent, kinds))
      const newest = writer.lastSeq()
      const where = reportWhere(sql, query, bound)
      if (last !== undefined) {
        const max = Math.max(1, Math.min(last, MAX_LIMIT))
        const tail = buffered.slice(-max)
        const fromDb = tail.length >= max
          ? Effect.succeed<ReadonlyArray<ReportRow>>([])
          : sql<ReportRow>`select seq, at, agent, kind, turn_id, data from flotta_reports where ${where}
              order by seq desc limit ${max - tail.length}`
        return fromDb.pipe(
          Effect.orDie,
          Effect.flatMap(fromRows),
          Effect.map((entries) => ({ entries: [...entries.reverse(), ...tail], next: Math.max(since, newest) }))
        )
      }
      const max = Math.max(1, Math.min(limit, MAX_LIMIT))
      return sql<ReportRow>`select seq, at, agent, kind, turn_id, data from flotta_reports where ${where}
        order by seq limit ${max}`.pipe(
        Effect.orDie,
        Effect.flatMap((rows) =>
          Effect.map(fromRows(rows), (entries) => {
            // A full page from the database ends where its last row does (a skipped row still counts).
            if (rows.length >= max) return { entries, next: Number(rows[rows.length - 1]!.seq) }
            const more = buffered.slice(0, max - rows.length)
            const all = entries.concat(more)
            // Everything up to the newest entry was scanned unless the buffer still had more to give.
            const next = more.length < buffered.length ? all[all.length - 1]!.seq : Math.max(since, newest)
            return { entries: all, next }
          })
        )
      )
    })

  /** Stored rows with the waiting ones laid over them, by key. */
  const overlay = <K extends keyof Keyed, A extends Keyed[K] extends Map<string, infer V> ? V : never>(
    rows: ReadonlyArray<A>,
    key: (a: A) => string,
    field: K
  ): Array<A> => {
    const byKey = new Map(rows.map((row) => [key(row), row]))
    for (const batch of writer.buffers()) {
      for (const [k, v] of batch[field]) byKey.set(k, v as A)
    }
    return [...byKey.values()]
  }

  const agents = sql<{ readonly key: string; readonly row: string }>`select name as key, row from flotta_agents`.pipe(
    Effect.orDie,
    Effect.flatMap(agentRows.all),
    Effect.map((rows) => overlay(rows, (a) => a.name, "agents"))
  )

  const turns = (agent: string) =>
    sql<{ readonly key: string; readonly row: string }>`select turn_id as key, row from flotta_turns
      where agent = ${agent}`.pipe(
      Effect.orDie,
      Effect.flatMap((rows) => turnRows.all(rows.map((r) => ({ key: `${agent} ${r.key}`, row: r.row })))),
      Effect.map((rows) =>
        overlay(rows, (t) => turnKey(t.agent, t.record.turnId), "turns")
          .filter((t) => t.agent === agent)
          .sort((a, b) => a.n - b.n)
      )
    )

  const lastTurn = (agent: string) =>
    Effect.suspend(() => {
      let buffered = 0
      for (const batch of writer.buffers()) {
        for (const row of batch.turns.values()) if (row.agent === agent && row.n > buffered) buffered = row.n
      }
      return sql<{ readonly n: number | string | null }>`select max(n) as n from flotta_turns where agent = ${agent}`
        .pipe(Effect.map((rows) => Math.max(buffered, Number(rows[0]?.n ?? 0))), Effect.orDie)
    })

  const runs = sql<{ readonly key: string; readonly row: string }>`select name as key, row from flotta_runs`.pipe(
    Effect.orDie,
    Effect.flatMap(runRows.all),
    Effect.map((rows) => overlay(rows, (r) => r.name, "runs"))
  )

  /** The newest waiting write of `key`, if one waits. */
  const waitingOf = <A>(pick: (batch: Batch) => A | undefined): A | undefined => {
    const buffers = writer.buffers()
    for (let i = buffers.length - 1; i >= 0; i--) {
      const found = pick(buffers[i]!)
      if (found !== undefined) return found
    }
    return undefined
  }

  const agent = (name: string) =>
    Effect.suspend(() => {
      const buffered = waitingOf((batch) => batch.agents.get(name))
      if (buffered !== undefined) return Effect.succeed(Option.some(buffered))
      return sql<{ readonly row: string }>`select row from flotta_agents where name = ${name}`.pipe(
        Effect.orDie,
        Effect.flatMap((rows) =>
          rows[0] === undefined ? Effect.succeed(Option.none()) : agentRows.one(name, rows[0].row)
        )
      )
    })

  const run = (name: string) =>
    Effect.suspend(() => {
      const buffered = waitingOf((batch) => batch.runs.get(name))
      if (buffered !== undefined) return Effect.succeed(Option.some(buffered))
      return sql<{ readonly row: string }>`select row from flotta_runs where name = ${name}`.pipe(
        Effect.orDie,
        Effect.flatMap((rows) => rows[0] === undefined ? Effect.succeed(Option.none()) : runRows.one(name, rows[0].row))
      )
    })

  const loadState = (key: string) =>
    Effect.suspend(() => {
      const text = waitingOf((batch) => batch.state.get(key))
      const stored = text !== undefined
        ? Effect.succeed(Option.some(text))
        : sql<{ readonly value: string }>`select value from flotta_state where key = ${key}`.pipe(
          Effect.orDie,
          Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), (r) => r.value))
        )
      return Effect.flatMap(stored, (value) =>
        Option.isNone(value) ? Effect.succeed(Option.none()) : Either.match(decodeJson(value.value), {
          onLeft: (error) =>
            Effect.as(invalid("flotta_state", key, error), Option.none()),
          onRight: (state) => Effect.succeed(Option.some(state))
        }))
    })

  /** Spend in a window, summed and grouped by the database, once what waits is committed. */
  const costs = (window: Costs.CostWindow) =>
    Effect.gen(function*() {
      yield* writer.flush(5_000)
      const by = window.by
      const where = sql.and([
        ...(window.since === null ? [] : [sql`at >= ${window.since}`]),
        ...(window.until === null ? [] : [sql`at < ${window.until}`])
      ])
      type Sum = { readonly usd: number | string | null; readonly turns: number | string }
      const [total] = yield* sql<Sum>`select sum(cost_usd) as usd,
        count(distinct agent || ' ' || turn_id) as turns from flotta_costs where ${where}`
      type Group = Sum & { readonly key: string | null }
      // A label's value is in flotta_turn_labels, one row per turn and key; a turn without it groups under null.
      const groups = Costs.isLabelBy(by)
        ? yield* sql<Group>`select l.value as key, sum(c.cost_usd) as usd,
          count(distinct c.agent || ' ' || c.turn_id) as turns from flotta_costs c
          left join flotta_turn_labels l on l.agent = c.agent and l.turn_id = c.turn_id and l.key = ${
          Costs.labelKey(by)
        }
          where ${where} group by l.value`
        : yield* sql<Group>`select ${sql.literal(GROUP_KEYS[by])} as key, sum(cost_usd) as usd,
          count(distinct agent || ' ' || turn_id) as turns from flotta_costs where ${where} group by ${
          sql.literal(GROUP_KEYS[by])
        }`
      return {
        ...window,
        totalUsd: Number(total?.usd ?? 0),
        turns: Number(total?.turns ?? 0),
        groups: Costs.ordered(
          groups.map((g) => ({ key: g.key, costUsd: Number(g.usd ?? 0), turns: Number(g.turns) })),
          window.by
        )
      } satisfies Costs.CostReport
    }).pipe(Effect.orDie)

  return { readReports, agents, agent, turns, lastTurn, runs, run, loadState, costs }
}
