/**
 * The stores: the shared suite against memory and SQLite, and what only a file can get wrong (a second
 * host, a corrupt file, a newer schema).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Logger, Option, Scope, TestClock } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Sqlite from "../src/Sqlite.js"
import * as SqliteStore from "../src/SqliteStore.js"
import * as Store from "../src/Store.js"
import * as StoreConfig from "../src/StoreConfig.js"
import { agentRow, storeSuite, turnRow } from "./storeSuite.js"

const tempFile = () => path.join(fs.mkdtempSync(path.join(os.tmpdir(), "flotta-store-")), "nested", "state.db")

storeSuite({
  kind: "memory",
  durable: false,
  make: () =>
    Effect.sync(() => {
      const layer = Store.Store.memory
      return { fresh: layer, again: layer }
    })
})

storeSuite({
  kind: "sqlite",
  durable: true,
  make: () =>
    Effect.sync(() => {
      const file = tempFile()
      // No retention at open: the suite prunes by hand (the default is tested below).
      return { fresh: SqliteStore.layer(file, { retainDays: 0 }), again: SqliteStore.layer(file, { retainDays: 0 }) }
    })
})

const failure = (exit: Exit.Exit<unknown, unknown>) =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error as { _tag: string; message: string } : undefined

describe("Store: an SQLite file", () => {
  it.scoped("runs in WAL mode, and refuses a second holder by naming the first one's pid", () =>
    Effect.gen(function*() {
      const file = tempFile()
      const store = yield* StoreConfig.open({ sqlite: file })
      store.appendReport({ at: "x", agent: "a", kind: "k", data: {}, turnId: undefined })
      assert.isTrue(yield* store.flush())
      assert.isTrue(fs.existsSync(`${file}-wal`), "WAL mode keeps a -wal file beside the database")
      const info = yield* store.info
      assert.strictEqual(info.kind, "sqlite")
      assert.strictEqual(info.schemaVersion, 3)
      assert.isAbove(info.sizeBytes ?? 0, 0)
      const second = failure(yield* Effect.exit(Effect.scoped(StoreConfig.open({ sqlite: file }))))
      assert.strictEqual(second?._tag, "StoreLocked")
      assert.include(second?.message, `pid ${process.pid}`)
      // A reader beside the holder takes no lock and sees what was committed.
      const reader = yield* StoreConfig.open({ sqlite: file }, { readOnly: true })
      assert.strictEqual((yield* reader.readReports({})).entries.length, 1)
    }))

  it.scoped("waits for a holder there only for a moment (brief); a brief opener is refused at once by a host", () =>
    Effect.gen(function*() {
      const file = tempFile()
      const briefly = yield* Scope.make()
      yield* StoreConfig.open({ sqlite: file }, { brief: true }).pipe(Scope.extend(briefly))
      assert.include(fs.readFileSync(`${file}.lock`, "utf8"), `"brief":true`)
      const host = yield* Effect.fork(Effect.scoped(Effect.as(StoreConfig.open({ sqlite: file }), "opened")))
      yield* TestClock.adjust("2 seconds")
      assert.isTrue(Option.isNone(yield* Fiber.poll(host)), "the host waits for the brief holder")
      yield* Scope.close(briefly, Exit.void)
      yield* TestClock.adjust("50 millis")
      assert.strictEqual(yield* Fiber.join(host), "opened")

      yield* StoreConfig.open({ sqlite: file })
      const refused = failure(yield* Effect.exit(Effect.scoped(StoreConfig.open({ sqlite: file }, { brief: true }))))
      assert.strictEqual(refused?._tag, "StoreLocked")
      // Past the wait, a brief holder that stays is StoreLocked too.
      const other = tempFile()
      yield* StoreConfig.open({ sqlite: other }, { brief: true })
      const waited = yield* Effect.fork(Effect.exit(Effect.scoped(StoreConfig.open({ sqlite: other }))))
      yield* TestClock.adjust(Store.BRIEF_HOLD_WAIT)
      yield* TestClock.adjust("100 millis")
      assert.strictEqual(failure(yield* Fiber.join(waited))?._tag, "StoreLocked")
    }))

  it.scoped("takes over the lock of a holder that died", () =>
    Effect.gen(function*() {
      const file = tempFile()
      fs.mkdirSync(path.dirname(file), { recursive: true })
      // pid 2^22 + 1 is above Linux's pid limit: no process has it.
      fs.writeFileSync(`${file}.lock`, JSON.stringify({ pid: 4_194_305, startTicks: "1", host: "gone", since: "x" }))
      const store = yield* StoreConfig.open({ sqlite: file })
      assert.strictEqual((yield* store.info).health.state, "ok")
    }))

  it.effect("a file that is not a database is refused, named, and left as it was", () =>
    Effect.gen(function*() {
      const file = tempFile()
      fs.mkdirSync(path.dirname(file), { recursive: true })
      const garbage = Buffer.from("this is not a database, it is a note to self\n".repeat(100))
      fs.writeFileSync(file, garbage)
      const error = failure(yield* Effect.exit(Effect.scoped(StoreConfig.open({ sqlite: file }))))
      assert.strictEqual(error?._tag, "StoreUnavailable")
      assert.include(error?.message, file)
      assert.include(error?.message, "not an SQLite database")
      assert.include(error?.message, "Move the file aside")
      assert.isTrue(fs.readFileSync(file).equals(garbage))
      assert.isFalse(fs.existsSync(`${file}.lock`), "a refused store leaves no lock behind")
    }))

  it.effect("a store of a newer schema is refused, and nothing in it changes", () =>
    Effect.gen(function*() {
      const file = tempFile()
      yield* Effect.scoped(StoreConfig.open({ sqlite: file }).pipe(Effect.flatMap((s) => s.flush())))
      const db = Sqlite.openSync(file)
      db.prepare("insert into flotta_migrations (migration_id, name) values (99, 'future')").run()
      db.close()
      const before = fs.readFileSync(file)
      const error = failure(yield* Effect.exit(Effect.scoped(StoreConfig.open({ sqlite: file }))))
      assert.strictEqual(error?._tag, "StoreSchemaTooNew")
      assert.include(error?.message, "schema version 99")
      assert.isTrue(fs.readFileSync(file).equals(before))
    }))

  it.effect("a store of the first schema is brought up to date: its finished turns' spend is booked for costs", () =>
    Effect.gen(function*() {
      const file = tempFile()
      const done = "2025-03-01T10:00:00.000Z"
      yield* Effect.scoped(
        StoreConfig.open({ sqlite: file }).pipe(Effect.flatMap((store) => {
          store.saveTurn(turnRow("old", 1, "succeeded", done))
          store.saveTurn({ ...turnRow("old", 2, "succeeded", done), run: "nightly-1" })
          store.saveTurn(turnRow("old", 3, "queued", null))
          return store.flush()
        }))
      )
      // What a flotta of schema version 1 left: no cost table, no label table, no later migration.
      const db = Sqlite.openSync(file)
      db.prepare("drop table flotta_costs").run()
      db.prepare("drop table flotta_turn_labels").run()
      db.prepare("delete from flotta_migrations where migration_id >= 2").run()
      db.close()
      const store = yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* StoreConfig.open({ sqlite: file })
        return {
          info: yield* store.info,
          byRun: yield* store.costs({ since: null, until: null, by: "run" }),
          byModel: yield* store.costs({ since: null, until: null, by: "model" })
        }
      }))
      assert.strictEqual(store.info.schemaVersion, 3)
      assert.strictEqual(store.byRun.turns, 2)
      assert.approximately(store.byRun.totalUsd, 0.02, 1e-9)
      assert.deepStrictEqual(store.byRun.groups.map((g) => g.key).sort(), ["nightly-1", null].sort())
      assert.deepStrictEqual(store.byModel.groups.map((g) => g.key), ["unknown"])
    }))

  it.effect("a store of the second schema keeps its routines as the label routine: its spend and its agents", () =>
    Effect.gen(function*() {
      const file = tempFile()
      const done = "2025-03-01T10:00:00.000Z"
      yield* Effect.scoped(
        StoreConfig.open({ sqlite: file }).pipe(Effect.flatMap((store) => {
          store.saveAgent(agentRow("scout"))
          store.saveTurn(turnRow("scout", 1, "succeeded", done))
          store.saveTurn(turnRow("other", 1, "succeeded", done))
          return store.flush()
        }))
      )
      // What a flotta of schema version 2 left: a routine column on the costs, a routine in an agent's options.
      const db = Sqlite.openSync(file)
      db.prepare("drop table flotta_turn_labels").run()
      db.prepare("delete from flotta_migrations where migration_id = 3").run()
      db.prepare("update flotta_costs set routine = 'nightly' where agent = 'scout'").run()
      const [stored] = db.prepare("select row from flotta_agents where name = 'scout'").all([])
      const old = JSON.parse(String((stored as { readonly row: unknown }).row))
      db.prepare("update flotta_agents set row = ? where name = 'scout'").run([
        JSON.stringify({ ...old, options: { ...old.options, routine: "nightly" } })
      ])
      db.close()
      const after = yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* StoreConfig.open({ sqlite: file })
        return {
          info: yield* store.info,
          byRoutine: yield* store.costs({ since: null, until: null, by: "label:routine" }),
          agent: yield* store.agent("scout")
        }
      }))
      assert.strictEqual(after.info.schemaVersion, 3)
      const groups = after.byRoutine.groups.map((g) => `${g.key}:${g.turns}`).sort()
      assert.deepStrictEqual(groups, ["nightly:1", "null:1"])
      assert.deepStrictEqual(Option.getOrThrow(after.agent).options.labels, { routine: "nightly" })
      assert.notProperty(Option.getOrThrow(after.agent).options, "routine")
    }))

  it.effect("a directory in its place is a clear error", () =>
    Effect.gen(function*() {
      const file = tempFile()
      fs.mkdirSync(file, { recursive: true })
      const error = failure(yield* Effect.exit(Effect.scoped(StoreConfig.open({ sqlite: file }))))
      assert.strictEqual(error?._tag, "StoreUnavailable")
      assert.include(error?.message, "is a directory")
    }))
})

describe("Store: memory stays bounded", () => {
  it.effect("keeps the newest finished turns per agent, and a closed agent's until closed agents keep too many", () =>
    Effect.gen(function*() {
      const store = Store.makeMemory()
      const done = new Date(0).toISOString()
      for (let n = 1; n <= Store.MEMORY_TURNS_PER_AGENT + 5; n++) store.saveTurn(turnRow("a", n, "succeeded", done))
      store.saveTurn(turnRow("a", Store.MEMORY_TURNS_PER_AGENT + 6, "queued", null))
      const kept = yield* store.turns("a")
      assert.strictEqual(kept.length, Store.MEMORY_TURNS_PER_AGENT)
      assert.strictEqual(kept[0]!.n, 7)
      assert.strictEqual(kept.at(-1)!.record.status, "queued")
      // Closed, it keeps them: its transcript is read from here.
      store.saveAgent(agentRow("a", { status: "closed" }))
      assert.strictEqual((yield* store.turns("a")).length, Store.MEMORY_TURNS_PER_AGENT)
      // Closed agents' turns past the bound: the ones closed first lose theirs (their rows stay).
      const perAgent = Store.MEMORY_TURNS_PER_AGENT
      const others = Store.MEMORY_CLOSED_TURNS / perAgent
      for (let i = 0; i < others; i++) {
        const name = `c${i}`
        for (let n = 1; n <= perAgent; n++) store.saveTurn(turnRow(name, n, "succeeded", done))
        store.saveAgent(agentRow(name, { status: "closed" }))
      }
      assert.strictEqual((yield* store.turns("a")).length, 0)
      assert.isTrue(Option.isSome(yield* store.agent("a")))
      assert.strictEqual((yield* store.turns("c0")).length, perAgent)
      assert.strictEqual((yield* store.turns(`c${others - 1}`)).length, perAgent)
      // A name used again is live: its turns are not counted among the closed ones' any more.
      store.saveAgent(agentRow("c0"))
      for (const name of ["d", "e"]) {
        for (let n = 1; n <= perAgent; n++) store.saveTurn(turnRow(name, n, "succeeded", done))
        store.saveAgent(agentRow(name, { status: "closed" }))
      }
      assert.strictEqual((yield* store.turns("c0")).length, perAgent)
      assert.strictEqual((yield* store.turns("c1")).length, 0)
      assert.strictEqual((yield* store.turns("c2")).length, perAgent)
    }))
})

describe("Store: retention by default", () => {
  it.scoped("a store opened with the default prunes what is older than 30 days, and keeps the rest", () =>
    Effect.gen(function*() {
      const file = tempFile()
      const day = 86_400_000
      yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* StoreConfig.open({ sqlite: file }, { retainDays: 0 })
        store.appendReport({
          at: new Date(10 * day).toISOString(),
          agent: "a",
          kind: "old",
          data: {},
          turnId: undefined
        })
        store.appendReport({
          at: new Date(90 * day).toISOString(),
          agent: "a",
          kind: "new",
          data: {},
          turnId: undefined
        })
        store.saveTurn(turnRow("a", 1, "succeeded", new Date(10 * day).toISOString()))
        yield* store.flush()
      }))
      yield* TestClock.setTime(100 * day)
      const store = yield* StoreConfig.open({ sqlite: file })
      // The pruning runs beside this fiber as the store opens: yield to it between reads.
      const kinds = yield* Effect.yieldNow().pipe(
        Effect.zipRight(store.readReports({})),
        Effect.map((page) => page.entries.map((e) => e.kind)),
        Effect.repeat({ until: (k) => k.length === 1, times: 100 })
      )
      assert.deepStrictEqual(kinds, ["new"])
      assert.deepStrictEqual(yield* store.turns("a"), [])
    }))
})

describe("Store: a row that does not decode", () => {
  it.scoped("is skipped with a warning naming its table and key; the other rows still read", () =>
    Effect.gen(function*() {
      const file = tempFile()
      yield* Effect.scoped(
        StoreConfig.open({ sqlite: file }).pipe(Effect.flatMap((store) => {
          store.saveAgent(agentRow("good"))
          store.saveAgent(agentRow("bad"))
          store.saveRun({
            name: "r",
            kind: "run",
            status: "running",
            startedAt: "2026-01-01T00:00:00.000Z",
            finishedAt: null,
            worktree: null
          })
          return store.flush()
        }))
      )
      const db = Sqlite.openSync(file)
      db.prepare("update flotta_agents set row = '{\"name\":\"bad\",\"status\":42}' where name = 'bad'").run()
      db.prepare("update flotta_runs set row = 'not json' where name = 'r'").run()
      db.close()
      const logged: Array<unknown> = []
      const logger = Logger.make(({ message }) => void logged.push(...(Array.isArray(message) ? message : [message])))
      const store = yield* StoreConfig.open({ sqlite: file }, { retainDays: 0 })
      const [agents, run] = yield* Effect.all([store.agents, store.run("r")]).pipe(
        Effect.provide(Logger.replace(Logger.defaultLogger, logger))
      )
      assert.deepStrictEqual(agents.map((a) => a.name), ["good"])
      assert.isTrue(Option.isNone(run))
      const errors = logged.filter((m): m is Store.StoreRowInvalid => m instanceof Store.StoreRowInvalid)
      assert.deepStrictEqual(errors.map((e) => [e.table, e.key]), [["flotta_agents", "bad"], ["flotta_runs", "r"]])
      assert.include(errors[0]!.message, "flotta_agents (bad)")
    }))
})
