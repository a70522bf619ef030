/**
 * The SQLite store: one file (WAL mode) beside the config, held by one host at a time through a lock file
 * that names its holder. A file that is not a database, or of a newer schema, is refused and left as it is.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import { Data, Effect, Layer, Option, Schedule, Schema } from "effect"
import type { Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { exact } from "./Decode.js"
import { StoreLocked, StoreSchemaTooNew, StoreUnavailable } from "./Errors.js"
import type { StoreError } from "./Errors.js"
import { isAlive, startTicks } from "./internal/processes.js"
import { causeText, HINT_RESTORE, migrate, SCHEMA_VERSION, schemaVersion } from "./internal/sqlSchema.js"
import { make as makeSqlStore } from "./internal/sqlStore.js"
import * as Sqlite from "./Sqlite.js"
import { BRIEF_HOLD_WAIT, Store } from "./Store.js"
import type { StoreOptions, StoreShape } from "./Store.js"

const HEADER = "SQLite format 3\u0000"

/** What the lock file says of its holder. */
const Holder = Schema.Struct({
  pid: Schema.Number,
  startTicks: Schema.NullOr(Schema.String),
  host: Schema.String,
  since: Schema.String,
  /** It holds the store only for a moment (see `StoreOptions.brief`): worth waiting for. */
  brief: exact(Schema.Boolean)
})
type Holder = typeof Holder.Type

/** The lock file's holder; none when it is half-written or unreadable (its writer died mid-way). */
const readHolder = (lockPath: string): Option.Option<Holder> => {
  try {
    return decodeHolder(fs.readFileSync(lockPath, "utf8"))
  } catch {
    return Option.none()
  }
}
const decodeHolder = Schema.decodeUnknownOption(Schema.parseJson(Holder))

/** Whether a file was written in the second before `now` (false when it is gone). */
const justWritten = (file: string, now: number) => {
  try {
    return Math.abs(now - fs.statSync(file).mtimeMs) < 1000
  } catch {
    return false
  }
}

const describeHolder = (h: Holder) => `pid ${h.pid} on ${h.host} (since ${h.since})`

/** A live holder that holds the store only for a moment. */
class HeldBriefly extends Data.TaggedError("HeldBriefly")<{ readonly holder: string }> {}

/**
 * Takes `<file>.lock` for this process, or fails naming the live holder; a holder there only for a moment (`brief`)
 * is waited for, up to `BRIEF_HOLD_WAIT`. A dead holder's lock is taken over.
 */
const lock = (file: string, brief: boolean) =>
  Effect.acquireRelease(
    tryLock(file, brief).pipe(
      Effect.retry({
        while: (error) => error._tag === "HeldBriefly",
        schedule: Schedule.spaced("50 millis").pipe(Schedule.upTo(BRIEF_HOLD_WAIT))
      }),
      Effect.catchTag("HeldBriefly", (held) => new StoreLocked({ location: file, holder: held.holder }))
    ),
    (me) =>
      Effect.sync(() => {
        try {
          const lockPath = `${file}.lock`
          const holder = readHolder(lockPath)
          if (Option.isSome(holder) && holder.value.pid === me.pid && holder.value.since === me.since) {
            fs.unlinkSync(lockPath)
          }
        } catch {
          // gone already
        }
      })
  )

/** One attempt at the lock. */
const tryLock = (file: string, brief: boolean) =>
  Effect.clockWith((clock): Effect.Effect<Holder, StoreLocked | StoreUnavailable | HeldBriefly> => {
    const lockPath = `${file}.lock`
    const me: Holder = {
      pid: process.pid,
      startTicks: startTicks(process.pid),
      host: os.hostname(),
      since: new Date().toISOString(),
      ...(brief ? { brief: true } : {})
    }
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        fs.writeFileSync(lockPath, JSON.stringify(me), { flag: "wx" })
        return Effect.succeed(me)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") {
          return Effect.fail(
            new StoreUnavailable({
              location: file,
              reason: `its lock file ${lockPath} cannot be written: ${(error as Error).message}`,
              hint: "Check the directory's permissions and free space"
            })
          )
        }
      }
      const holder = readHolder(lockPath)
      if (Option.isSome(holder) && isAlive(holder.value.pid, holder.value.startTicks)) {
        const described = describeHolder(holder.value)
        return Effect.fail(
          holder.value.brief === true
            ? new HeldBriefly({ holder: described })
            : new StoreLocked({ location: file, holder: described })
        )
      }
      // An unreadable lock may be one its holder is writing this very moment: only an old one is a dead host's.
      if (Option.isNone(holder) && justWritten(lockPath, clock.unsafeCurrentTimeMillis())) {
        return Effect.fail(new HeldBriefly({ holder: "a process taking the lock this moment" }))
      }
      try {
        fs.unlinkSync(lockPath) // a dead host's lock
      } catch {
        // someone else took it over first: try again
      }
    }
    return Effect.fail(new StoreLocked({ location: file, holder: "another process that keeps taking its lock" }))
  })

