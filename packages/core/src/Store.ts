/**
 * Where the fleet's state lives: the report log, agents, their turns, async runs, and the state of the layers
 * above the engine (the scheduler's). `Store.memory` keeps it for the life of the Layer; `SqliteStore.layer(path)`
 * and `PostgresStore.layer(url)` keep it across restarts of the host, through `@effect/sql` (`StoreConfig.layer`
 * picks the one a config names).
 *
 * Writes are synchronous and never wait: agents save from their hot paths. A durable store numbers a report
 * entry at once and commits behind, in batches; when the disk or the database refuses, it keeps the writes
 * (bounded), shows itself `degraded`, and retries until they land. Reads see what is committed and what waits.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { Labels } from "./AgentOptions.js"
import type { AgentRow, TurnRow } from "./AgentView.js"
import * as Costs from "./Costs.js"
import { exact } from "./Decode.js"
import { DEFAULT_LIMIT, matches, MAX_LIMIT } from "./internal/reportQuery.js"
import type { ReportEntry, ReportPage, ReportQuery } from "./internal/reportQuery.js"
import * as RunDiff from "./RunDiff.js"
import { StoreUnavailable } from "./StoreErrors.js"

export type { ReportEntry, ReportPage, ReportQuery } from "./internal/reportQuery.js"

export { AgentRow, StoredOptions, StoredProcess, TurnRow } from "./AgentView.js"

/** An async run (or verify) as the store keeps it. */
export const RunRow = Schema.Struct({
  name: Schema.String,
  kind: Schema.Literal("run", "verify"),
  status: Schema.Literal("running", "succeeded", "failed"),
  startedAt: Schema.String,
  finishedAt: Schema.NullOr(Schema.String),
  /** The run's worktree while it has one. */
  worktree: Schema.NullOr(Schema.String),
  /** The outcome once finished: the result, or the typed error (encoded: see `RunErrorSchema`). */
  result: exact(Schema.Unknown),
  error: exact(Schema.Unknown),
  /** The error's message, for people. */
  errorMessage: exact(Schema.String),
  /** The run's labels, when it has any. */
  labels: exact(Labels)
})
export type RunRow = typeof RunRow.Type

/**
 * A stored row that does not decode (written by a newer flotta, or edited by hand). Reads skip it and log this,
 * naming where it is: one bad row does not keep the rest of the fleet from coming back.
 */
export class StoreRowInvalid extends Schema.TaggedError<StoreRowInvalid>()("StoreRowInvalid", {
  location: Schema.String,
  table: Schema.String,
  key: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `the store ${this.location} has a row it cannot read in ${this.table} (${this.key}), skipped: ${this.reason}`
  }
}

export interface StoreHealth {
  readonly state: "ok" | "degraded"
  /** Why writes are failing, while they are. */
  readonly reason: string | null
  readonly since: string | null
  /** Writes waiting to be committed. */
  readonly pending: number
  /** Report entries dropped because the buffer was full while the store refused writes. */
  readonly lost: number
}

export interface StoreInfo {
  readonly kind: "memory" | "sqlite" | "postgres"
  /** The file, or the database (without its password). */
  readonly location: string
  readonly schemaVersion: number
  readonly sizeBytes: number | null
  readonly health: StoreHealth
  /** The SQLite driver in use: `node:sqlite` (Node 22.13 and later) or `better-sqlite3 12.11.1` (Node 20). */
  readonly driver?: string
}

export interface PruneReport {
  readonly reports: number
  readonly turns: number
  readonly agents: number
  readonly runs: number
  /** Cost rows (a finished turn's spend per model, for `costs`). */
  readonly costs?: number
  /** Runs' recorded diffs (see `RunDiff`). */
  readonly diffs?: number
}

/**
 * The store's reads fail with `StoreUnavailable` (naming the store) when the database does: a dropped connection,
 * a killed server, a table gone. Writes never fail: they wait in the buffer (see `StoreHealth`).
 */
