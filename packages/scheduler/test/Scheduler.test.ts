/**
 * The scheduler under TestClock, over a real report log and a test double of the fleet's operations.
 */
import { assert, describe, it } from "@effect/vitest"
import type { RunOptions } from "@flotta/core/Run"
import { Deferred, Duration, Effect, TestClock, Tracer } from "effect"
import { TASKS_JSON_SCHEMA } from "../src/Scheduler.js"
import { readFindings } from "../src/Steering.js"
import type { FireOutcome } from "../src/Steering.js"
import {
  entries,
  failureOf,
  fakeFleet,
  LogLive,
  setTime,
  settle,
  start,
  template,
  timeline,
  UTC_WEEK
} from "./support.js"

const HOUR = 3_600_000
/** Weekdays 09:00-17:00 UTC; a long tick, since the heartbeat wakes at every boundary anyway. */
const UTC = { timezone: "utc", hours: UTC_WEEK, tickMs: 6 * HOUR }
const LA = "America/Los_Angeles"
const WEEKDAYS_0847 = {
  mon: [["08:47", "17:00"]],
  tue: [["08:47", "17:00"]],
  wed: [["08:47", "17:00"]],
  thu: [["08:47", "17:00"]],
  fri: [["08:47", "17:00"]]
}

const localTimes = (kind: string, routine?: string) =>
  Effect.map(
    entries(kind),
    (list) =>
      list.filter((e) => routine === undefined || (e.data as { routine?: string }).routine === routine)
        .map((e) => (e.data as { localTime: string }).localTime)
  )

const fireResults = Effect.map(entries("fire_result"), (list) => list.map((e) => e.data as FireOutcome))

describe("working hours", () => {
  const week = (timezone: unknown, startAt: string, days: number, hours: unknown) =>
    Effect.gen(function*() {
      yield* setTime(startAt)
      yield* start({ schedule: { timezone, hours, tickMs: 6 * HOUR } })
      yield* TestClock.adjust(Duration.days(days))
      return timeline(yield* entries("wake", "stop"))
    })

  it.scoped("open and close on time across a week in UTC", () =>
    Effect.gen(function*() {
      const seen = yield* week("utc", "2025-03-03T00:00:00Z", 7, UTC_WEEK)
      assert.strictEqual(seen.length, 10)
      assert.deepStrictEqual(seen.slice(0, 4), [
        "wake@2025-03-03T09:00:00+00:00",
        "stop@2025-03-03T17:00:00+00:00",
        "wake@2025-03-04T09:00:00+00:00",
        "stop@2025-03-04T17:00:00+00:00"
      ])
      assert.strictEqual(seen[9], "stop@2025-03-07T17:00:00+00:00")
    }).pipe(Effect.provide(LogLive)))

  it.scoped("open and close on local time at a fixed offset", () =>
    Effect.gen(function*() {
      const seen = yield* week({ offsetSeconds: -25200 }, "2025-03-03T07:00:00Z", 7, WEEKDAYS_0847)
      assert.strictEqual(seen.length, 10)
      assert.strictEqual(seen[0], "wake@2025-03-03T08:47:00-07:00")
      assert.strictEqual(seen[9], "stop@2025-03-07T17:00:00-07:00")
      const first = (yield* entries("wake"))[0]!
      assert.strictEqual(first.at, "2025-03-03T15:47:00.000Z")
    }).pipe(Effect.provide(LogLive)))

  it.scoped("in an IANA zone, across the spring change: wall-clock hours, the short night's window kept", () =>
    Effect.gen(function*() {
      const hours = { ...WEEKDAYS_0847, sun: [["01:00", "04:00"]] }
      const seen = yield* week(LA, "2025-03-07T08:00:00Z", 4, hours)
      assert.deepStrictEqual(seen, [
        "wake@2025-03-07T08:47:00-08:00",
        "stop@2025-03-07T17:00:00-08:00",
        "wake@2025-03-09T01:00:00-08:00",
        "stop@2025-03-09T04:00:00-07:00",
        "wake@2025-03-10T08:47:00-07:00",
        "stop@2025-03-10T17:00:00-07:00"
      ])
    }).pipe(Effect.provide(LogLive)))

  it.scoped("in an IANA zone, across the fall change: the repeated hour is not worked twice", () =>
    Effect.gen(function*() {
      const hours = { ...WEEKDAYS_0847, sun: [["01:15", "01:45"]] }
      const seen = yield* week(LA, "2025-10-31T07:00:00Z", 4, hours)
      assert.deepStrictEqual(seen, [
        "wake@2025-10-31T08:47:00-07:00",
        "stop@2025-10-31T17:00:00-07:00",
        "wake@2025-11-02T01:15:00-07:00",
        "stop@2025-11-02T01:45:00-07:00",
        "wake@2025-11-03T08:47:00-08:00",
        "stop@2025-11-03T17:00:00-08:00"
      ])
    }).pipe(Effect.provide(LogLive)))

  it.scoped("status shows mode, local time, today's windows and what comes next", () =>
    Effect.gen(function*() {
      yield* setTime("2025-03-10T16:15:00Z")
      const { steering } = yield* start({
        schedule: { timezone: LA, hours: WEEKDAYS_0847 },
        routines: [
          { name: "morning", action: "scan", every: { dailyAt: "09:00" } },
          { name: "loop", action: "scan", every: { intervalMs: HOUR } },
          { name: "broken", action: "scan", every: { dailyAt: "noon" } }
        ]
      })
      const status = yield* steering.status
      assert.deepInclude(status, {
        mode: "working",
        working: true,
        reason: "hours 08:47-17:00",
        timezone: LA,
        now: "2025-03-10T16:15:00.000Z",
        localTime: "2025-03-10T09:15:00-07:00",
        nextChange: "2025-03-11T00:00:00.000Z"
      })
      assert.deepStrictEqual(status.today, {
        date: "2025-03-10",
        weekday: "mon",
        windows: [{
          start: "08:47",
          end: "17:00",
          from: "2025-03-10T15:47:00.000Z",
          until: "2025-03-11T00:00:00.000Z",
          source: "hours"
        }]
      })
      assert.deepStrictEqual(status.routines.map((r) => [r.name, r.state, r.nextFireAt]), [
        ["morning", "idle", "2025-03-11T16:00:00.000Z"],
        ["loop", "idle", "2025-03-10T17:15:00.000Z"]
      ])
      assert.deepStrictEqual(status.rejected, [{
        path: "routines[2].every.dailyAt",
        message: "a local time of day, \"HH:MM\" (00:00 to 23:59)"
      }])
      const started = (yield* entries("started"))[0]!.data as { routines: Array<string>; rejected: Array<unknown> }
      assert.deepStrictEqual(started.routines, ["morning", "loop"])
      assert.strictEqual(started.rejected.length, 1)
    }).pipe(Effect.provide(LogLive)))

  it.scoped("start: paused follows no schedule until resumed", () =>
    Effect.gen(function*() {
      yield* setTime("2025-03-03T00:00:00Z")
      const { steering } = yield* start({
        schedule: { ...UTC, start: "paused" },
        routines: [{ name: "loop", action: "scan", every: { intervalMs: HOUR }, prompt: "TASKS []" }]
      })
      yield* TestClock.adjust("12 hours")
      assert.deepStrictEqual(yield* entries("wake", "fire"), [])
      assert.strictEqual((yield* steering.status).routines[0]!.nextFireAt, null)
      yield* steering.resume
      yield* TestClock.adjust("1 hour")
      assert.deepStrictEqual(timeline(yield* entries("wake", "fire")), [
        "wake@2025-03-03T12:00:00+00:00",
        "fire:loop@2025-03-03T13:00:00+00:00"
      ])
    }).pipe(Effect.provide(LogLive)))
})

