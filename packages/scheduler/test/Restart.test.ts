/**
 * A restart of the host: the engine (over the in-memory Claude) and the scheduler built twice or more over one
 * `Store` and one disk of session files, under TestClock. Each build is a host; closing its layer stops it.
 */
import { assert, describe, it } from "@effect/vitest"
import type { StoreError } from "@flotta/core/Errors"
import * as SqliteStore from "@flotta/core/SqliteStore"
import { Store } from "@flotta/core/Store"
import * as Testing from "@flotta/core/Testing"
import { Context, Duration, Effect, Either, Layer, Logger, Option, TestClock } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { STATE_KEY } from "../src/internal/persist.js"
import { Scheduler } from "../src/Scheduler.js"
import * as SchedulerConfig from "../src/SchedulerConfig.js"
import type { Override } from "../src/Steering.js"
import { entries, setTime, settle, timeline, UTC_WEEK } from "./support.js"

const HOUR = 3_600_000

/** One `Store.memory`, built once in the test's scope: every host built over it sees what the last one left. */
const sharedStore = Effect.map(Layer.build(Store.memory), (context) => ({
  layer: Layer.succeedContext(context),
  store: Context.get(context, Store)
}))

/** A host: the engine over the in-memory Claude and the store, with the scheduler of `routines` on top. */
const host = (
  store: Layer.Layer<Store, StoreError>,
  disk: Testing.Disk,
  routines: ReadonlyArray<Record<string, unknown>>,
  schedule: Record<string, unknown> = {}
) =>
  Scheduler.layer(Option.getOrThrow(Either.getOrThrow(SchedulerConfig.read({
    schedule: { timezone: "utc", hours: UTC_WEEK, tickMs: 6 * HOUR, ...schedule },
    routines
  })))).pipe(Layer.provideMerge(Testing.layer({
    store,
    disk,
    // Nothing here hangs, so the engine's own timers are off: each pending sleep is a TestClock step.
    startTimeout: Duration.infinity,
    turnTimeout: Duration.infinity,
    stallTimeout: Duration.infinity,
    model: () => Testing.structured({ tasks: [] })
  })))

const statusOf = (name: string) =>
  Effect.flatMap(Scheduler, (s) => Effect.map(s.status, (st) => st.routines.find((r) => r.name === name)!))

const resumedEntry = Effect.map(entries("resumed"), (list) => list.at(-1)?.data as Record<string, unknown>)

/** Warnings logged while `effect` runs (the test runner drops logs otherwise). */
const withWarnings = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.suspend(() => {
    const warnings: Array<string> = []
    const logger = Logger.make(({ logLevel, message }) => {
      if (logLevel._tag === "Warning") warnings.push(Array.isArray(message) ? message.join(" ") : String(message))
    })
    return Effect.map(effect.pipe(Effect.provide(Logger.add(logger))), (a) => [a, warnings] as const)
  })

const ROUTINES = [
  { name: "standup", action: "scan", every: { dailyAt: "09:00" } },
  { name: "worker", action: "scan", every: { intervalMs: 2 * HOUR } },
  // Fired by hand only (its interval is longer than a working day); two fires of $0.001 cross its rail.
  { name: "pricey", action: "scan", every: { intervalMs: 10 * HOUR }, dailyBudgetUsd: 0.0015 }
]