export interface StoreShape {
  readonly info: Effect.Effect<StoreInfo>
  readonly health: Effect.Effect<StoreHealth>
  /** Tells `listener` when the store turns degraded or recovers; returns the way to stop telling it. */
  readonly onHealth: (listener: (health: StoreHealth) => void) => () => void
  /** Numbers the entry at once (the cursor continues across restarts) and commits it behind. */
  readonly appendReport: (
    entry: Omit<ReportEntry, "seq" | "turnId"> & { readonly turnId: string | undefined }
  ) => ReportEntry
  readonly readReports: (query: ReportQuery) => Effect.Effect<ReportPage, StoreUnavailable>
  readonly saveAgent: (row: AgentRow) => void
  readonly saveTurn: (row: TurnRow) => void
  readonly saveRun: (row: RunRow) => void
  /** The state of a layer above the engine, by key (the scheduler's), as JSON-able data. */
  readonly saveState: (key: string, value: unknown) => void
  readonly agents: Effect.Effect<ReadonlyArray<AgentRow>, StoreUnavailable>
  /** One agent's row by name (a closed one's too, until retention removes it). */
  readonly agent: (name: string) => Effect.Effect<Option.Option<AgentRow>, StoreUnavailable>
  /** An agent's turns, oldest first. */
  readonly turns: (agent: string) => Effect.Effect<ReadonlyArray<TurnRow>, StoreUnavailable>
  /** The highest turn number an agent of this name has had (0 for none): a new one numbers on from it. */
  readonly lastTurn: (agent: string) => Effect.Effect<number, StoreUnavailable>
  readonly runs: Effect.Effect<ReadonlyArray<RunRow>, StoreUnavailable>
  readonly run: (name: string) => Effect.Effect<Option.Option<RunRow>, StoreUnavailable>
  readonly loadState: (key: string) => Effect.Effect<Option.Option<unknown>, StoreUnavailable>
  /** Waits until every write made so far is committed (or `timeout` passes: then false). */
  readonly flush: (timeoutMs?: number) => Effect.Effect<boolean>
  /** Spend in a window, grouped (see `Costs`): summed by the database in a durable store. */
  readonly costs: (window: Costs.CostWindow) => Effect.Effect<Costs.CostReport, StoreUnavailable>
  /** Removes report entries, finished turns, cost rows, closed agents and finished runs older than `days`. */
  readonly prune: (days: number) => Effect.Effect<PruneReport>
}

/**
 * A schema the store may live in: a plain lower-case identifier. The store creates it quoted but reaches it
 * through `search_path`, which folds case, so an upper-case name would name two different schemas.
 */
export const PostgresSchemaName = Schema.String.pipe(
  Schema.pattern(/^[a-z_][a-z0-9_]{0,62}$/, {
    message: () => "a schema name is lower-case letters, digits and '_', not starting with a digit, at most 63"
  })
)

/**
 * The turns of the agent a row describes, out of all the store keeps under its name: an earlier agent of the same
 * name (closed, then the name used again) numbered its turns up to `turnsBefore`. A row without it has them all.
 */
export const ownTurns = (row: AgentRow, turns: ReadonlyArray<TurnRow>): ReadonlyArray<TurnRow> => {
  const before = row.turnsBefore
  return before === undefined ? turns : turns.filter((turn) => turn.n > before)
}

/**
 * A stored row the engine cannot do without that does not decode (a turn's outcome, a run's diff): the read fails
 * with `StoreUnavailable`, naming the store and the row, instead of the fleet dying on it.
 */
export const unreadable = Effect.fnUntraced(function*(store: Pick<StoreShape, "info">, what: string) {
  return yield* Effect.flatMap(store.info, ({ location }) =>
    new StoreUnavailable({
      location,
      reason: `${what} cannot be read`,
      hint: "It was written by a newer flotta or edited by hand: restore the store from a backup"
    }))
})

/** Where a durable store is: the config's `store` value. */
export type StoreConfig =
  | "memory"
  | { readonly sqlite: string }
  | { readonly postgres: string | { readonly url: string; readonly schema?: string } }

export interface StoreOptions {
  /** Read what is there without taking the store (no lock, no writes): for tools beside a running fleet. */
  readonly readOnly?: boolean
  /**
   * Hold the store only for a moment (a shell run importing its record, see `RunInbox`): a host that opens it
   * meanwhile waits for it (up to `BRIEF_HOLD_WAIT`) instead of failing with `StoreLocked`.
   */
  readonly brief?: boolean
  /**
   * Report entries kept waiting while the store refuses writes (default 200,000); past it the oldest are
   * dropped and counted in `health.lost`. Agents, turns, runs and state are kept by key and never dropped.
   */
  readonly maxPendingReports?: number
  /** Days of report entries and finished turns to keep (default 30). */
  readonly retainDays?: number
}

export const DEFAULT_RETAIN_DAYS = 30

/** How long an opener waits for a store held briefly (`StoreOptions.brief`) before it is `StoreLocked`. */
export const BRIEF_HOLD_WAIT = "10 seconds"