describe("cadence", () => {
  it.scoped("intervalMs counts working time only: it pauses outside working hours", () =>
    Effect.gen(function*() {
      yield* setTime("2025-03-03T00:00:00Z")
      yield* start({
        schedule: UTC,
        routines: [{ name: "loop", action: "scan", every: { intervalMs: 3 * HOUR }, prompt: "TASKS []" }]
      })
      yield* TestClock.adjust("2 days")
      assert.deepStrictEqual(yield* localTimes("fire"), [
        "2025-03-03T12:00:00+00:00",
        "2025-03-03T15:00:00+00:00",
        "2025-03-04T10:00:00+00:00", // 2 h left on Monday, 1 h on Tuesday
        "2025-03-04T13:00:00+00:00",
        "2025-03-04T16:00:00+00:00"
      ])
      const results = yield* fireResults
      assert.isTrue(results.every((r) => r.ok && r.trigger === "schedule" && r.routine === "loop"))
    }).pipe(Effect.provide(LogLive)))

  it.scoped("dailyAt fires once per working day and not on days off", () =>
    Effect.gen(function*() {
      yield* setTime("2025-03-01T08:00:00Z") // Saturday 00:00 PST
      yield* start({
        schedule: { timezone: LA, hours: WEEKDAYS_0847, tickMs: 6 * HOUR },
        routines: [{ name: "morning", action: "scan", every: { dailyAt: "09:00" }, prompt: "TASKS []" }]
      })
      yield* TestClock.adjust("10 days")
      assert.deepStrictEqual(yield* localTimes("fire"), [
        "2025-03-03T09:00:00-08:00",
        "2025-03-04T09:00:00-08:00",
        "2025-03-05T09:00:00-08:00",
        "2025-03-06T09:00:00-08:00",
        "2025-03-07T09:00:00-08:00",
        "2025-03-10T09:00:00-07:00"
      ])
    }).pipe(Effect.provide(LogLive)))

  it.scoped("dailyAt on the days the clocks change fires exactly once", () =>
    Effect.gen(function*() {
      const routines = [
        { name: "in-gap", action: "scan", every: { dailyAt: "02:30" }, prompt: "TASKS []" },
        { name: "in-overlap", action: "scan", every: { dailyAt: "01:30" }, prompt: "TASKS []" }
      ]
      yield* setTime("2025-03-08T08:00:00Z")
      yield* Effect.scoped(Effect.gen(function*() {
        yield* start({ schedule: { timezone: LA, hours: { sun: [["00:00", "06:00"]] }, tickMs: 6 * HOUR }, routines })
        yield* TestClock.adjust("2 days")
      }))
      assert.deepStrictEqual(timeline(yield* entries("fire")), [
        "fire:in-overlap@2025-03-09T01:30:00-08:00",
        "fire:in-gap@2025-03-09T03:30:00-07:00" // 02:30 does not exist that night: the gap moves it on
      ])
      yield* setTime("2025-11-01T07:00:00Z")
      yield* start({ schedule: { timezone: LA, hours: { sun: [["00:00", "06:00"]] }, tickMs: 6 * HOUR }, routines })
      yield* TestClock.adjust("2 days")
      assert.deepStrictEqual(timeline(yield* entries("fire")).slice(2), [
        "fire:in-overlap@2025-11-02T01:30:00-07:00", // once, not again at 01:30 PST
        "fire:in-gap@2025-11-02T02:30:00-08:00"
      ])
    }).pipe(Effect.provide(LogLive)))

  it.scoped("dailyAt asked from the second pass of a repeated hour is tomorrow's, not the hour already gone", () =>
    Effect.gen(function*() {
      yield* setTime("2025-11-02T09:15:00Z") // 01:15 PST, the second 01:15 of the fall-back night
      const { steering } = yield* start({
        schedule: { timezone: LA, hours: { sun: [["00:00", "06:00"]], mon: [["00:00", "06:00"]] }, tickMs: 6 * HOUR },
        routines: [{ name: "in-overlap", action: "scan", every: { dailyAt: "01:30" }, prompt: "TASKS []" }]
      })
      // 01:30 today meant 01:30 PDT (08:30Z), already past: not 01:30 PST, and never a time before now.
      assert.strictEqual((yield* steering.status).routines[0]!.nextFireAt, "2025-11-03T09:30:00.000Z")
      yield* TestClock.adjust("25 hours")
      assert.deepStrictEqual(timeline(yield* entries("fire")), ["fire:in-overlap@2025-11-03T01:30:00-08:00"])
    }).pipe(Effect.provide(LogLive)))

  it.scoped("the boot cursor: nothing fires the instant the node starts", () =>
    Effect.gen(function*() {
      yield* setTime("2025-03-03T09:00:00Z")
      const { steering } = yield* start({
        schedule: UTC,
        routines: [
          { name: "morning", action: "scan", every: { dailyAt: "09:00" }, prompt: "TASKS []" },
          { name: "hourly", action: "scan", every: { intervalMs: HOUR }, prompt: "TASKS []" }
        ]
      })
      yield* TestClock.adjust("1 minute")
      assert.deepStrictEqual(yield* entries("fire"), [])
      assert.deepStrictEqual((yield* steering.status).routines.map((r) => r.nextFireAt), [
        "2025-03-04T09:00:00.000Z",
        "2025-03-03T10:00:00.000Z"
      ])
      yield* TestClock.adjust("59 minutes")
      assert.deepStrictEqual(timeline(yield* entries("fire")), ["fire:hourly@2025-03-03T10:00:00+00:00"])
    }).pipe(Effect.provide(LogLive)))
})