describe("a restart of the host", () => {
  it.scoped("resumes the pause, the overrides in force, the cadence cursors and the rails", () =>
    Effect.gen(function*() {
      const { layer, store } = yield* sharedStore
      const disk = Testing.disk()
      const fleet = host(layer, disk, ROUTINES)

      // Host 1, Monday: the daily scan fires at 09:00, the rail is crossed by hand, the interval routine works
      // 1.5 hours of its 2; then a keep-going and a pause, and the host goes down at 10:30.
      yield* setTime("2025-03-03T08:30:00Z")
      const keepGoing: Override = yield* Effect.gen(function*() {
        const scheduler = yield* Scheduler
        yield* TestClock.adjust("30 minutes")
        yield* settle(scheduler)
        yield* scheduler.runRoutine("pricey")
        const second = yield* scheduler.runRoutine("pricey")
        assert.closeTo(second.costUsd, 0.001, 1e-9)
        assert.strictEqual((yield* statusOf("pricey")).state, "railed")
        yield* TestClock.adjust("90 minutes")
        assert.strictEqual((yield* statusOf("worker")).workedMs, 1.5 * HOUR)
        const override = yield* scheduler.keepGoing(120)
        assert.strictEqual(override.until, "2025-03-03T19:00:00.000Z")
        yield* scheduler.pause
        return override
      }).pipe(Effect.provide(fleet))

      // Host 2, half an hour later.
      yield* setTime("2025-03-03T11:00:00Z")
      yield* Effect.gen(function*() {
        const scheduler = yield* Scheduler
        const status = yield* scheduler.status
        assert.strictEqual(status.mode, "paused")
        assert.deepStrictEqual(status.overrides, [keepGoing])
        // The spend from before the restart still counts: the rail holds, by schedule and by hand.
        const pricey = yield* statusOf("pricey")
        assert.strictEqual(pricey.state, "railed")
        assert.closeTo(pricey.spentTodayUsd, 0.002, 1e-9)
        assert.strictEqual((yield* Effect.flip(scheduler.runRoutine("pricey")))._tag, "RoutineRailed")
        // The interval routine's worked time continues; the down time is not working time.
        assert.strictEqual((yield* statusOf("worker")).workedMs, 1.5 * HOUR)
        assert.strictEqual((yield* statusOf("standup")).lastFire?.at.slice(0, 16), "2025-03-03T09:00")
        const resumed = yield* resumedEntry
        assert.strictEqual(resumed["restored"], true)
        assert.strictEqual(resumed["mode"], "paused")
        assert.strictEqual(resumed["stoodAt"], "2025-03-03T10:30:00.000Z")
        assert.deepStrictEqual(resumed["overrides"], [keepGoing])
        assert.deepStrictEqual(
          (resumed["routines"] as Record<string, { workedMs?: number }>)["worker"]?.workedMs,
          1.5 * HOUR
        )
        assert.deepStrictEqual(resumed["problems"], [])
        assert.deepStrictEqual(resumed["dropped"], [])

        yield* scheduler.resume
        // Not at the boot, and not two hours from it: when its worked time reaches two hours, at 11:30.
        yield* TestClock.adjust("29 minutes")
        assert.deepStrictEqual(timeline(yield* entries("fire")).filter((f) => f.startsWith("fire:worker")), [])
        yield* TestClock.adjust("31 minutes")
        yield* settle(scheduler)
      }).pipe(Effect.provide(fleet))

      // Host 3, that evening: the keep-going ran out while it was down; the next day runs on the cursors.
      yield* setTime("2025-03-03T20:00:00Z")
      yield* Effect.gen(function*() {
        const scheduler = yield* Scheduler
        const status = yield* scheduler.status
        assert.strictEqual(status.mode, "working")
        assert.deepStrictEqual(status.overrides, [])
        const expired = (yield* entries("override")).at(-1)!.data as Record<string, unknown>
        assert.deepStrictEqual([expired["id"], expired["phase"]], [keepGoing.id, "expired"])
        // `resume` lifted the rail before the restart, and the report log says so.
        assert.strictEqual((yield* statusOf("pricey")).state, "idle")
        assert.strictEqual((yield* statusOf("pricey")).spentTodayUsd, 0)
        assert.strictEqual((yield* statusOf("worker")).workedMs, 0.5 * HOUR)
        yield* TestClock.adjust("870 minutes")
        yield* settle(scheduler)
      }).pipe(Effect.provide(fleet))

      const all = yield* store.readReports({ agent: "scheduler", kinds: ["fire"], limit: 100 })
      assert.deepStrictEqual(timeline(all.entries), [
        "fire:standup@2025-03-03T09:00:00+00:00",
        "fire:pricey@2025-03-03T09:00:00+00:00",
        "fire:pricey@2025-03-03T09:00:00+00:00",
        "fire:worker@2025-03-03T11:30:00+00:00",
        "fire:standup@2025-03-04T09:00:00+00:00",
        "fire:worker@2025-03-04T10:30:00+00:00"
      ])
    }))

  it.scoped("a daily slot is taken once: not again after a restart in the same hour, nor with the clock behind", () =>
    Effect.gen(function*() {
      const { layer: store } = yield* sharedStore
      const disk = Testing.disk()
      const fleet = host(store, disk, ROUTINES.slice(0, 1))
      const fires = Effect.map(entries("fire"), timeline)

      yield* setTime("2025-03-03T08:55:00Z")
      yield* Effect.gen(function*() {
        yield* TestClock.adjust("15 minutes")
        yield* settle(yield* Scheduler)
        assert.deepStrictEqual(yield* fires, ["fire:standup@2025-03-03T09:00:00+00:00"])
      }).pipe(Effect.provide(fleet))

      yield* setTime("2025-03-03T09:30:00Z")
      yield* Effect.gen(function*() {
        yield* TestClock.adjust("1 hour")
        assert.deepStrictEqual(yield* fires, ["fire:standup@2025-03-03T09:00:00+00:00"])
        assert.strictEqual((yield* statusOf("standup")).nextFireAt, "2025-03-04T09:00:00.000Z")
      }).pipe(Effect.provide(fleet))

      // A host whose clock is behind the last one's: 09:00 comes round again, and is not fired again.
      yield* setTime("2025-03-03T08:58:00Z")
      yield* Effect.gen(function*() {
        assert.strictEqual((yield* statusOf("standup")).nextFireAt, "2025-03-04T09:00:00.000Z")
        yield* TestClock.adjust("1 hour")
        assert.deepStrictEqual(yield* fires, ["fire:standup@2025-03-03T09:00:00+00:00"])
        assert.deepStrictEqual(yield* entries("skip"), [])
      }).pipe(Effect.provide(fleet))
    }))

  it.scoped("a daily slot that passed while the host was down is recorded skipped, not fired late", () =>
    Effect.gen(function*() {
      const { layer: store } = yield* sharedStore
      const fleet = host(store, Testing.disk(), ROUTINES.slice(0, 1))
      yield* setTime("2025-03-03T08:00:00Z")
      yield* Effect.provide(TestClock.adjust("30 minutes"), fleet)

      yield* setTime("2025-03-03T09:20:00Z")
      yield* Effect.gen(function*() {
        yield* TestClock.adjust("1 hour")
        assert.deepStrictEqual(yield* entries("fire"), [])
        const skips = (yield* entries("skip")).map((e) => e.data)
        assert.deepStrictEqual(skips, [{
          routine: "standup",
          reason: "the host was down",
          trigger: "schedule",
          localTime: "2025-03-03T09:00:00+00:00"
        }])
        assert.deepStrictEqual((yield* resumedEntry)["missed"], [
          { routine: "standup", localTime: "2025-03-03T09:00:00+00:00" }
        ])
        assert.strictEqual((yield* statusOf("standup")).nextFireAt, "2025-03-04T09:00:00.000Z")
      }).pipe(Effect.provide(fleet))
    }))

  it.scoped("a pause survives a restart; a config whose start mode changed since wins", () =>
    Effect.gen(function*() {
      const { layer: store } = yield* sharedStore
      const disk = Testing.disk()
      yield* setTime("2025-03-03T10:00:00Z")
      yield* Effect.flatMap(Scheduler, (s) => s.pause).pipe(Effect.provide(host(store, disk, ROUTINES)))
      const mode = Effect.flatMap(Scheduler, (s) => Effect.map(s.status, (st) => st.mode))
      assert.strictEqual(yield* Effect.provide(mode, host(store, disk, ROUTINES)), "paused")
      // The operator edits the config to start paused, then back to working: each change of `start` wins once.
      assert.strictEqual(yield* Effect.provide(mode, host(store, disk, ROUTINES, { start: "paused" })), "paused")
      yield* Effect.flatMap(Scheduler, (s) => s.resume).pipe(
        Effect.provide(host(store, disk, ROUTINES, { start: "paused" }))
      )
      assert.strictEqual(yield* Effect.provide(mode, host(store, disk, ROUTINES, { start: "paused" })), "working")
      yield* Effect.flatMap(Scheduler, (s) => s.pause).pipe(
        Effect.provide(host(store, disk, ROUTINES, { start: "paused" }))
      )
      assert.strictEqual(yield* Effect.provide(mode, host(store, disk, ROUTINES)), "working")
    }))

  it.scoped("an undecodable saved state: a fresh start with a warning, and the scheduler runs", () =>
    Effect.gen(function*() {
      const { layer, store } = yield* sharedStore
      // An older shape, from before versions.
      store.saveState(STATE_KEY, { paused: true, overrides: "none" })
      yield* setTime("2025-03-03T08:30:00Z")
      const [, warnings] = yield* withWarnings(
        Effect.gen(function*() {
          const scheduler = yield* Scheduler
          assert.strictEqual((yield* scheduler.status).mode, "working")
          const resumed = yield* resumedEntry
          assert.strictEqual(resumed["restored"], false)
          assert.match((resumed["problems"] as Array<string>)[0]!, /not one this scheduler reads \(no version/)
          yield* TestClock.adjust("30 minutes")
          yield* settle(scheduler)
          assert.deepStrictEqual(timeline(yield* entries("fire")), ["fire:standup@2025-03-03T09:00:00+00:00"])
        }).pipe(Effect.provide(host(layer, Testing.disk(), ROUTINES)))
      )
      assert.strictEqual(warnings.length, 1)
      assert.match(warnings[0]!, /^scheduler state: the saved state is not one this scheduler reads/)
      // What the fresh scheduler saved replaced it.
      const saved = Option.getOrThrow(yield* store.loadState(STATE_KEY)) as Record<string, unknown>
      assert.strictEqual(saved["version"], 1)
    }))

  it.scoped("what cannot be used starts fresh: a bad part, a removed routine, a new one, a changed cadence", () =>
    Effect.gen(function*() {
      const { layer, store } = yield* sharedStore
      const disk = Testing.disk()
      yield* setTime("2025-03-03T08:30:00Z")
      const keepGoing = yield* Effect.gen(function*() {
        const scheduler = yield* Scheduler
        yield* TestClock.adjust("105 minutes")
        yield* settle(scheduler)
        return yield* scheduler.keepGoing(30)
      }).pipe(Effect.provide(host(layer, disk, [
        ...ROUTINES.slice(0, 2),
        { name: "old", action: "scan", every: { intervalMs: HOUR } }
      ])))

      // One override and the list of work days damaged by hand.
      const saved = Option.getOrThrow(yield* store.loadState(STATE_KEY)) as Record<string, unknown>
      store.saveState(STATE_KEY, {
        ...saved,
        overrides: [...(saved["overrides"] as Array<unknown>), { id: "override-x", kind: "overtime" }],
        workDays: "mondays"
      })

      yield* setTime("2025-03-03T10:30:00Z")
      const [, warnings] = yield* withWarnings(
        Effect.gen(function*() {
          const scheduler = yield* Scheduler
          const status = yield* scheduler.status
          assert.strictEqual(status.mode, "working")
          assert.deepStrictEqual(status.overrides, [keepGoing])
          assert.deepStrictEqual(status.routines.map((r) => r.name), ["standup", "worker", "new"])
          assert.strictEqual((yield* statusOf("worker")).workedMs, 1.25 * HOUR)
          assert.strictEqual((yield* statusOf("new")).workedMs, 0)
          const resumed = yield* resumedEntry
          assert.deepStrictEqual(resumed["dropped"], ["old"])
          assert.deepStrictEqual(resumed["fresh"], [
            { routine: "standup", reason: "its cadence changed (daily at 09:00, now daily at 10:00)" },
            { routine: "new", reason: "nothing saved for it" }
          ])
          assert.strictEqual((resumed["problems"] as Array<string>).length, 2)
          // The changed daily routine keeps its history; its cursor starts over (today's 10:00 has passed).
          assert.strictEqual((yield* statusOf("standup")).lastFire?.at.slice(0, 16), "2025-03-03T09:00")
          assert.strictEqual((yield* statusOf("standup")).nextFireAt, "2025-03-04T10:00:00.000Z")
          // The worker has 45 minutes of its 2 hours to go.
          yield* TestClock.adjust("45 minutes")
          yield* settle(scheduler)
          assert.deepStrictEqual(
            timeline(yield* entries("fire")).filter((f) => f.startsWith("fire:worker")),
            ["fire:worker@2025-03-03T11:15:00+00:00"]
          )
        }).pipe(Effect.provide(host(layer, disk, [
          { name: "standup", action: "scan", every: { dailyAt: "10:00" } },
          ROUTINES[1]!,
          { name: "new", action: "scan", every: { intervalMs: HOUR } }
        ])))
      )
      assert.deepStrictEqual(warnings.map((w) => w.replace(/:.*/, "")), ["scheduler state", "scheduler state"])
      assert.isTrue(warnings.some((w) => w.includes("overrides[1]")))
      assert.isTrue(warnings.some((w) => w.includes("workDays")))
    }))

  it.scoped("over SQLite, each host opening the file anew: the pause, the override and the cursor come back", () =>
    Effect.gen(function*() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "flotta-scheduler-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
      const file = path.join(dir, "state.db")
      const disk = Testing.disk()
      const fleet = host(SqliteStore.layer(file), disk, ROUTINES.slice(1, 2))
      yield* setTime("2025-03-03T09:00:00Z")
      const override = yield* Effect.gen(function*() {
        const scheduler = yield* Scheduler
        yield* TestClock.adjust("1 hour")
        const override = yield* scheduler.keepGoing(60)
        yield* scheduler.pause
        return override
      }).pipe(Effect.provide(fleet))
      yield* setTime("2025-03-03T12:00:00Z")
      yield* Effect.gen(function*() {
        const status = yield* (yield* Scheduler).status
        assert.strictEqual(status.mode, "paused")
        assert.deepStrictEqual(status.overrides, [override])
        assert.strictEqual((yield* statusOf("worker")).workedMs, HOUR)
      }).pipe(Effect.provide(fleet))
    }))
})
