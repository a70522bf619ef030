/**
 * An `@effect/sql` client over one SQLite file, on whichever synchronous driver this Node has: the built-in
 * `node:sqlite` (Node 22.13 and later), or `better-sqlite3` 12 where it has none (Node 20), loaded only then.
 * better-sqlite3 12 aborts the whole process on Node 24.19 and later when a GC finalizes one of its statements
 * outside JS; node:sqlite does not, so a fleet host never loads it there.
 *
 * One connection per client, behind a semaphore (a transaction holds it for its whole scope), a cache of
 * prepared statements, SQLite's compiler, `SafeIntegers`. The store (`Store.sqlite`) and the cluster's shared
 * SQLite file use it; `openSync` opens a file the same way for tools, tests and benchmarks.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import { Cache, Context, Duration, Effect, Scope, Stream } from "effect"
import { StoreUnavailable } from "./Errors.js"
import * as Driver from "./internal/sqliteDriver.js"
import type { DriverChoice, RunResult, SyncDatabase, SyncStatement } from "./internal/sqliteDriver.js"

export type { DriverChoice, RunResult, SyncDatabase, SyncStatement } from "./internal/sqliteDriver.js"

export interface SqliteClientConfig {
  readonly filename: string
  readonly readOnly?: boolean
  /** The WAL journal; the default unless read-only. */
  readonly wal?: boolean
  /** How long a statement waits for another connection's lock before `database is locked` (default 5 s). */
  readonly busyTimeoutMs?: number
  readonly prepareCacheSize?: number
  readonly prepareCacheTTL?: Duration.DurationInput
  readonly spanAttributes?: Record<string, unknown>
  /** Which driver (default `auto`: node:sqlite where this Node has it). */
  readonly driver?: DriverChoice
}

export interface SqliteClient extends SqlClient.SqlClient {
  /** The driver in use: `node:sqlite`, or `better-sqlite3 12.11.1`. */
  readonly driver: string
  readonly config: SqliteClientConfig
}

export const DEFAULT_BUSY_TIMEOUT_MS = 5_000

/**
 * The driver this Node would use, by name, or why none loads (`StoreUnavailable`, with what to run).
 * `location` is what the failure names.
 */
export const driver = Effect.fnUntraced(function*(location: string, choice: DriverChoice = "auto") {
  return yield* Effect.try({
    try: () => Driver.load(choice).name,
    catch: (error) => unavailable(location, error)
  })
})

const unavailable = (location: string, error: unknown) =>
  error instanceof Driver.DriverUnavailable
    ? new StoreUnavailable({ location, reason: error.reason, hint: error.hint })
    : new StoreUnavailable({
      location,
      reason: `no SQLite driver loads: ${error instanceof Error ? error.message : String(error)}`,
      hint: "Run flotta on Node 22.13 or later, whose built-in node:sqlite needs no build"
    })

/**
 * The connection's settings, the same on both drivers: better-sqlite3 builds SQLite with a 16 MB page cache and
 * `synchronous = normal` under WAL (durable across a crash of the process; the last commits can be lost to a
 * power cut), and node:sqlite's SQLite is built with SQLite's defaults (2 MB, and an fsync on every commit).
 */
const setUp = (db: SyncDatabase, options: { readonly wal: boolean; readonly busyTimeoutMs: number | undefined }) => {
  db.exec(`pragma busy_timeout = ${Math.max(0, Math.floor(options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS))}`)
  db.exec("pragma cache_size = -16000")
  if (options.wal) {
    db.exec("pragma journal_mode = WAL")
    db.exec("pragma synchronous = normal")
  }
}

/**
 * Opens a file synchronously, with the driver this Node uses, for tools, tests and benchmarks (set up as `make`
 * sets up its connection). Throws what the driver throws, or, when no driver loads, an error that says what to run.
 */
export const openSync = (
  filename: string,
  options: { readonly readOnly?: boolean; readonly driver?: DriverChoice; readonly busyTimeoutMs?: number } = {}
): SyncDatabase => {
  const readOnly = options.readOnly === true
  const db = Driver.load(options.driver).open(filename, { readOnly })
  try {
    setUp(db, { wal: !readOnly, busyTimeoutMs: options.busyTimeoutMs })
  } catch (error) {
    db.close()
    throw error
  }
  return db
}