describe("overrides", () => {
  it.scoped("keepGoing extends today's window, stacks, and expires by itself", () =>
    Effect.gen(function*() {
      yield* setTime("2025-03-03T16:30:00Z")
      // The default one-minute heartbeat here; the other tests use a long one.
      const { steering } = yield* start({ schedule: { timezone: "utc", hours: UTC_WEEK } })
      const first = yield* steering.keepGoing(60)
      assert.deepInclude(first, { kind: "keep_going", until: "2025-03-03T18:00:00.000Z", minutes: 60 })
      yield* TestClock.adjust("1 hour")
      const status = yield* steering.status
      assert.isTrue(status.working)
      assert.strictEqual(status.reason, "keep going until 2025-03-03T18:00:00+00:00")
      const second = yield* steering.keepGoing(30)
      assert.strictEqual(second.until, "2025-03-03T18:30:00.000Z")
      yield* TestClock.adjust("1 hour")
      assert.deepStrictEqual(timeline(yield* entries("wake", "stop")), [
        "wake@2025-03-03T16:30:00+00:00",
        "stop@2025-03-03T18:30:00+00:00"
      ])
      assert.deepStrictEqual((yield* steering.status).overrides, [])
      const phases = (yield* entries("override")).map((e) => {
        const d = e.data as { action: string; phase: string }
        return `${d.action}:${d.phase}@${e.at.slice(11, 16)}`
      })
      assert.deepStrictEqual(phases, [
        "keep_going:start@16:30",
        "keep_going:cancelled@17:30",
        "keep_going:start@17:30",
        "keep_going:expired@18:30"
      ])
    }).pipe(Effect.provide(LogLive)))

  it.scoped("keepGoing wants whole minutes, up to a day", () =>
    Effect.gen(function*() {
      yield* setTime("2025-03-03T16:30:00Z")
      const { steering } = yield* start({ schedule: UTC })
      for (const minutes of [0, 1.5, 1441]) {
        const error = yield* failureOf(steering.keepGoing(minutes))
        assert.strictEqual(error._tag, "InvalidSchedule")
        assert.strictEqual(error.message, "invalid minutes: a whole number of minutes from 1 to 1440")
      }
    }).pipe(Effect.provide(LogLive)))

  it.scoped("workToday adds a shift on a day off (a working day for dailyAt too) and it expires", () =>
    Effect.gen(function*() {
      yield* setTime("2025-03-08T10:00:00Z") // Saturday
      const { steering } = yield* start({
        schedule: UTC,
        routines: [{ name: "noon", action: "scan", every: { dailyAt: "12:00" }, prompt: "TASKS []" }]
      })
      assert.isFalse((yield* steering.status).working)
      const shift = yield* steering.workToday()
      assert.deepInclude(shift, { kind: "work_on", date: "2025-03-08", window: { start: "09:00", end: "17:00" } })
      const status = yield* steering.status
      assert.isTrue(status.working)
      assert.strictEqual(status.reason, "one-off shift 2025-03-08")
      assert.deepStrictEqual(status.today.windows.map((w) => `${w.source} ${w.start}-${w.end}`), [
        "work_on 09:00-17:00"
      ])
      yield* TestClock.adjust("8 hours")
      assert.deepStrictEqual(timeline(yield* entries("wake", "stop", "fire")), [
        "wake@2025-03-08T10:00:00+00:00",
        "fire:noon@2025-03-08T12:00:00+00:00",
        "stop@2025-03-08T17:00:00+00:00"
      ])
      assert.deepStrictEqual((yield* steering.status).overrides, [])
    }).pipe(Effect.provide(LogLive)))

  it.scoped("workOn adds a shift on a date, and refuses bad dates and windows", () =>
    Effect.gen(function*() {
      yield* setTime("2025-03-08T10:00:00Z")
      const { steering } = yield* start({ schedule: UTC })
      yield* steering.workOn("2025-03-09", ["10:00", "12:00"])
      yield* TestClock.adjust("26 hours") // Sunday 12:00
      assert.deepStrictEqual(timeline(yield* entries("wake", "stop")), [
        "wake@2025-03-09T10:00:00+00:00",
        "stop@2025-03-09T12:00:00+00:00"
      ])
      const messages = yield* Effect.forEach([
        steering.workOn("2025-03-07"),
        steering.workOn("2025-02-30"),
        steering.workOn("2025-03-12", "12:00-12:00"),
        steering.workOn("2027-03-12"),
        steering.workToday(["08:00", "09:00"])
      ], (call) => Effect.map(failureOf(call), (e) => `${e._tag}: ${e.message}`))
      assert.deepStrictEqual(messages, [
        "InvalidSchedule: invalid date: 2025-03-07 is in the past (today is 2025-03-09)",
        "InvalidSchedule: invalid date: \"2025-02-30\" is not a date (YYYY-MM-DD)",
        "InvalidSchedule: invalid window: start and end are the same time: the window would be empty",
        "InvalidSchedule: invalid date: 2027-03-12 is more than a year ahead",
        "InvalidSchedule: invalid window: the 08:00-09:00 window on 2025-03-09 is already over: keepGoing(minutes) works from now"
      ])
    }).pipe(Effect.provide(LogLive)))

  it.scoped("stopForToday ends the shift now, skips today's fires, and the next day works as usual", () =>
    Effect.gen(function*() {
      yield* setTime("2025-03-03T11:00:00Z")
      const { steering } = yield* start({
        schedule: UTC,
        routines: [{ name: "afternoon", action: "scan", every: { dailyAt: "15:00" }, prompt: "TASKS []" }]
      })
      const stop = yield* steering.stopForToday
      assert.deepInclude(stop, { kind: "stop_for_today", until: "2025-03-04T00:00:00.000Z" })
      assert.strictEqual((yield* steering.status).reason, "stopped for today")
      yield* TestClock.adjust("1 day")
      assert.deepStrictEqual(timeline(yield* entries("wake", "stop", "skip", "fire")), [
        "wake@2025-03-03T11:00:00+00:00",
        "stop@2025-03-03T11:00:00+00:00",
        "skip:afternoon@2025-03-03T15:00:00+00:00",
        "wake@2025-03-04T09:00:00+00:00"
      ])
      assert.strictEqual(((yield* entries("skip"))[0]!.data as { reason: string }).reason, "stopped for today")
    }).pipe(Effect.provide(LogLive)))

  it.scoped("resume undoes stopForToday", () =>
    Effect.gen(function*() {
      yield* setTime("2025-03-03T11:00:00Z")
      const { steering } = yield* start({ schedule: UTC })
      yield* steering.stopForToday
      const status = yield* steering.resume
      assert.isTrue(status.working)
      assert.deepStrictEqual(status.overrides, [])
    }).pipe(Effect.provide(LogLive)))
})