/** Finished turns a memory store keeps per agent, and finished runs in all: a long-lived fleet stays bounded. */
export const MEMORY_TURNS_PER_AGENT = 1_000
export const MEMORY_FINISHED_RUNS = 10_000
/** Turns a memory store keeps of closed agents in all; past it the turns of the agents closed first go. */
export const MEMORY_CLOSED_TURNS = 20_000
/** Cost rows a memory store keeps (a turn's spend per model); past it the oldest go. */
export const MEMORY_COST_ROWS = 200_000

/**
 * A memory store: the report log in one array (`seq` is the index + 1), the rest in maps. A closed agent keeps
 * its turns (its transcript is read from here, a run's record exported from here) until the closed agents' turns
 * pass `MEMORY_CLOSED_TURNS`, and
 * past the bounds above the oldest finished turns and runs go first.
 */
export const makeMemory = (): StoreShape => {
  const entries: Array<ReportEntry> = []
  const agents = new Map<string, AgentRow>()
  const turns = new Map<string, Map<string, TurnRow>>()
  /** Closed agents in the order they closed, with how many turns each kept then; and those turns in all. */
  const closed = new Map<string, number>()
  let closedTurns = 0
  const reopen = (name: string) => {
    closedTurns -= closed.get(name) ?? 0
    closed.delete(name)
  }
  const runs = new Map<string, RunRow>()
  const state = new Map<string, string>()
  const lastTurns = new Map<string, number>()
  /** A finished turn's spend per model, kept when its turn goes (a closed agent's spend still counts). */
  const costs = new Map<string, Costs.CostRow>()
  const health: StoreHealth = { state: "ok", reason: null, since: null, pending: 0, lost: 0 }
  return {
    info: Effect.sync(() => ({ kind: "memory", location: "memory", schemaVersion: 0, sizeBytes: null, health })),
    health: Effect.succeed(health),
    onHealth: () => () => undefined,
    appendReport: (entry) => {
      // A literal (not a spread): appends are the log's hot path.
      const seq = entries.length + 1
      const full: ReportEntry = entry.turnId === undefined
        ? { seq, at: entry.at, agent: entry.agent, kind: entry.kind, data: entry.data }
        : { seq, at: entry.at, agent: entry.agent, kind: entry.kind, turnId: entry.turnId, data: entry.data }
      entries.push(full)
      return full
    },
    readReports: (query) => Effect.sync(() => readArray(entries, query)),
    saveAgent: (row) => {
      agents.set(row.name, row)
      reopen(row.name)
      if (row.status !== "closed") return
      const kept = turns.get(row.name)?.size ?? 0
      closed.set(row.name, kept)
      closedTurns += kept
      for (const [name] of closed) {
        if (closedTurns <= MEMORY_CLOSED_TURNS) break
        reopen(name)
        turns.delete(name)
      }
    },
    saveTurn: (row) => {
      let byId = turns.get(row.agent)
      if (byId === undefined) turns.set(row.agent, byId = new Map())
      byId.set(row.record.turnId, row)
      if (row.n > (lastTurns.get(row.agent) ?? 0)) lastTurns.set(row.agent, row.n)
      for (const cost of Costs.costRowsOf(row)) {
        costs.set(`${cost.agent}\u0000${cost.turnId}\u0000${cost.model}`, cost)
        if (costs.size > MEMORY_COST_ROWS) costs.delete(costs.keys().next().value!)
      }
      if (byId.size > MEMORY_TURNS_PER_AGENT) {
        for (const [id, turn] of byId) {
          if (byId.size <= MEMORY_TURNS_PER_AGENT) break
          if (turn.record.finishedAt !== null) byId.delete(id)
        }
      }
    },
    saveRun: (row) => {
      runs.delete(row.name) // re-inserted last: the map's order is the order of the last write
      runs.set(row.name, row)
      if (runs.size > MEMORY_FINISHED_RUNS) {
        for (const [name, run] of runs) {
          if (runs.size <= MEMORY_FINISHED_RUNS) break
          if (run.finishedAt !== null) runs.delete(name)
        }
      }
    },
    // Kept as JSON, as a durable store would: a later change to the caller's object is not a write.
    saveState: (key, value) => void state.set(key, JSON.stringify(value)),
    agents: Effect.sync(() => [...agents.values()]),
    agent: (name) => Effect.sync(() => Option.fromNullable(agents.get(name))),
    turns: (agent) => Effect.sync(() => [...(turns.get(agent)?.values() ?? [])].sort((a, b) => a.n - b.n)),
    lastTurn: (agent) => Effect.sync(() => lastTurns.get(agent) ?? 0),
    runs: Effect.sync(() => [...runs.values()]),
    run: (name) => Effect.sync(() => Option.fromNullable(runs.get(name))),
    loadState: (key) => Effect.sync(() => Option.map(Option.fromNullable(state.get(key)), (s) => JSON.parse(s))),
    flush: () => Effect.succeed(true),
    costs: (window) => Effect.sync(() => Costs.aggregate(costs.values(), window)),
    // The memory log keeps its entries (`seq` is an index); the rest is pruned like a durable store's.
    prune: (days) =>
      Effect.clockWith((clock) => {
        const before = new Date(clock.unsafeCurrentTimeMillis() - days * 86_400_000).toISOString()
        let turnCount = 0
        for (const [name, byId] of turns) {
          for (const [id, row] of byId) {
            const finished = row.record.finishedAt
            if (finished !== null && finished < before) {
              byId.delete(id)
              turnCount++
            }
          }
          if (byId.size === 0) turns.delete(name)
        }
        let costCount = 0
        for (const [key, row] of costs) {
          if (row.at < before) {
            costs.delete(key)
            costCount++
          }
        }
        let agentCount = 0
        for (const [name, row] of agents) {
          if (row.status === "closed" && !turns.has(name)) {
            agents.delete(name)
            agentCount++
          }
        }
        // What the closed agents keep now, counted again.
        closedTurns = 0
        for (const name of closed.keys()) {
          if (!agents.has(name)) {
            closed.delete(name)
            continue
          }
          const kept = turns.get(name)?.size ?? 0
          closed.set(name, kept)
          closedTurns += kept
        }
        let runCount = 0
        for (const [name, row] of runs) {
          if (row.finishedAt !== null && row.finishedAt < before) {
            runs.delete(name)
            runCount++
          }
        }
        let diffCount = 0
        for (const [key, value] of state) {
          if (!key.startsWith(RunDiff.STATE_PREFIX)) continue
          const recorded = decodeRecordedAt(value)
          if (Option.isSome(recorded) && recorded.value.at < before) {
            state.delete(key)
            diffCount++
          }
        }
        return Effect.succeed({
          reports: 0,
          turns: turnCount,
          agents: agentCount,
          runs: runCount,
          costs: costCount,
          diffs: diffCount
        })
      })
  }
}

