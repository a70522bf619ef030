/**
 * The durable store's schema, for any dialect (SQLite, Postgres): its tables, its version, the migrations that
 * bring an older store up to date, and the words a refused store is described with.
 */
import * as Migrator from "@effect/sql/Migrator"
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect, Either, Predicate, Schema } from "effect"
import { TurnRow } from "../AgentView.js"
import { costRowsOf } from "../Costs.js"
import type { CostRow } from "../Costs.js"
import { StoreSchemaTooNew, StoreUnavailable } from "../Errors.js"

export const MIGRATIONS_TABLE = "flotta_migrations"

export const SCHEMA_VERSION = 3

/** The SQL of the first version, for both dialects. */
const createSchema = (sql: SqlClient) =>
  Effect.gen(function*() {
    yield* sql`create table if not exists flotta_reports (
      seq bigint primary key, at text not null, agent text not null, kind text not null, turn_id text,
      data text not null)`
    yield* sql`create index if not exists flotta_reports_agent on flotta_reports (agent, seq)`
    yield* sql`create index if not exists flotta_reports_at on flotta_reports (at)`
    yield* sql`create table if not exists flotta_agents (
      name text primary key, status text not null, updated_at text not null, row text not null)`
    yield* sql`create table if not exists flotta_turns (
      agent text not null, turn_id text not null, n integer not null, status text not null, finished_at text,
      row text not null, primary key (agent, turn_id))`
    yield* sql`create table if not exists flotta_runs (
      name text primary key, status text not null, finished_at text, row text not null)`
    yield* sql`create table if not exists flotta_state (key text primary key, value text not null)`
  })

/** A cost row's columns (see `Costs.CostRow`). */
export const costColumns = (row: CostRow) => ({
  agent: row.agent,
  turn_id: row.turnId,
  model: row.model,
  at: row.at,
  cost_usd: row.costUsd,
  run: row.run
})

/** A cost row's labels, one row each (see `Costs.CostRow`): a turn's labels, whatever its models. */
export const labelColumns = (row: CostRow) =>
  Object.entries(row.labels).map(([key, value]) => ({ agent: row.agent, turn_id: row.turnId, key, value }))

/** Cost rows per multi-row insert: 7 parameters each, well within SQLite's 32,766. */
export const COST_CHUNK = 1_000

/**
 * The second version: each finished turn's spend per model (`flotta_costs`), for the cost console to sum in SQL.
 * The turns an older store already has are booked from their rows (on `unknown` when they did not say per model).
 */
const addCosts = (sql: SqlClient) =>
  Effect.gen(function*() {
    yield* sql`create table if not exists flotta_costs (
      agent text not null, turn_id text not null, model text not null, at text not null,
      cost_usd double precision not null, run text, routine text, primary key (agent, turn_id, model))`
    yield* sql`create index if not exists flotta_costs_at on flotta_costs (at)`
    const stored = yield* sql<{ readonly row: string }>`select row from flotta_turns where finished_at is not null`
    const rows = stored.flatMap(({ row }) => {
      const decoded = decodeTurnRow(row)
      return Either.isRight(decoded) ? costRowsOf(decoded.right) : []
    })
    for (let i = 0; i < rows.length; i += COST_CHUNK) {
      yield* sql`insert into flotta_costs ${sql.insert(rows.slice(i, i + COST_CHUNK).map(costColumns))}
        on conflict do nothing`
    }
  })

const decodeTurnRow = Schema.decodeUnknownEither(Schema.parseJson(TurnRow))
const decodeJson = Schema.decodeUnknownEither(Schema.parseJson())

/**
 * The third version: labels instead of routines. Each turn's labels (`flotta_turn_labels`), for spend to be grouped
 * by any of them; an older store's routine (the column of version 2, and the option an agent row kept) becomes the
 * label `routine`, so its spend stays grouped as it was.
 */