/** A fleet whose `GATED` runs wait for the gate. */
const gatedFleet = (gate: Deferred.Deferred<void>) =>
  fakeFleet({
    run: (options: RunOptions) =>
      options.prompt === "GATED"
        ? Deferred.await(gate).pipe(Effect.as({
          kind: "run" as const,
          name: options.name ?? "gated",
          text: "opened",
          costUsd: 0.1,
          durationMs: 1,
          modelCalls: 1,
          sessionId: "s",
          permissionDenials: []
        }))
        : undefined
  })

describe("pause and busy routines", () => {
  it.scoped("pause lets an in-flight fire finish, starts nothing new, and resume picks up", () =>
    Effect.gen(function*() {
      yield* setTime("2025-03-03T09:00:00Z")
      const gate = yield* Deferred.make<void>()
      const { steering } = yield* start({
        schedule: UTC,
        routines: [
          { name: "job", action: "run", every: { intervalMs: HOUR }, prompt: "GATED" },
          { name: "eleven", action: "scan", every: { dailyAt: "11:00" }, prompt: "TASKS []" }
        ]
      }, gatedFleet(gate))
      yield* TestClock.adjust("1 hour")
      const paused = yield* steering.pause
      assert.strictEqual(paused.mode, "paused")
      assert.isFalse(paused.working)
      assert.deepStrictEqual(paused.running.map((r) => r.routine), ["job"])
      yield* Deferred.succeed(gate, undefined)
      yield* settle(steering)
      assert.deepStrictEqual((yield* fireResults).map((r) => [r.routine, r.ok, r.text]), [["job", true, "opened"]])
      yield* TestClock.adjust("3 hours")
      assert.strictEqual((yield* entries("fire")).length, 1, "nothing new while paused")
      yield* steering.resume
      yield* TestClock.adjust("1 hour")
      assert.deepStrictEqual(timeline(yield* entries("wake", "stop", "fire", "skip")), [
        "wake@2025-03-03T09:00:00+00:00",
        "fire:job@2025-03-03T10:00:00+00:00",
        "stop@2025-03-03T10:00:00+00:00",
        "skip:eleven@2025-03-03T11:00:00+00:00",
        "wake@2025-03-03T13:00:00+00:00",
        "fire:job@2025-03-03T14:00:00+00:00"
      ])
    }).pipe(Effect.provide(LogLive)))

  it.scoped("a routine whose previous fire is still running is skipped, and the skip is recorded", () =>
    Effect.gen(function*() {
      yield* setTime("2025-03-03T09:00:00Z")
      const gate = yield* Deferred.make<void>()
      const { steering } = yield* start({
        schedule: UTC,
        routines: [{ name: "job", action: "run", every: { intervalMs: HOUR }, prompt: "GATED" }]
      }, gatedFleet(gate))
      yield* TestClock.adjust("2 hours")
      const busy = yield* failureOf(steering.runRoutine("job"))
      assert.strictEqual(busy._tag, "RoutineBusy")
      assert.match(
        busy.message,
        /routine "job" is still running \(fire fire-[0-9a-f]+, since 2025-03-03T10:00:00.000Z\)/
      )
      yield* Deferred.succeed(gate, undefined)
      yield* settle(steering)
      yield* TestClock.adjust("1 hour")
      assert.deepStrictEqual(timeline(yield* entries("fire", "skip")), [
        "fire:job@2025-03-03T10:00:00+00:00",
        "skip:job@2025-03-03T11:00:00+00:00",
        "skip:job@2025-03-03T11:00:00+00:00",
        "fire:job@2025-03-03T12:00:00+00:00"
      ])
      const reasons = (yield* entries("skip")).map((e) => e.data as { reason: string; trigger: string })
      assert.deepStrictEqual(reasons.map((r) => [r.reason, r.trigger]), [
        ["previous fire still running", "schedule"],
        ["previous fire still running", "manual"]
      ])
    }).pipe(Effect.provide(LogLive)))
})

