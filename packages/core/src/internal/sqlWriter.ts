/**
 * The durable store's write-behind buffer. Writes never wait: each lands in `pending`; one fiber takes the
 * whole buffer, commits it in one transaction, and goes again. When a commit fails (a full disk, a read-only
 * file, a lost connection) the batch goes back in front of what came meanwhile, the store reports itself
 * `degraded`, and the fiber retries on `commitRetry`. Keyed rows (agents, turns, runs, state) coalesce, so only
 * report entries can grow while the store refuses; past `maxPendingReports` (default 200,000) the oldest waiting
 * entries are dropped and counted as `lost`.
 */
import type { SqlClient } from "@effect/sql/SqlClient"
import { Cause, Clock, DateTime, Deferred, Effect, Option, Schedule } from "effect"
import type { Scope } from "effect"
import { costRowsOf } from "../Costs.js"
import type { AgentRow, RunRow, StoreHealth, StoreOptions, StoreShape, TurnRow } from "../Store.js"
import type { ReportEntry } from "./reportQuery.js"
import { causeText, COST_CHUNK, costColumns, labelColumns } from "./sqlSchema.js"
import type { Dialect } from "./sqlSchema.js"

export const MAX_PENDING_REPORTS = 200_000

/** How a refused commit is retried: 50 ms doubling up to 5 s, jittered (from `Random`, so tests control it). */
export const commitRetry: Schedule.Schedule<unknown> = Schedule.exponential("50 millis").pipe(
  Schedule.union(Schedule.spaced("5 seconds")),
  Schedule.jittered
)

/** Writes not committed yet, keyed rows by key (the last write wins). */
export interface Batch {
  reports: Array<ReportEntry>
  readonly agents: Map<string, AgentRow>
  readonly turns: Map<string, TurnRow>
  readonly runs: Map<string, RunRow>
  readonly state: Map<string, string>
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

export const turnKey = (agent: string, turnId: string) => `${agent}\u0000${turnId}`

const chunks = <A>(items: ReadonlyArray<A>, size: number): Array<ReadonlyArray<A>> => {
  const out: Array<ReadonlyArray<A>> = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}

const iso = (millis: number) => DateTime.formatIso(DateTime.unsafeMake(millis))

const mergeInto = <A>(into: Map<string, A>, from: Map<string, A>) => {
  for (const [k, v] of from) into.set(k, v)
}

/** The buffer, its committing fiber (in the scope) and the health it shows. */
export const make = Effect.fn("SqlStore.writer")(function*(
  sql: SqlClient,
  dialect: Dialect,
  options: StoreOptions
): Effect.fn.Return<Writer, never, Scope.Scope> {
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
            updated_at: iso(now),
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
      // A finished turn's spend per model, for the cost console (see `Costs`).
      const costs = [...batch.turns.values()].flatMap(costRowsOf)
      for (const part of chunks(costs, COST_CHUNK)) {
        yield* sql`insert into flotta_costs ${sql.insert(part.map(costColumns))}
          on conflict (agent, turn_id, model) do update set at = excluded.at, cost_usd = excluded.cost_usd,
          run = excluded.run`
      }
      // Its labels, once per turn (a turn's cost rows share them).
      const labels = [...batch.turns.values()].flatMap((row) => costRowsOf(row).slice(0, 1).flatMap(labelColumns))
      for (const part of chunks(labels, COST_CHUNK)) {
        yield* sql`insert into flotta_turn_labels ${sql.insert(part)}
          on conflict (agent, turn_id, key) do update set value = excluded.value`
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
    for (const from of [batch, pending]) {
      mergeInto(merged.agents, from.agents)
      mergeInto(merged.turns, from.turns)
      mergeInto(merged.runs, from.runs)
      mergeInto(merged.state, from.state)
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
      health.since = next === "degraded" ? iso(now) : null
      for (const listener of listeners) listener({ ...health })
    }
  }

  const retry = yield* Schedule.driver(commitRetry)
  const flushLoop = Effect.gen(function*() {
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
        yield* retry.reset
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
      yield* retry.next(undefined).pipe(Effect.ignore) // sleeps the backoff; the schedule never ends
      wake.unsafeOpen()
    }
  })

  // Interruptible whatever the region it is opened in (a finalizer's): closing the scope must be able to stop it.
  if (options.readOnly !== true) yield* Effect.forkScoped(Effect.interruptible(flushLoop))

  const flush = (timeoutMs = 30_000) =>
    Effect.suspend(() => {
      if (committed >= written) return Effect.succeed(true)
      const done = Deferred.unsafeMake<void>(undefined as never)
      waiters.push({ upTo: written, done })
      wake.unsafeOpen()
      return Deferred.await(done).pipe(Effect.timeoutOption(timeoutMs), Effect.map(Option.isSome))
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

  const buffers = (): ReadonlyArray<Batch> => (inFlight === undefined ? [pending] : [inFlight, pending])

  return {
    buffers,
    committedSeq: () => committedSeq,
    lastSeq: () => nextSeq - 1,
    health: () => ({ ...health, pending: buffers().reduce((sum, batch) => sum + batchSize(batch), 0) }),
    onHealth: (listener) => {
      listeners.add(listener)
      return () => void listeners.delete(listener)
    },
    flush,
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
    }
  }
})

/** The writer as the reads and the store see it. */
export interface Writer {
  /** What waits, oldest first: the batch being committed (if any), then the rest. */
  readonly buffers: () => ReadonlyArray<Batch>
  /** Every report entry up to this `seq` is committed. */
  readonly committedSeq: () => number
  /** The newest entry's `seq`, committed or not. */
  readonly lastSeq: () => number
  readonly health: () => StoreHealth
  readonly onHealth: StoreShape["onHealth"]
  readonly flush: (timeoutMs?: number) => Effect.Effect<boolean>
  readonly appendReport: StoreShape["appendReport"]
  readonly saveAgent: StoreShape["saveAgent"]
  readonly saveTurn: StoreShape["saveTurn"]
  readonly saveRun: StoreShape["saveRun"]
  readonly saveState: StoreShape["saveState"]
}
