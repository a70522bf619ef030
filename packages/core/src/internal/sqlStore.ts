/**
 * The durable store over `@effect/sql`, for any dialect (SQLite, Postgres), over an open, migrated database
 * (`sqlSchema`): the write-behind writer (`sqlWriter`), the reads (`sqlReads`), what the store says of itself,
 * and retention.
 */
import type { SqlClient } from "@effect/sql/SqlClient"
import { Clock, DateTime, Effect } from "effect"
import type { Scope } from "effect"
import type { StoreUnavailable } from "../Errors.js"
import * as RunDiff from "../RunDiff.js"
import { DEFAULT_RETAIN_DAYS } from "../Store.js"
import type { PruneReport, StoreInfo, StoreOptions, StoreShape } from "../Store.js"
import * as Reads from "./sqlReads.js"
import { causeText, schemaVersion } from "./sqlSchema.js"
import type { Dialect } from "./sqlSchema.js"
import * as Writer from "./sqlWriter.js"

const NO_PRUNE: PruneReport = { reports: 0, turns: 0, agents: 0, runs: 0 }

/** A store over an open, migrated database. The buffer's fiber and the retention timer live in the scope. */
export const make = Effect.fn("SqlStore.make")(function*(
  sql: SqlClient,
  dialect: Dialect,
  options: StoreOptions
): Effect.fn.Return<StoreShape, StoreUnavailable, Scope.Scope> {
  const { location } = dialect
  const writer = yield* Writer.make(sql, dialect, options)
  const reads = Reads.make(sql, location, writer)

  const prune = (days: number) =>
    Effect.gen(function*() {
      const cutoff = DateTime.unsafeMake((yield* Clock.currentTimeMillis) - days * 86_400_000)
      const before = DateTime.formatIso(cutoff)
      // A live agent keeps its row and every turn not finished; only history older than the cutoff goes.
      const count = (rows: ReadonlyArray<unknown>) => rows.length
      const reports = yield* sql`delete from flotta_reports where at < ${before} returning seq`.pipe(
        Effect.map(count)
      )
      const turns = yield* sql`delete from flotta_turns where finished_at is not null and finished_at < ${before}
        returning n`.pipe(Effect.map(count))
      const costs = yield* sql`delete from flotta_costs where at < ${before} returning model`.pipe(Effect.map(count))
      const agents = yield* sql`delete from flotta_agents where status = 'closed' and updated_at < ${before}
        returning name`.pipe(Effect.map(count))
      const runs = yield* sql`delete from flotta_runs where finished_at is not null and finished_at < ${before}
        returning name`.pipe(Effect.map(count))
      const recorded = `${RunDiff.STATE_PREFIX}%`
      const diffs = yield* (dialect.kind === "sqlite"
        ? sql`delete from flotta_state where key like ${recorded} and json_extract(value, '$.at') < ${before}
            returning key`
        : sql`delete from flotta_state where key like ${recorded} and (value::jsonb ->> 'at') < ${before}
            returning key`).pipe(Effect.map(count))
      return { reports, turns, agents, runs, costs, diffs } satisfies PruneReport
    }).pipe(
      Effect.tapError((e) => Effect.logWarning(`pruning the store ${location} failed: ${causeText(e)}`)),
      Effect.orElseSucceed(() => NO_PRUNE)
    )

  const retainDays = options.retainDays ?? DEFAULT_RETAIN_DAYS
  if (options.readOnly !== true && retainDays > 0) {
    yield* prune(retainDays).pipe(
      Effect.zipRight(Effect.sleep("1 hour")),
      Effect.forever,
      Effect.interruptible, // stoppable when the scope closes, even when opened in an uninterruptible region
      Effect.forkScoped
    )
  }

  const info: Effect.Effect<StoreInfo> = Effect.gen(function*() {
    return {
      kind: dialect.kind,
      location,
      schemaVersion: yield* schemaVersion(sql, dialect.kind).pipe(Effect.orElseSucceed(() => -1)),
      sizeBytes: yield* dialect.sizeBytes,
      health: writer.health(),
      ...(dialect.driver === undefined ? {} : { driver: dialect.driver })
    }
  })

  return {
    info,
    health: Effect.sync(writer.health),
    onHealth: writer.onHealth,
    appendReport: writer.appendReport,
    saveAgent: writer.saveAgent,
    saveTurn: writer.saveTurn,
    saveRun: writer.saveRun,
    saveState: writer.saveState,
    flush: writer.flush,
    prune,
    ...reads
  } satisfies StoreShape
})