describe("cost rails", () => {
  const railed = {
    schedule: UTC,
    routines: [{
      name: "job",
      action: "run",
      every: { intervalMs: HOUR },
      prompt: "work",
      maxBudgetUsd: 0.2,
      dailyBudgetUsd: 0.25
    }]
  }

  it.scoped("each fire is bounded by what is left; crossing the daily rail pauses the routine until the next day", () =>
    Effect.gen(function*() {
      yield* setTime("2025-03-03T09:00:00Z")
      const { fleet, steering } = yield* start(railed)
      yield* TestClock.adjust("4 hours")
      assert.deepStrictEqual(fleet.runs.map((r) => Number(r.maxBudgetUsd!.toFixed(4))), [0.2, 0.15, 0.05])
      const rail = (yield* entries("rail")).map((e) => e.data)
      assert.deepStrictEqual(rail, [{
        routine: "job",
        action: "paused",
        spentUsd: 0.30000000000000004,
        dailyBudgetUsd: 0.25,
        day: "2025-03-03",
        until: "2025-03-04T00:00:00.000Z"
      }])
      const routine = (yield* steering.status).routines[0]!
      assert.deepInclude(routine, { state: "railed", railedUntil: "2025-03-04T00:00:00.000Z" })
      assert.closeTo(routine.spentTodayUsd, 0.3, 1e-9)
      assert.strictEqual(routine.nextFireAt, "2025-03-04T10:00:00.000Z")
      const error = yield* failureOf(steering.runRoutine("job"))
      assert.strictEqual(error._tag, "RoutineRailed")
      assert.match(
        error.message,
        /spent \$0\.3000 of its \$0\.25 daily budget and is paused until 2025-03-04T00:00:00.000Z/
      )
      yield* TestClock.adjust("21 hours") // Tuesday 10:00
      assert.deepStrictEqual(timeline(yield* entries("fire")).slice(3), ["fire:job@2025-03-04T10:00:00+00:00"])
      const skips = (yield* entries("skip")).map((e) => (e.data as { reason: string }).reason)
      assert.isTrue(skips.length > 0 && skips.every((r) => r === "daily budget rail"))
      assert.deepStrictEqual((yield* entries("rail")).map((e) => (e.data as { action: string }).action), [
        "paused",
        "lifted"
      ])
    }).pipe(Effect.provide(LogLive)))

  it.scoped("resume lifts a rail", () =>
    Effect.gen(function*() {
      yield* setTime("2025-03-03T09:00:00Z")
      const { steering } = yield* start(railed)
      yield* TestClock.adjust("3 hours")
      assert.strictEqual((yield* steering.status).routines[0]!.state, "railed")
      yield* steering.resume
      const outcome = yield* steering.runRoutine("job")
      assert.isTrue(outcome.ok)
      assert.strictEqual(outcome.trigger, "manual")
      assert.deepStrictEqual((yield* entries("rail")).map((e) => e.data), [
        (yield* entries("rail"))[0]!.data,
        { routine: "job", action: "lifted", reason: "resume" }
      ])
    }).pipe(Effect.provide(LogLive)))

  it.scoped("a restart does not reset a spent rail within the same day", () =>
    Effect.gen(function*() {
      yield* setTime("2025-03-03T09:00:00Z")
      yield* Effect.scoped(Effect.gen(function*() {
        yield* start(railed)
        yield* TestClock.adjust("3 hours")
      }))
      assert.strictEqual((yield* entries("rail")).length, 1)
      yield* TestClock.adjust("1 hour")
      const { steering } = yield* start(railed)
      const routine = (yield* steering.status).routines[0]!
      assert.strictEqual(routine.state, "railed")
      assert.closeTo(routine.spentTodayUsd, 0.3, 1e-9)
      const started = (yield* entries("started"))[1]!.data as { railed: Array<string> }
      assert.deepStrictEqual(started.railed, ["job"])
      yield* TestClock.adjust("22 hours") // Tuesday 11:00: a new day, a fresh budget
      const tuesday = (yield* steering.status).routines[0]!
      assert.strictEqual(tuesday.state, "idle")
      assert.closeTo(tuesday.spentTodayUsd, 0.2, 1e-9)
    }).pipe(Effect.provide(LogLive)))
})

