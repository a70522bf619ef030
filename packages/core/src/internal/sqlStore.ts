/**
 * The durable store over `@effect/sql`, for any dialect (SQLite, Postgres): schema migrations, a write-behind
 * buffer committed in batches, reads that merge what is committed with what waits, and retention.
 *
 * Writes never wait. Each write lands in `pending`; one fiber takes the whole buffer, commits it in one
 * transaction, and goes again. When a commit fails (a full disk, a read-only file, a lost connection) the
 * batch goes back in front of what came meanwhile, the store reports itself `degraded`, and the fiber retries
 * with a backoff. Keyed rows (agents, turns, runs, state) coalesce, so only report entries can grow while the
 * store refuses; past `maxPendingReports` (default 200,000) the oldest waiting entries are dropped and counted as
 * `lost`.
 */
import * as Migrator from "@effect/sql/Migrator"
import { SqlClient } from "@effect/sql/SqlClient"
import { Cause, Clock, Deferred, Effect, Option } from "effect"
import type { Scope } from "effect"
import { StoreSchemaTooNew, StoreUnavailable } from "../Errors.js"
import { DEFAULT_RETAIN_DAYS } from "../Store.js"
import type {
  AgentRow,
  PruneReport,
  RunRow,
  StoreHealth,
  StoreInfo,
  StoreOptions,
  StoreShape,
  TurnRow
} from "../Store.js"
import { DEFAULT_LIMIT, matches, MAX_LIMIT } from "./reportQuery.js"
import type { ReportEntry, ReportPage, ReportQuery } from "./reportQuery.js"

export const MIGRATIONS_TABLE = "flotta_migrations"

export const SCHEMA_VERSION = 1

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

export interface Dialect {
  readonly kind: "sqlite" | "postgres"
  readonly location: string
  readonly sizeBytes: Effect.Effect<number | null>
  /** Rows per multi-row insert (SQLite allows 32,766 parameters in one statement). */
  readonly chunk: number
  /** The SQLite driver in use (`node:sqlite`, `better-sqlite3 12.11.1`). */
  readonly driver?: string
}

const unavailable = (location: string, reason: string, hint: string) => new StoreUnavailable({ location, reason, hint })

/**
 * The schema version a store has (0 when it has none yet). The table is looked up first: a statement that
 * fails is remembered by the client's statement cache, so the query itself must never fail.
 */