/** Refuses a file that is not an SQLite database, before the driver touches it. */
const checkHeader = (file: string): Effect.Effect<void, StoreUnavailable> =>
  Effect.suspend(() => {
    let fd: number | undefined
    try {
      if (!fs.existsSync(file)) return Effect.void
      const stat = fs.statSync(file)
      if (stat.isDirectory()) {
        return Effect.fail(
          new StoreUnavailable({ location: file, reason: "it is a directory", hint: "Name a file for the store" })
        )
      }
      if (stat.size === 0) return Effect.void
      fd = fs.openSync(file, "r")
      const buffer = Buffer.alloc(16)
      fs.readSync(fd, buffer, 0, 16, 0)
      if (buffer.toString("latin1") !== HEADER) {
        return Effect.fail(
          new StoreUnavailable({
            location: file,
            reason: "it is not an SQLite database (corrupt?)",
            hint: HINT_RESTORE
          })
        )
      }
      return Effect.void
    } catch (error) {
      return Effect.fail(
        new StoreUnavailable({
          location: file,
          reason: `it cannot be read: ${(error as Error).message}`,
          hint: "Check the file's permissions"
        })
      )
    } finally {
      if (fd !== undefined) fs.closeSync(fd)
    }
  })

const sizeOf = (file: string) =>
  Effect.sync(() =>
    ["", "-wal"].reduce((sum, suffix) => {
      try {
        return sum + fs.statSync(file + suffix).size
      } catch {
        return sum
      }
    }, 0)
  )

/**
 * Opens the store in `file`, held until the scope closes. `driver` (not in the public options) is for tests
 * and benchmarks: the default is the one this Node uses.
 */
export const make = Effect.fn("SqliteStore.make")(function*(
  file: string,
  options: StoreOptions & { readonly driver?: Sqlite.DriverChoice } = {}
): Effect.fn.Return<StoreShape, StoreError, Scope.Scope> {
  const location = path.resolve(file)
  const readOnly = options.readOnly === true
  if (readOnly && !fs.existsSync(location)) {
    return yield* new StoreUnavailable({ location, reason: "there is no such file", hint: "Name an existing store" })
  }
  yield* Effect.try({
    try: () => fs.mkdirSync(path.dirname(location), { recursive: true }),
    catch: (error) =>
      new StoreUnavailable({
        location,
        reason: `its directory cannot be made: ${(error as Error).message}`,
        hint: "Check the path and its permissions"
      })
  })
  yield* checkHeader(location)
  if (!readOnly) yield* lock(location, options.brief === true)
  // Read-only beside a running serve: no WAL switch (it would write), and the writer's lock is waited for.
  // A driver that does not load fails with its own StoreUnavailable, which says what to run.
  const config = { filename: location, readOnly, ...(options.driver === undefined ? {} : { driver: options.driver }) }
  const sql = yield* Sqlite.make(config).pipe(
    Effect.provide(Reactivity.layer),
    Effect.catchTag(
      "SqlError",
      (e) => new StoreUnavailable({ location, reason: `it cannot be opened: ${causeText(e)}`, hint: HINT_RESTORE })
    ),
    Effect.catchAllDefect((defect) =>
      new StoreUnavailable({ location, reason: `it cannot be opened: ${causeText(defect)}`, hint: HINT_RESTORE })
    )
  )
  const opened = Effect.gen(function*() {
    if (!readOnly) {
      yield* sql`pragma synchronous = normal`
      yield* migrate(sql, "sqlite", location)
    } else {
      const found = yield* schemaVersion(sql, "sqlite")
      if (found > SCHEMA_VERSION) {
        return yield* new StoreSchemaTooNew({ location, found, supported: SCHEMA_VERSION })
      }
    }
  })
  yield* opened.pipe(
    Effect.catchTag(
      "SqlError",
      (e) => new StoreUnavailable({ location, reason: `it cannot be read: ${causeText(e)}`, hint: HINT_RESTORE })
    )
  )
  return yield* makeSqlStore(
    sql,
    { kind: "sqlite", location, sizeBytes: sizeOf(location), chunk: 1000, driver: sql.driver },
    options
  )
})

/** An SQLite file (made, with its directory, when missing), in WAL mode, held by one host at a time. */
export const layer = (file: string, options: StoreOptions = {}): Layer.Layer<Store, StoreError> =>
  Layer.scoped(Store, make(file, options))