describe("scans and findings", () => {
  const task = (title: string, detail = `about ${title}`) => ({ title, detail })

  it.scoped("a scan is a bounded read-only run with the tasks schema; its findings are recorded and read back", () =>
    Effect.gen(function*() {
      yield* setTime("2025-03-03T09:00:00Z")
      let found = [task("Fix the README."), { ...task("Add tests"), priority: "high" }]
      const fleet = fakeFleet({
        run: (options) =>
          options.jsonSchema === undefined ? undefined : Effect.succeed({
            kind: "run",
            name: options.name!,
            text: "found",
            costUsd: 0.05,
            durationMs: 1,
            modelCalls: 1,
            sessionId: "s",
            permissionDenials: [],
            structuredOutput: { tasks: found }
          })
      })
      const { reports, steering } = yield* start({
        schedule: UTC,
        routines: [{ name: "docs-scan", action: "scan", every: { dailyAt: "10:00" }, focus: "docs", maxBudgetUsd: 0.5 }]
      }, fleet)
      yield* TestClock.adjust("1 hour")
      const options = fleet.runs[0]!
      assert.deepInclude(options, { permission: "read_only", jsonSchema: TASKS_JSON_SCHEMA, maxBudgetUsd: 0.5 })
      assert.match(options.appendSystemPrompt!, /change nothing[\s\S]*Focus on: docs/)
      assert.match(options.prompt!, /Focus on: docs/)
      assert.match(options.name!, /^docs-scan-[0-9a-f]{8}$/)
      found = [task("  fix  the readme "), task("Bump deps")]
      const second = yield* steering.runRoutine("docs-scan")
      assert.deepStrictEqual(second.tasks!.map((t) => t.key), ["fix the readme", "bump deps"])
      const findings = yield* readFindings(reports)
      assert.deepStrictEqual(findings.map((f) => [f.title, f.sightings, f.routine]), [
        ["  fix  the readme ", 2, "docs-scan"],
        ["Bump deps", 1, "docs-scan"],
        ["Add tests", 1, "docs-scan"]
      ])
      assert.strictEqual(findings[2]!.priority, "high")
      assert.strictEqual(findings[0]!.firstFoundAt, "2025-03-03T10:00:00.000Z")
    }).pipe(Effect.provide(LogLive)))

  it.scoped("a scan whose output is not a task list fails, and the failure is recorded", () =>
    Effect.gen(function*() {
      yield* setTime("2025-03-03T09:00:00Z")
      const { steering } = yield* start({
        schedule: UTC,
        routines: [
          { name: "garbled", action: "scan", every: { intervalMs: HOUR }, prompt: "TASKS [{\"title\": 5}]" },
          { name: "failing", action: "scan", every: { intervalMs: HOUR }, prompt: "FAIL" }
        ]
      })
      const garbled = yield* steering.runRoutine("garbled")
      assert.isFalse(garbled.ok)
      assert.strictEqual(garbled.error!._tag, "InvalidScanOutput")
      assert.match(garbled.error!.message, /output\.tasks\[0\]\.title: Expected string, actual 5/)
      assert.closeTo(garbled.costUsd, 0.1, 1e-9)
      const failing = yield* steering.runRoutine("failing")
      assert.deepStrictEqual(failing.error, {
        _tag: "InvalidSpec",
        message: "invalid spec at prompt: the fake was told to fail"
      })
      assert.deepStrictEqual((yield* fireResults).map((r) => r.ok), [false, false])
    }).pipe(Effect.provide(LogLive)))

  it.scoped("scanNow fires an ad-hoc scan even when paused and outside hours; bad options are InvalidSpec", () =>
    Effect.gen(function*() {
      yield* setTime("2025-03-08T22:00:00Z")
      const { steering } = yield* start({ schedule: UTC })
      yield* steering.pause
      const outcome = yield* steering.scanNow({ prompt: "TASKS [{\"title\": \"One\", \"detail\": \"d\"}]", focus: "x" })
      assert.deepInclude(outcome, { ok: true, routine: null, action: "scan", trigger: "manual" })
      assert.deepStrictEqual(outcome.tasks, [{ title: "One", detail: "d", key: "one" }])
      const error = yield* failureOf(steering.scanNow({ maxBudgetUsd: -1 }))
      assert.strictEqual(error._tag, "InvalidSpec")
      assert.match(error.message, /scanNow\.maxBudgetUsd/)
      const unknown = yield* failureOf(steering.runRoutine("nope"))
      assert.strictEqual(unknown.message, "no routine named \"nope\" (no routines are configured)")
    }).pipe(Effect.provide(LogLive)))
})