/** When a run's diff kept in the state was recorded (see `RunDiff`). */
const decodeRecordedAt = Schema.decodeUnknownOption(Schema.parseJson(Schema.Struct({ at: Schema.String })))

/** A cursor read over entries in `seq` order, where entry i has `seq` i + 1. */
export const readArray = (entries: ReadonlyArray<ReportEntry>, query: ReportQuery): ReportPage => {
  const { agent, kinds, last, limit = DEFAULT_LIMIT, since = 0 } = query
  if (last !== undefined) {
    // Walk back from the end: the cost is the tail read, not the whole log.
    const max = Math.max(1, Math.min(last, MAX_LIMIT))
    const out: Array<ReportEntry> = []
    const from = Math.max(0, since)
    for (let index = entries.length - 1; index >= from && out.length < max; index--) {
      if (matches(entries[index]!, agent, kinds)) out.push(entries[index]!)
    }
    return { entries: out.reverse(), next: Math.max(since, entries.length) }
  }
  const max = Math.max(1, Math.min(limit, MAX_LIMIT))
  const out: Array<ReportEntry> = []
  let index = Math.max(0, since)
  for (; index < entries.length && out.length < max; index++) {
    if (matches(entries[index]!, agent, kinds)) out.push(entries[index]!)
  }
  return { entries: out, next: Math.max(since, index) }
}

/** Describes a store config for people: the file, or the database without its password. */
export const describeConfig = (config: StoreConfig): string => {
  if (config === "memory") return "memory"
  if ("sqlite" in config) return config.sqlite
  const url = typeof config.postgres === "string" ? config.postgres : config.postgres.url
  return url.replace(/\/\/([^:@/]+):[^@/]*@/, "//$1:***@")
}

export class Store extends Context.Tag("@flotta/core/Store")<Store, StoreShape>() {
  /** State for the life of the Layer. Share one between two fleets in a test to show a restart. */
  static readonly memory: Layer.Layer<Store> = Layer.sync(Store, makeMemory)
}
