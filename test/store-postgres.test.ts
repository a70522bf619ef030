/**
 * The Postgres store against a throwaway Postgres 15 server: the same suite as memory and SQLite, the advisory
 * lock (one writer per store, per schema), and a store that refuses writes while running (its privileges
 * revoked): it turns degraded, keeps what it was given, and commits it all once it may write again. A store of the
 * first schema is brought up to the second, its finished turns' spend booked for the cost console.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Option, Schedule, Scope } from "effect"
import pg from "pg"
import * as Costs from "../packages/core/src/Costs.js"
import type { CostBy } from "../packages/core/src/Costs.js"
import { SCHEMA_VERSION } from "../packages/core/src/internal/sqlSchema.js"
import * as PostgresStore from "../packages/core/src/PostgresStore.js"
import { describeConfig } from "../packages/core/src/Store.js"
import type { StoreShape } from "../packages/core/src/Store.js"
import * as StoreConfig from "../packages/core/src/StoreConfig.js"
import { storeSuite, turnRow } from "../packages/core/test/storeSuite.js"
import { findPostgresBinaries, type Postgres, startPostgres } from "./support/postgres.js"

const found = findPostgresBinaries()
if ("missing" in found) throw new Error(`test/store-postgres.test.ts needs Postgres 15: ${found.missing}`)

let server: Postgres
let databases = 0
beforeAll(async () => {
  server = await startPostgres()
}, 120_000)
afterAll(() => server?.stop())

const newDatabase = () => Effect.promise(() => server.createDatabase(`store_${++databases}`))

const query = (url: string, sql: string) =>
  Effect.promise(async () => {
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    try {
      return (await client.query(sql)).rows
    } finally {
      await client.end()
    }
  })

/** Waits (60 s at most) until the store has tried a write and been refused. */
const untilDegraded = (store: StoreShape) =>
  store.health.pipe(
    Effect.filterOrFail((h) => h.state === "degraded"),
    Effect.retry({ schedule: Schedule.spaced("50 millis"), times: 1200 }),
    Effect.orDie
  )

const failure = (exit: Exit.Exit<unknown, unknown>) =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error as { _tag: string; message: string } : undefined

storeSuite({
  kind: "postgres",
  durable: true,
  make: () =>
    Effect.map(newDatabase(), (url) => ({
      fresh: PostgresStore.layer(url, { retainDays: 0 }),
      again: PostgresStore.layer(url, { retainDays: 0 }),
      // Another connection drops the tables under the open store.
      refuse: Effect.asVoid(query(
        url,
        "drop table flotta_reports, flotta_agents, flotta_turns, flotta_runs, flotta_state, flotta_costs"
      )),
      location: describeConfig({ postgres: url })
    }))
})