describe("dispatch_scan", () => {
  const task = (title: string) => ({ title, detail: `do ${title}` })

  const dispatching = (maxDispatch: number, extra: Record<string, unknown> = {}) => {
    let found: Array<{ title: string; detail: string }> = []
    const fleet = fakeFleet({
      run: (options) =>
        options.jsonSchema === undefined ? undefined : Effect.succeed({
          kind: "run",
          name: options.name!,
          text: "found",
          costUsd: 0.1,
          durationMs: 1,
          modelCalls: 1,
          sessionId: "s",
          permissionDenials: [],
          structuredOutput: { tasks: found }
        })
    })
    fleet.templates.set(
      "fixer",
      template({ name: "fixer", worktree: true, permission: { allow: ["Read", "Edit"] }, prompt: "FIX" })
    )
    fleet.templates.set("danger", template({ name: "danger", permission: "full", prompt: "FIX" }))
    const config = {
      schedule: UTC,
      routines: [{
        name: "loop",
        action: "dispatch_scan",
        every: { intervalMs: HOUR },
        template: "fixer",
        maxDispatch,
        ...extra
      }]
    }
    return { fleet, config, setFound: (tasks: Array<{ title: string; detail: string }>) => (found = tasks) }
  }

  it.scoped("runs at most maxDispatch new tasks and never one already found or dispatched", () =>
    Effect.gen(function*() {
      yield* setTime("2025-03-03T09:00:00Z")
      const { config, fleet, setFound } = dispatching(2)
      const { steering } = yield* start(config, fleet)
      setFound([task("A"), task("B"), task("C")])
      const first = yield* steering.runRoutine("loop")
      assert.deepStrictEqual(first.dispatched!.map((d) => [d.title, d.ok]), [["A", true], ["B", true]])
      assert.deepStrictEqual(first.deferred, [{ title: "C", key: "c", reason: "maxDispatch (2)" }])
      const dispatchedRun = fleet.runs[1]!
      assert.strictEqual(dispatchedRun.template, "fixer")
      assert.strictEqual(dispatchedRun.prompt, "FIX\n\nTask: A\n\ndo A")
      assert.isUndefined(dispatchedRun.permission)
      // A plain scan finds D: found, so never dispatched.
      setFound([task("D")])
      yield* steering.scanNow({})
      setFound([task("A"), task("  b!! "), task("C"), task("D"), task("E")])
      const second = yield* steering.runRoutine("loop")
      assert.deepStrictEqual(second.dispatched!.map((d) => d.title), ["C", "E"])
      assert.deepStrictEqual(second.deferred, [])
      const third = yield* steering.runRoutine("loop")
      assert.deepStrictEqual(third.dispatched, [])
      assert.strictEqual((yield* entries("dispatch")).length, 4)
    }).pipe(Effect.provide(LogLive)))

  it.scoped("the fire's budget bounds each dispatched run and stops the rest", () =>
    Effect.gen(function*() {
      yield* setTime("2025-03-03T09:00:00Z")
      const { config, fleet, setFound } = dispatching(3, { maxBudgetUsd: 0.25 })
      const { steering } = yield* start(config, fleet)
      setFound([task("A"), task("B"), task("C")])
      const outcome = yield* steering.runRoutine("loop")
      assert.deepStrictEqual(fleet.runs.map((r) => Number(r.maxBudgetUsd!.toFixed(4))), [0.25, 0.15, 0.05])
      assert.deepStrictEqual(outcome.dispatched!.map((d) => d.title), ["A", "B"])
      assert.deepStrictEqual(outcome.deferred, [{ title: "C", key: "c", reason: "budget" }])
      // C was left over, so a later fire may still take it.
      const later = yield* steering.runRoutine("loop")
      assert.deepStrictEqual(later.dispatched!.map((d) => d.title), ["C"])
    }).pipe(Effect.provide(LogLive)))

  it.scoped("a template that can write without a worktree is refused before anything is spent", () =>
    Effect.gen(function*() {
      yield* setTime("2025-03-03T09:00:00Z")
      const { config, fleet } = dispatching(1)
      const routines = [
        { ...config.routines[0], name: "unsafe", template: "danger" },
        { ...config.routines[0], name: "missing", template: "ghost" },
        { name: "unsafe-run", action: "run", every: { intervalMs: HOUR }, template: "danger" }
      ]
      const { steering } = yield* start({ ...config, routines }, fleet)
      const outcomes = yield* Effect.forEach(["unsafe", "missing", "unsafe-run"], steering.runRoutine)
      assert.deepStrictEqual(outcomes.map((o) => [o.ok, o.error!._tag]), [
        [false, "RoutineRefused"],
        [false, "InvalidSpec"],
        [false, "RoutineRefused"]
      ])
      assert.match(outcomes[0]!.error!.message, /run template "danger" can write but has no worktree/)
      assert.deepStrictEqual(fleet.runs, [])
    }).pipe(Effect.provide(LogLive)))
})