export const schemaVersion = (sql: SqlClient, kind: Dialect["kind"]) =>
  Effect.gen(function*() {
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
export const migrate = (sql: SqlClient, kind: Dialect["kind"], location: string) =>
  Effect.gen(function*() {
    const found = yield* schemaVersion(sql, kind).pipe(
      Effect.mapError((e) => unavailable(location, `its schema version cannot be read: ${causeText(e)}`, HINT_RESTORE))
    )
    if (found > SCHEMA_VERSION) {
      return yield* new StoreSchemaTooNew({ location, found, supported: SCHEMA_VERSION })
    }
    yield* Migrator.make({})({
      loader: Migrator.fromRecord({ "1_init": createSchema(sql) }),
      table: MIGRATIONS_TABLE
    }).pipe(
      Effect.provideService(SqlClient, sql),
      Effect.mapError((e) =>
        unavailable(location, `its schema could not be brought up to date: ${causeText(e)}`, HINT_RESTORE)
      )
    )
  })

export const HINT_RESTORE = "Move the file aside (nothing was overwritten) and start again, or restore a backup"

/** The message of an SQL failure, down to the driver's own words. */
export const causeText = (error: unknown): string => {
  let current: unknown = error
  const parts: Array<string> = []
  for (let i = 0; i < 4 && current !== undefined && current !== null; i++) {
    const message = (current as { message?: unknown }).message
    if (typeof message === "string" && message.length > 0 && !parts.includes(message)) parts.push(message)
    current = (current as { cause?: unknown }).cause
  }
  return parts.length === 0 ? String(error) : parts.join(": ")
}

interface Batch {
  reports: Array<ReportEntry>
  agents: Map<string, AgentRow>
  turns: Map<string, TurnRow>
  runs: Map<string, RunRow>
  state: Map<string, string>
}

const emptyBatch = (): Batch => ({
  reports: [],
  agents: new Map(),
  turns: new Map(),
  runs: new Map(),
  state: new Map()
})

const batchSize = (batch: Batch) =>
  batch.reports.length + batch.agents.size + batch.turns.size + batch.runs.size + batch.state.size

export const MAX_PENDING_REPORTS = 200_000

const turnKey = (agent: string, turnId: string) => `${agent}\u0000${turnId}`

const chunks = <A>(items: ReadonlyArray<A>, size: number): Array<ReadonlyArray<A>> => {
  const out: Array<ReadonlyArray<A>> = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}

interface ReportRow {
  readonly seq: number | string
  readonly at: string
  readonly agent: string
  readonly kind: string
  readonly turn_id: string | null
  readonly data: string
}

const fromRow = (row: ReportRow): ReportEntry =>
  row.turn_id === null
    ? { seq: Number(row.seq), at: row.at, agent: row.agent, kind: row.kind, data: JSON.parse(row.data) }
    : {
      seq: Number(row.seq),
      at: row.at,
      agent: row.agent,
      kind: row.kind,
      turnId: row.turn_id,
      data: JSON.parse(row.data)
    }

/** A store over an open, migrated database. The buffer's fiber and the retention timer live in the scope. */
export const make = (
  sql: SqlClient,
  dialect: Dialect,
  options: StoreOptions & { readonly readOnly?: boolean }
): Effect.Effect<StoreShape, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { location } = dialect
    const maxPending = Math.max(1, options.maxPendingReports ?? MAX_PENDING_REPORTS)
    const lastSeq = yield* sql<{ readonly seq: number | string | null }>`select max(seq) as seq from flotta_reports`
      .pipe(Effect.map((rows) => Number(rows[0]?.seq ?? 0)), Effect.orDie)
    let nextSeq = lastSeq + 1
    /** Every entry up to here is committed. */
    let committedSeq = lastSeq
    let pending = emptyBatch()
    let inFlight: Batch | undefined
    /** Writes made, and writes committed: `flush` waits for the second to reach the first. */
    let written = 0
    let committed = 0
    const waiters: Array<{ readonly upTo: number; readonly done: Deferred.Deferred<void> }> = []
    const health: { -readonly [K in keyof StoreHealth]: StoreHealth[K] } = {
      state: "ok",
      reason: null,
      since: null,
      pending: 0,
      lost: 0
    }
    const wake = yield* Effect.makeLatch(false)

    const wrote = () => {
      written++
      if (inFlight === undefined) wake.unsafeOpen()
    }

    const write = (batch: Batch, now: number) =>
      Effect.gen(function*() {
        for (const part of chunks(batch.reports, dialect.chunk)) {
          yield* sql`insert into flotta_reports ${
            sql.insert(part.map((e) => ({
              seq: e.seq,
              at: e.at,
              agent: e.agent,
              kind: e.kind,
              turn_id: e.turnId ?? null,
              data: JSON.stringify(e.data ?? null)
            })))
          } on conflict do nothing`
        }
        if (batch.agents.size > 0) {
          yield* sql`insert into flotta_agents ${
            sql.insert([...batch.agents.values()].map((row) => ({
              name: row.name,
              status: row.status,
              updated_at: new Date(now).toISOString(),
              row: JSON.stringify(row)
            })))
          } on conflict (name) do update set status = excluded.status, updated_at = excluded.updated_at,
            row = excluded.row`
        }
        for (const part of chunks([...batch.turns.values()], dialect.chunk)) {
          yield* sql`insert into flotta_turns ${
            sql.insert(part.map((row) => ({
              agent: row.agent,
              turn_id: row.record.turnId,
              n: row.n,
              status: row.record.status,
              finished_at: row.record.finishedAt,
              row: JSON.stringify(row)
            })))
          } on conflict (agent, turn_id) do update set status = excluded.status,
            finished_at = excluded.finished_at, row = excluded.row`
        }
        if (batch.runs.size > 0) {
          yield* sql`insert into flotta_runs ${
            sql.insert([...batch.runs.values()].map((row) => ({
              name: row.name,
              status: row.status,
              finished_at: row.finishedAt,
              row: JSON.stringify(row)
            })))
          } on conflict (name) do update set status = excluded.status, finished_at = excluded.finished_at,
            row = excluded.row`
        }
        if (batch.state.size > 0) {
          yield* sql`insert into flotta_state ${
            sql.insert([...batch.state].map(([key, value]) => ({ key, value })))
          } on conflict (key) do update set value = excluded.value`
        }
      }).pipe(sql.withTransaction)

    /** A failed batch goes back in front of what came meanwhile; newer keyed rows win. */
    const requeue = (batch: Batch) => {
      const merged = emptyBatch()
      merged.reports = batch.reports.concat(pending.reports)
      for (const key of ["agents", "turns", "runs", "state"] as const) {
        const into = merged[key] as Map<string, unknown>
        for (const [k, v] of batch[key] as Map<string, unknown>) into.set(k, v)
        for (const [k, v] of pending[key] as Map<string, unknown>) into.set(k, v)
      }
      const over = merged.reports.length - maxPending
      if (over > 0) {
        merged.reports = merged.reports.slice(over)
        health.lost += over
      }
      pending = merged
    }

    const settleWaiters = () => {
      for (let i = waiters.length - 1; i >= 0; i--) {
        if (waiters[i]!.upTo <= committed) {
          Deferred.unsafeDone(waiters[i]!.done, Effect.void)
          waiters.splice(i, 1)
        }
      }
    }

    const listeners = new Set<(health: StoreHealth) => void>()
    const setHealth = (next: "ok" | "degraded", reason: string | null, now: number) => {
      const changed = health.state !== next
      health.state = next
      health.reason = reason
      if (changed) {
        health.since = next === "degraded" ? new Date(now).toISOString() : null
        for (const listener of listeners) listener({ ...health })
      }
    }

    const flushLoop = Effect.gen(function*() {
      let backoffMs = 50
      while (true) {
        yield* wake.await
        yield* wake.close
        if (batchSize(pending) === 0) continue
        // Let what the running fibers are about to write join this batch.
        yield* Effect.yieldNow()
        const batch = pending
        const upTo = written
        pending = emptyBatch()
        inFlight = batch
        const exit = yield* Effect.exit(write(batch, yield* Clock.currentTimeMillis))
        inFlight = undefined
        const now = yield* Clock.currentTimeMillis
        if (exit._tag === "Success") {
          const last = batch.reports[batch.reports.length - 1]
          if (last !== undefined) committedSeq = last.seq
          committed = upTo
          backoffMs = 50
          if (health.state === "degraded") setHealth("ok", null, now)
          settleWaiters()
          if (batchSize(pending) > 0) wake.unsafeOpen()
          continue
        }
        requeue(batch)
        const reason = causeText(Cause.squash(exit.cause))
        if (health.state !== "degraded") {
          yield* Effect.logError(`the store ${location} refused a write, keeping it to retry: ${reason}`)
        }
        setHealth("degraded", reason, now)
        yield* Effect.sleep(backoffMs)
        backoffMs = Math.min(backoffMs * 2, 5_000)
        wake.unsafeOpen()
      }
    })

    if (options.readOnly !== true) yield* Effect.forkScoped(flushLoop)

    const flush = (timeoutMs = 30_000) =>
      Effect.suspend(() => {
        if (committed >= written) return Effect.succeed(true)
        const done = Deferred.unsafeMake<void>(undefined as never)
        waiters.push({ upTo: written, done })
        wake.unsafeOpen()
        return Deferred.await(done).pipe(
          Effect.timeoutOption(timeoutMs),
          Effect.map(Option.isSome)
        )
      })

    // Whatever waits is committed before the store closes, within a deadline.
    yield* Effect.addFinalizer(() =>
      flush(10_000).pipe(
        Effect.flatMap((ok) =>
          ok ? Effect.void : Effect.logError(
            `the store ${location} closed with ${batchSize(pending)} writes it could not commit: ` +
              (health.reason ?? "it did not answer in time")
          )
        )
      )
    )

    /** Entries not committed yet, in `seq` order (the batch being written, then the rest). */
    const waiting = (): Array<
      ReportEntry
    > => (inFlight === undefined ? pending.reports : inFlight.reports.concat(pending.reports))

    const readReports = (query: ReportQuery): Effect.Effect<ReportPage> =>
      Effect.suspend(() => {
        const { agent, kinds, last, limit = DEFAULT_LIMIT, since = 0 } = query
        // One picture at one instant: committed up to `bound` in the database, the rest in the buffer.
        const bound = committedSeq
        const buffered = waiting().filter((e) => e.seq > bound && e.seq > since && matches(e, agent, kinds))
        const newest = nextSeq - 1
        const where = sql.and([
          sql`seq > ${since}`,
          sql`seq <= ${bound}`,
          ...(agent === undefined ? [] : [sql`agent = ${agent}`]),
          ...(kinds === undefined ? [] : kinds.length === 0 ? [sql`1 = 0`] : [sql`kind in ${sql.in(kinds)}`])
        ])
        if (last !== undefined) {
          const max = Math.max(1, Math.min(last, MAX_LIMIT))
          const tail = buffered.slice(-max)
          const fromDb = tail.length >= max
            ? Effect.succeed<ReadonlyArray<ReportRow>>([])
            : sql<ReportRow>`select seq, at, agent, kind, turn_id, data from flotta_reports where ${where}
                order by seq desc limit ${max - tail.length}`
          return fromDb.pipe(
            Effect.map((rows) => ({
              entries: [...rows.map(fromRow).reverse(), ...tail],
              next: Math.max(since, newest)
            })),
            Effect.orDie
          )
        }
        const max = Math.max(1, Math.min(limit, MAX_LIMIT))
        return sql<ReportRow>`select seq, at, agent, kind, turn_id, data from flotta_reports where ${where}
          order by seq limit ${max}`.pipe(
          Effect.map((rows) => {
            const entries = rows.map(fromRow)
            if (entries.length >= max) return { entries, next: entries[entries.length - 1]!.seq }
            const more = buffered.slice(0, max - entries.length)
            const all = entries.concat(more)
            // Everything up to the newest entry was scanned unless the buffer still had more to give.
            const next = more.length < buffered.length ? all[all.length - 1]!.seq : Math.max(since, newest)
            return { entries: all, next }
          }),
          Effect.orDie
        )
      })

    const overlay = <A>(rows: ReadonlyArray<A>, key: (a: A) => string, field: "agents" | "turns" | "runs") => {
      const byKey = new Map(rows.map((row) => [key(row), row]))
      for (const batch of inFlight === undefined ? [pending] : [inFlight, pending]) {
        for (const [k, v] of batch[field] as Map<string, A>) byKey.set(k, v)
      }
      return [...byKey.values()]
    }

    const agents = sql<{ readonly row: string }>`select row from flotta_agents`.pipe(
      Effect.map((rows) => overlay(rows.map((r) => JSON.parse(r.row) as AgentRow), (a) => a.name, "agents")),
      Effect.orDie
    )

    const turns = (agent: string) =>
      sql<{ readonly row: string }>`select row from flotta_turns where agent = ${agent}`.pipe(
        Effect.map((rows) =>
          overlay(rows.map((r) => JSON.parse(r.row) as TurnRow), (t) => turnKey(t.agent, t.record.turnId), "turns")
            .filter((t) => t.agent === agent)
            .sort((a, b) => a.n - b.n)
        ),
        Effect.orDie
      )

    const lastTurn = (agent: string) =>
      Effect.suspend(() => {
        let buffered = 0
        for (const batch of inFlight === undefined ? [pending] : [inFlight, pending]) {
          for (const row of batch.turns.values()) if (row.agent === agent && row.n > buffered) buffered = row.n
        }
        return sql<{ readonly n: number | string | null }>`select max(n) as n from flotta_turns where agent = ${agent}`
          .pipe(Effect.map((rows) => Math.max(buffered, Number(rows[0]?.n ?? 0))), Effect.orDie)
      })

    const runs = sql<{ readonly row: string }>`select row from flotta_runs`.pipe(
      Effect.map((rows) => overlay(rows.map((r) => JSON.parse(r.row) as RunRow), (r) => r.name, "runs")),
      Effect.orDie
    )

    const run = (name: string) =>
      Effect.suspend(() => {
        const buffered = pending.runs.get(name) ?? inFlight?.runs.get(name)
        if (buffered !== undefined) return Effect.succeed(Option.some(buffered))
        return sql<{ readonly row: string }>`select row from flotta_runs where name = ${name}`.pipe(
          Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), (r) => JSON.parse(r.row) as RunRow)),
          Effect.orDie
        )
      })

    const loadState = (key: string) =>
      Effect.suspend(() => {
        const buffered = pending.state.get(key) ?? inFlight?.state.get(key)
        if (buffered !== undefined) return Effect.succeed(Option.some(JSON.parse(buffered) as unknown))
        return sql<{ readonly value: string }>`select value from flotta_state where key = ${key}`.pipe(
          Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), (r) => JSON.parse(r.value) as unknown)),
          Effect.orDie
        )
      })

    const prune = (days: number) =>
      Effect.gen(function*() {
        const before = new Date((yield* Clock.currentTimeMillis) - days * 86_400_000).toISOString()
        // A live agent keeps its row and every turn not finished; only history older than the cutoff goes.
        const count = (rows: ReadonlyArray<unknown>) => rows.length
        const reports = yield* sql`delete from flotta_reports where at < ${before} returning seq`.pipe(
          Effect.map(count)
        )
        const turnCount = yield* sql`delete from flotta_turns where finished_at is not null and finished_at < ${before}
          returning n`.pipe(Effect.map(count))
        const agentCount = yield* sql`delete from flotta_agents where status = 'closed' and updated_at < ${before}
          returning name`.pipe(Effect.map(count))
        const runCount = yield* sql`delete from flotta_runs where finished_at is not null and finished_at < ${before}
          returning name`.pipe(Effect.map(count))
        return { reports, turns: turnCount, agents: agentCount, runs: runCount } satisfies PruneReport
      }).pipe(
        Effect.tapError((e) => Effect.logWarning(`pruning the store ${location} failed: ${causeText(e)}`)),
        Effect.orElseSucceed((): PruneReport => ({ reports: 0, turns: 0, agents: 0, runs: 0 }))
      )

    const retainDays = options.retainDays ?? DEFAULT_RETAIN_DAYS
    if (options.readOnly !== true && retainDays > 0) {
      yield* prune(retainDays).pipe(
        Effect.zipRight(Effect.sleep("1 hour")),
        Effect.forever,
        Effect.forkScoped
      )
    }

    const healthNow = () => ({
      ...health,
      pending: batchSize(pending) + (inFlight === undefined ? 0 : batchSize(inFlight))
    })

    const info: Effect.Effect<StoreInfo> = Effect.gen(function*() {
      return {
        kind: dialect.kind,
        location,
        schemaVersion: yield* schemaVersion(sql, dialect.kind).pipe(Effect.orElseSucceed(() => -1)),
        sizeBytes: yield* dialect.sizeBytes,
        health: healthNow(),
        ...(dialect.driver === undefined ? {} : { driver: dialect.driver })
      }
    })

    return {
      info,
      health: Effect.sync(healthNow),
      onHealth: (listener: (health: StoreHealth) => void) => {
        listeners.add(listener)
        return () => void listeners.delete(listener)
      },
      appendReport: (entry) => {
        const seq = nextSeq++
        const full: ReportEntry = entry.turnId === undefined
          ? { seq, at: entry.at, agent: entry.agent, kind: entry.kind, data: entry.data }
          : { seq, at: entry.at, agent: entry.agent, kind: entry.kind, turnId: entry.turnId, data: entry.data }
        pending.reports.push(full)
        if (pending.reports.length > maxPending) {
          // Only while the store refuses writes: the oldest tenth goes at once, not one shift per append.
          const drop = Math.ceil(maxPending / 10)
          pending.reports.splice(0, drop)
          health.lost += drop
        }
        wrote()
        return full
      },
      readReports,
      saveAgent: (row) => {
        pending.agents.set(row.name, row)
        wrote()
      },
      saveTurn: (row) => {
        pending.turns.set(turnKey(row.agent, row.record.turnId), row)
        wrote()
      },
      saveRun: (row) => {
        pending.runs.set(row.name, row)
        wrote()
      },
      saveState: (key, value) => {
        pending.state.set(key, JSON.stringify(value))
        wrote()
      },
      agents,
      turns,
      lastTurn,
      runs,
      run,
      loadState,
      flush,
      prune
    } satisfies StoreShape
  })