describe("Store: Postgres", () => {
  it.live("one writer per store: a second host is refused, naming the holder; schemas are separate stores", () =>
    Effect.scoped(Effect.gen(function*() {
      const url = yield* newDatabase()
      const a = yield* StoreConfig.open({ postgres: { url, schema: "fleet_a" } })
      const second = failure(
        yield* Effect.exit(Effect.scoped(StoreConfig.open({ postgres: { url, schema: "fleet_a" } })))
      )
      assert.strictEqual(second?._tag, "StoreLocked")
      assert.include(second?.message, `pid ${process.pid}`)
      const b = yield* StoreConfig.open({ postgres: { url, schema: "fleet_b" } })
      a.appendReport({ at: "x", agent: "a", kind: "k", data: { in: "a" }, turnId: undefined })
      assert.isTrue(yield* a.flush())
      assert.strictEqual((yield* b.readReports({})).entries.length, 0)
      const counted = yield* query(url, "select count(*)::int as n from fleet_a.flotta_reports")
      assert.strictEqual(counted[0]!["n"], 1)
      const info = yield* a.info
      assert.strictEqual(info.kind, "postgres")
      assert.strictEqual(info.schemaVersion, SCHEMA_VERSION)
      assert.include(info.location, "schema fleet_a")
    })))

  it.live("a host waits for a holder there only for a moment (brief, an import); a brief opener is refused by a host", () =>
    Effect.scoped(Effect.gen(function*() {
      const url = yield* newDatabase()
      const target = { postgres: url }
      const briefly = yield* Scope.make()
      yield* StoreConfig.open(target, { brief: true }).pipe(Scope.extend(briefly))
      const host = yield* Effect.fork(Effect.scoped(Effect.as(StoreConfig.open(target), "opened")))
      yield* Effect.sleep("1 second")
      assert.isTrue(Option.isNone(yield* Fiber.poll(host)), "the host waits for the brief holder")
      yield* Scope.close(briefly, Exit.void)
      assert.strictEqual(yield* Fiber.join(host), "opened")
      yield* StoreConfig.open(target)
      const refused = failure(yield* Effect.exit(Effect.scoped(StoreConfig.open(target, { brief: true }))))
      assert.strictEqual(refused?._tag, "StoreLocked")
    })))

  it.live("a store of the first schema is brought up to date: its finished turns' spend is booked for costs", () =>
    Effect.gen(function*() {
      const url = yield* newDatabase()
      const target = { postgres: { url, schema: "upgraded" } }
      const day = (n: number) => new Date(Date.now() - n * 86_400_000).toISOString().slice(0, 10)
      // Three days of turns: per model where the CLI said, on `unknown` where it did not; one unfinished.
      const perModel = (row: ReturnType<typeof turnRow>, modelCosts: Record<string, number>) => ({
        ...row,
        record: { ...row.record, modelCosts }
      })
      const turns = [
        perModel(turnRow("alpha", 1, "succeeded", `${day(2)}T09:00:00.000Z`), { opus: 0.03, haiku: 0.002 }),
        perModel(turnRow("alpha", 2, "failed", `${day(1)}T10:30:00.000Z`), { opus: 0.05 }),
        { ...turnRow("beta", 1, "succeeded", `${day(1)}T23:59:59.000Z`), run: "nightly-1" },
        perModel(turnRow("beta", 2, "succeeded", `${day(0)}T00:00:00.000Z`), { haiku: 0.004 }),
        turnRow("gamma", 1, "queued", null)
      ]
      yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* StoreConfig.open(target, { retainDays: 0 })
        for (const row of turns) store.saveTurn(row)
        assert.isTrue(yield* store.flush())
      }))
      // What a flotta of schema version 1 left: no cost table, no label table, no later migration.
      yield* query(url, "drop table upgraded.flotta_costs")
      yield* query(url, "drop table upgraded.flotta_turn_labels")
      yield* query(url, "delete from upgraded.flotta_migrations where migration_id >= 2")

      const by: ReadonlyArray<CostBy> = ["agent", "model", "day", "run"]
      const reports = yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* StoreConfig.open(target, { retainDays: 0 })
        const reports = yield* Effect.forEach(by, (by) => store.costs({ since: null, until: null, by }))
        return { info: yield* store.info, reports }
      }))
      assert.strictEqual(reports.info.schemaVersion, SCHEMA_VERSION)
      const migrations = yield* query(url, "select migration_id from upgraded.flotta_migrations order by 1")
      assert.deepStrictEqual(migrations.map((m) => m["migration_id"]), [1, 2, 3])

      // The sums are the turns' own costs, grouped by hand.
      const expected: Record<string, Record<string, number>> = {
        agent: { alpha: 0.03 + 0.002 + 0.05, beta: 0.01 + 0.004 },
        model: { opus: 0.08, haiku: 0.006, unknown: 0.01 },
        day: { [day(2)]: 0.032, [day(1)]: 0.06, [day(0)]: 0.004 },
        run: { "nightly-1": 0.01, "": 0.086 }
      }
      const rows = turns.flatMap(Costs.costRowsOf)
      by.forEach((grouping, i) => {
        const report = reports.reports[i]!
        assert.strictEqual(report.turns, 4, grouping)
        assert.approximately(report.totalUsd, 0.096, 1e-9, grouping)
        const got = Object.fromEntries(report.groups.map((g) => [g.key ?? "", g.costUsd]))
        assert.sameMembers(Object.keys(got), Object.keys(expected[grouping]!), grouping)
        for (const [key, usd] of Object.entries(expected[grouping]!)) {
          assert.approximately(got[key]!, usd, 1e-9, `${grouping} ${key}`)
        }
        // And what the in-memory aggregation (the memory store's) makes of the same turns.
        const reference = Costs.aggregate(rows, { since: null, until: null, by: grouping })
        assert.deepStrictEqual(
          report.groups.map((g) => [g.key, g.turns]),
          reference.groups.map((g) => [g.key, g.turns])
        )
      })
      const byDay = reports.reports[2]!
      assert.deepStrictEqual(byDay.groups.map((g) => g.key), [day(2), day(1), day(0)], "days in time order")
    }))

  it.live("a store that refuses writes while running turns degraded, keeps every write, and catches up", () =>
    Effect.scoped(Effect.gen(function*() {
      const url = yield* newDatabase()
      yield* query(url, "create role flotta_writer login")
      yield* query(url, "grant all on schema public to flotta_writer")
      const writerUrl = url.replace("postgres@", "flotta_writer@")
      const store = yield* StoreConfig.open({ postgres: writerUrl })
      const health: Array<string> = []
      store.onHealth((h) => health.push(h.state))
      store.appendReport({ at: "x", agent: "a", kind: "before", data: {}, turnId: undefined })
      assert.isTrue(yield* store.flush())
      yield* query(url, "revoke insert, update on all tables in schema public from flotta_writer")
      for (let i = 0; i < 100; i++) {
        store.appendReport({ at: "x", agent: "a", kind: "during", data: { i }, turnId: undefined })
      }
      yield* untilDegraded(store)
      const nothingYet = yield* query(url, "select count(*)::int as n from flotta_reports")
      assert.strictEqual(nothingYet[0]!["n"], 1, "nothing commits while the store refuses")
      const degraded = yield* store.health
      assert.strictEqual(degraded.state, "degraded")
      assert.include(degraded.reason, "permission denied")
      assert.strictEqual(degraded.pending, 100)
      // Readers see every entry meanwhile, in order.
      assert.strictEqual((yield* store.readReports({ limit: 1000 })).entries.length, 101)
      yield* query(url, "grant insert, update on all tables in schema public to flotta_writer")
      assert.isTrue(yield* store.flush(60_000))
      assert.strictEqual((yield* store.health).state, "ok")
      assert.deepStrictEqual(health, ["degraded", "ok"])
      const rows = yield* query(url, "select count(*)::int as n from flotta_reports")
      assert.strictEqual(rows[0]!["n"], 101)
    })))

  it.live("while it refuses, waiting report entries are bounded: the oldest go and are counted, keyed rows stay", () =>
    Effect.scoped(Effect.gen(function*() {
      const url = yield* newDatabase()
      yield* query(url, "create role flotta_bounded login")
      yield* query(url, "grant all on schema public to flotta_bounded")
      const store = yield* StoreConfig.open({ postgres: url.replace("postgres@", "flotta_bounded@") }, {
        maxPendingReports: 10
      })
      yield* query(url, "revoke insert, update on all tables in schema public from flotta_bounded")
      for (let i = 1; i <= 25; i++) {
        store.appendReport({ at: "x", agent: "a", kind: "k", data: { i }, turnId: undefined })
      }
      store.saveState("kept", { v: 1 })
      yield* untilDegraded(store)
      const health = yield* store.health
      assert.strictEqual(health.lost, 15)
      yield* query(url, "grant insert, update on all tables in schema public to flotta_bounded")
      assert.isTrue(yield* store.flush(60_000))
      const rows = yield* query(url, "select seq from flotta_reports order by seq")
      assert.deepStrictEqual(rows.map((r) => Number(r["seq"])), [16, 17, 18, 19, 20, 21, 22, 23, 24, 25])
      assert.deepStrictEqual(yield* query(url, "select value from flotta_state"), [{ value: "{\"v\":1}" }])
    })))

  it.live("an unreachable server is a clear error naming the store", () =>
    Effect.gen(function*() {
      const error = failure(
        yield* Effect.exit(Effect.scoped(StoreConfig.open({ postgres: "postgres://nobody:secret@127.0.0.1:1/none" })))
      )
      assert.strictEqual(error?._tag, "StoreUnavailable")
      assert.include(error?.message, "postgres://nobody:***@127.0.0.1:1/none")
      assert.notInclude(error?.message, "secret")
    }))
})