describe("prompt routines", () => {
  it.scoped("a prompt routine sends a turn to a standing session and waits for it", () =>
    Effect.gen(function*() {
      yield* setTime("2025-03-03T09:00:00Z")
      const { fleet, steering } = yield* start({
        schedule: UTC,
        routines: [{ name: "nudge", action: "prompt", every: { intervalMs: HOUR }, agent: "scout", prompt: "status?" }]
      })
      yield* TestClock.adjust("1 hour")
      assert.deepStrictEqual(fleet.prompts, [{ agent: "scout", text: "status?" }])
      const [result] = yield* fireResults
      assert.deepInclude(result, { ok: true, turnId: "turn-1", text: "reply to turn-1", costUsd: 0.1 })
      assert.strictEqual((yield* steering.status).routines[0]!.lastFire!.ok, true)
    }).pipe(Effect.provide(LogLive)))
})

describe("observability", () => {
  /** A tracer that only remembers span names. */
  const recordingTracer = (names: Array<string>) =>
    Tracer.make({
      span: (name, parent, context, links, startTime, kind) => {
        names.push(name)
        return {
          _tag: "Span",
          name,
          spanId: String(names.length),
          traceId: "trace",
          parent,
          context,
          status: { _tag: "Started", startTime },
          attributes: new Map(),
          links,
          sampled: true,
          kind,
          end: () => {},
          attribute: () => {},
          event: () => {},
          addLinks: () => {}
        }
      },
      context: (f) => f()
    })

  it.scoped("every wake, stop, fire, skip, override and rail is a span as well as a report entry", () =>
    Effect.gen(function*() {
      const names: Array<string> = []
      yield* setTime("2025-03-03T08:00:00Z")
      yield* Effect.gen(function*() {
        const gate = yield* Deferred.make<void>()
        const { steering } = yield* start({
          schedule: UTC,
          routines: [
            { name: "job", action: "run", every: { intervalMs: HOUR }, prompt: "GATED", dailyBudgetUsd: 0.05 }
          ]
        }, gatedFleet(gate))
        yield* TestClock.adjust("3 hours") // wake 09:00, fire 10:00, skip 11:00 (still running)
        yield* Deferred.succeed(gate, undefined)
        yield* settle(steering) // its cost crosses the rail
        yield* steering.keepGoing(30)
        yield* TestClock.adjust("7 hours") // stop at 17:30, the override expires
      }).pipe(Effect.withTracer(recordingTracer(names)))
      const kinds = new Set(names.filter((n) => n.startsWith("scheduler.")))
      for (const kind of ["wake", "stop", "fire", "fire_result", "skip", "override", "rail", "started"]) {
        assert.isTrue(kinds.has(`scheduler.${kind}`), `a scheduler.${kind} span`)
      }
      const logged = new Set((yield* entries()).map((e) => e.kind))
      assert.deepStrictEqual(
        [...logged].sort(),
        ["fire", "fire_result", "override", "rail", "skip", "started", "stop", "wake"]
      )
    }).pipe(Effect.provide(LogLive)))
})