/** A client for the scope's life: one connection, closed with the scope. */
export const make = Effect.fnUntraced(function*(config: SqliteClientConfig) {
  const driver = yield* Effect.try({
    try: () => Driver.load(config.driver),
    catch: (error) => unavailable(config.filename, error)
  })
  const readOnly = config.readOnly === true
  const fail = (message: string) => (cause: unknown) => new SqlError({ cause, message: `${message} (${driver.name})` })
  const db = yield* Effect.acquireRelease(
    Effect.try({
      try: () => driver.open(config.filename, { readOnly }),
      catch: fail(`Failed to open ${config.filename}`)
    }),
    (db) => Effect.sync(() => db.close())
  )
  yield* Effect.try({
    try: () => setUp(db, { wal: config.wal ?? !readOnly, busyTimeoutMs: config.busyTimeoutMs }),
    catch: fail(`Failed to set up ${config.filename}`)
  })

  const prepareCache = yield* Cache.make({
    capacity: config.prepareCacheSize ?? 200,
    timeToLive: config.prepareCacheTTL ?? Duration.minutes(10),
    lookup: (sql: string) => Effect.try({ try: () => db.prepare(sql), catch: fail("Failed to prepare statement") })
  })
  // A statement that failed to prepare (a table not there yet, a lock) is prepared again next time.
  const prepared = (sql: string) => Effect.tapError(prepareCache.get(sql), () => prepareCache.invalidate(sql))

  /**
   * Runs a statement under the fiber's `SafeIntegers`: a reader answers through `read`, anything else runs and
   * its result goes through `written` (the raw result for `executeRaw`, nothing for the rest).
   */
  const runStatement = <A, B>(
    statement: SyncStatement,
    params: ReadonlyArray<unknown>,
    read: (statement: SyncStatement) => A,
    written: (result: RunResult) => B
  ) =>
    Effect.withFiberRuntime<A | B, SqlError>((fiber) => {
      try {
        statement.safeIntegers(Context.get(fiber.currentContext, SqlClient.SafeIntegers))
        return Effect.succeed(statement.reader ? read(statement) : written(statement.run(params)))
      } catch (cause) {
        return Effect.fail(fail("Failed to execute statement")(cause))
      }
    })

  const noRows = (): ReadonlyArray<object> => []
  const rows = (statement: SyncStatement, params: ReadonlyArray<unknown>) =>
    runStatement(statement, params, (reader) => reader.all(params), noRows)

  const run = (sql: string, params: ReadonlyArray<unknown>) =>
    Effect.flatMap(prepared(sql), (statement) => rows(statement, params))

  const unprepared = (sql: string, params: ReadonlyArray<unknown>) =>
    Effect.flatMap(
      Effect.try({ try: () => db.prepare(sql), catch: fail("Failed to prepare statement") }),
      (statement) => rows(statement, params)
    )

  const connection: Connection = {
    execute: (sql, params, transformRows) =>
      transformRows ? Effect.map(run(sql, params), transformRows) : run(sql, params),
    executeRaw: (sql, params) =>
      Effect.flatMap(
        prepared(sql),
        (statement) => runStatement(statement, params, (reader) => reader.all(params), (result) => result)
      ),
    executeValues: (sql, params) =>
      Effect.flatMap(
        prepared(sql),
        (statement) =>
          runStatement(statement, params, (reader) =>
            reader.values(params), (): ReadonlyArray<ReadonlyArray<unknown>> => [])
      ),
    executeUnprepared: (sql, params, transformRows) =>
      transformRows ? Effect.map(unprepared(sql, params), transformRows) : unprepared(sql, params),
    executeStream: (sql, params, transformRows) =>
      Stream.fromIterableEffect(transformRows ? Effect.map(run(sql, params), transformRows) : run(sql, params))
  }

  const semaphore = yield* Effect.makeSemaphore(1)
  const acquirer = semaphore.withPermits(1)(Effect.succeed(connection))
  // A transaction holds the one connection until its scope closes: nothing else runs inside it meanwhile.
  const transactionAcquirer = Effect.uninterruptibleMask((restore) =>
    Effect.as(
      Effect.zipRight(
        restore(semaphore.take(1)),
        Effect.tap(Effect.scope, (scope) => Scope.addFinalizer(scope, semaphore.release(1)))
      ),
      connection
    )
  )

  const client = yield* SqlClient.make({
    acquirer,
    compiler: Statement.makeCompilerSqlite(),
    transactionAcquirer,
    spanAttributes: [
      ...(config.spanAttributes ? Object.entries(config.spanAttributes) : []),
      ["db.system.name", "sqlite"],
      ["flotta.sqlite.driver", driver.name]
    ]
  })
  return Object.assign(client, { driver: driver.name, config }) as SqliteClient
})