const addLabels = (sql: SqlClient) =>
  Effect.gen(function*() {
    yield* sql`create table if not exists flotta_turn_labels (
      agent text not null, turn_id text not null, key text not null, value text not null,
      primary key (agent, turn_id, key))`
    yield* sql`create index if not exists flotta_turn_labels_key on flotta_turn_labels (key, value)`
    yield* sql`insert into flotta_turn_labels (agent, turn_id, key, value)
      select distinct agent, turn_id, 'routine', routine from flotta_costs where routine is not null
      on conflict do nothing`
    const agents = yield* sql<{ readonly name: string; readonly row: string }>`select name, row from flotta_agents
      where row like ${"%\"routine\"%"}`
    for (const { name, row } of agents) {
      const relabeled = routineAsLabel(row)
      if (relabeled !== undefined) yield* sql`update flotta_agents set row = ${relabeled} where name = ${name}`
    }
  })

/** An agent row whose options name a routine, with it as the label `routine` instead (undefined: nothing to do). */
export const routineAsLabel = (text: string): string | undefined => {
  const row = Either.getOrUndefined(decodeJson(text))
  if (!Predicate.isRecord(row) || !Predicate.isRecord(row["options"])) return undefined
  const { routine, ...options } = row["options"]
  if (typeof routine !== "string") return undefined
  const labels = Predicate.isRecord(options["labels"]) ? options["labels"] : {}
  return JSON.stringify({ ...row, options: { ...options, labels: { routine, ...labels } } })
}

export interface Dialect {
  readonly kind: "sqlite" | "postgres"
  readonly location: string
  readonly sizeBytes: Effect.Effect<number | null>
  /** Rows per multi-row insert (SQLite allows 32,766 parameters in one statement). */
  readonly chunk: number
  /** The SQLite driver in use (`node:sqlite`, `better-sqlite3 12.11.1`). */
  readonly driver?: string
}

export const HINT_RESTORE = "Move the file aside (nothing was overwritten) and start again, or restore a backup"

/** The message of an SQL failure, down to the driver's own words. */
export const causeText = (error: unknown): string => {
  let current: unknown = error
  const parts: Array<string> = []
  for (let i = 0; i < 4 && Predicate.isObject(current); i++) {
    const message = Predicate.hasProperty(current, "message") ? current.message : undefined
    if (typeof message === "string" && message.length > 0 && !parts.includes(message)) parts.push(message)
    current = Predicate.hasProperty(current, "cause") ? current.cause : undefined
  }
  return parts.length === 0 ? String(error) : parts.join(": ")
}

/**
 * The schema version a store has (0 when it has none yet). The table is looked up first: a statement that
 * fails is remembered by the client's statement cache, so the query itself must never fail.
 */
export const schemaVersion = Effect.fnUntraced(function*(sql: SqlClient, kind: Dialect["kind"]) {
  const exists = kind === "sqlite"
    ? yield* sql`select 1 as one from sqlite_master where type = 'table' and name = ${MIGRATIONS_TABLE}`
    : yield* sql`select 1 as one from information_schema.tables
          where table_schema = current_schema() and table_name = ${MIGRATIONS_TABLE}`
  if (exists.length === 0) return 0
  const rows = yield* sql<{ readonly v: number | string | null }>`select max(migration_id) as v from ${
    sql(MIGRATIONS_TABLE)
  }`
  return Number(rows[0]?.v ?? 0)
})

/**
 * Brings the schema up to this flotta's version through the Migrator. A newer schema is refused before
 * anything is written.
 */
export const migrate = Effect.fnUntraced(
  function*(sql: SqlClient, kind: Dialect["kind"], location: string) {
    const found = yield* schemaVersion(sql, kind).pipe(
      Effect.mapError((e) =>
        new StoreUnavailable({
          location,
          reason: `its schema version cannot be read: ${causeText(e)}`,
          hint: HINT_RESTORE
        })
      )
    )
    if (found > SCHEMA_VERSION) {
      return yield* new StoreSchemaTooNew({ location, found, supported: SCHEMA_VERSION })
    }
    yield* Migrator.make({})({
      loader: Migrator.fromRecord({
        "1_init": createSchema(sql),
        "2_costs": addCosts(sql),
        "3_labels": addLabels(sql)
      }),
      table: MIGRATIONS_TABLE
    }).pipe(
      Effect.provideService(SqlClient, sql),
      Effect.mapError((e) =>
        new StoreUnavailable({
          location,
          reason: `its schema could not be brought up to date: ${causeText(e)}`,
          hint: HINT_RESTORE
        })
      )
    )
  }
)
