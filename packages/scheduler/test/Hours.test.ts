/**
 * When the scheduler works and when its routines fire: working hours across zones and clock changes, the status it
 * shows, a paused start, and the two cadences (working time, a daily slot). Under TestClock, over a real report log
 * and a test double of the fleet's operations.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import {
  entries,
  fireResults,
  HOUR,
  LA,
  localTimes,
  LogLive,
  quietScan,
  setTime,
  start,
  startAt,
  startUtc,
  test,
  timeline,
  UTC,
  UTC_WEEK,
  WEEKDAYS_0847
} from "./support.js"

describe("working hours", () => {
  const week = (timezone: unknown, startAt: string, days: number, hours: unknown) =>
    Effect.gen(function*() {
      yield* setTime(startAt)
      yield* start({ schedule: { timezone, hours, tickMs: 6 * HOUR } })
      yield* TestClock.adjust(Duration.days(days))
      return timeline(yield* entries("wake", "stop"))
    })

  test("open and close on time across a week in UTC", () =>
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
    }))

  test("open and close on local time at a fixed offset", () =>
    Effect.gen(function*() {
      const seen = yield* week({ offsetSeconds: -25200 }, "2025-03-03T07:00:00Z", 7, WEEKDAYS_0847)
      assert.strictEqual(seen.length, 10)
      assert.strictEqual(seen[0], "wake@2025-03-03T08:47:00-07:00")
      assert.strictEqual(seen[9], "stop@2025-03-07T17:00:00-07:00")
      const first = (yield* entries("wake"))[0]!
      assert.strictEqual(first.at, "2025-03-03T15:47:00.000Z")
    }))

  it.scoped.each([
    {
      change: "the spring change: wall-clock hours, the short night's window kept",
      sunday: ["01:00", "04:00"],
      from: "2025-03-07T08:00:00Z",
      expected: [
        "wake@2025-03-07T08:47:00-08:00",
        "stop@2025-03-07T17:00:00-08:00",
        "wake@2025-03-09T01:00:00-08:00",
        "stop@2025-03-09T04:00:00-07:00",
        "wake@2025-03-10T08:47:00-07:00",
        "stop@2025-03-10T17:00:00-07:00"
      ]
    },
    {
      change: "the fall change: the repeated hour is not worked twice",
      sunday: ["01:15", "01:45"],
      from: "2025-10-31T07:00:00Z",
      expected: [
        "wake@2025-10-31T08:47:00-07:00",
        "stop@2025-10-31T17:00:00-07:00",
        "wake@2025-11-02T01:15:00-07:00",
        "stop@2025-11-02T01:45:00-07:00",
        "wake@2025-11-03T08:47:00-08:00",
        "stop@2025-11-03T17:00:00-08:00"
      ]
    }
  ])("in an IANA zone, across $change", ({ expected, from, sunday }) =>
    Effect.gen(function*() {
      const seen = yield* week(LA, from, 4, { ...WEEKDAYS_0847, sun: [sunday] })
      assert.deepStrictEqual(seen, expected)
    }).pipe(Effect.provide(LogLive)))

  test("status shows mode, local time, today's windows and what comes next", () =>
    Effect.gen(function*() {
      const { steering } = yield* startAt("2025-03-10T16:15:00Z", {
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
    }))

  test("start: paused follows no schedule until resumed", () =>
    Effect.gen(function*() {
      const { steering } = yield* startAt("2025-03-03T00:00:00Z", {
        schedule: { ...UTC, start: "paused" },
        routines: [quietScan("loop", { intervalMs: HOUR })]
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
    }))
})

describe("cadence", () => {
  test("intervalMs counts working time only: it pauses outside working hours", () =>
    Effect.gen(function*() {
      yield* startUtc("2025-03-03T00:00:00Z", [quietScan("loop", { intervalMs: 3 * HOUR })])
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
    }))

  test("dailyAt fires once per working day and not on days off", () =>
    Effect.gen(function*() {
      yield* setTime("2025-03-01T08:00:00Z") // Saturday 00:00 PST
      yield* start({
        schedule: { timezone: LA, hours: WEEKDAYS_0847, tickMs: 6 * HOUR },
        routines: [quietScan("morning", { dailyAt: "09:00" })]
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
    }))

  test("dailyAt on the days the clocks change fires exactly once", () =>
    Effect.gen(function*() {
      const routines = [
        quietScan("in-gap", { dailyAt: "02:30" }),
        quietScan("in-overlap", { dailyAt: "01:30" })
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
      yield* startAt("2025-11-01T07:00:00Z", {
        schedule: { timezone: LA, hours: { sun: [["00:00", "06:00"]] }, tickMs: 6 * HOUR },
        routines
      })
      yield* TestClock.adjust("2 days")
      assert.deepStrictEqual(timeline(yield* entries("fire")).slice(2), [
        "fire:in-overlap@2025-11-02T01:30:00-07:00", // once, not again at 01:30 PST
        "fire:in-gap@2025-11-02T02:30:00-08:00"
      ])
    }))

  test("dailyAt asked from the second pass of a repeated hour is tomorrow's, not the hour already gone", () =>
    Effect.gen(function*() {
      yield* setTime("2025-11-02T09:15:00Z") // 01:15 PST, the second 01:15 of the fall-back night
      const { steering } = yield* start({
        schedule: { timezone: LA, hours: { sun: [["00:00", "06:00"]], mon: [["00:00", "06:00"]] }, tickMs: 6 * HOUR },
        routines: [quietScan("in-overlap", { dailyAt: "01:30" })]
      })
      // 01:30 today meant 01:30 PDT (08:30Z), already past: not 01:30 PST, and never a time before now.
      assert.strictEqual((yield* steering.status).routines[0]!.nextFireAt, "2025-11-03T09:30:00.000Z")
      yield* TestClock.adjust("25 hours")
      assert.deepStrictEqual(timeline(yield* entries("fire")), ["fire:in-overlap@2025-11-03T01:30:00-08:00"])
    }))

  test("the boot cursor: nothing fires the instant the node starts", () =>
    Effect.gen(function*() {
      const { steering } = yield* startUtc("2025-03-03T09:00:00Z", [
        quietScan("morning", { dailyAt: "09:00" }),
        quietScan("hourly", { intervalMs: HOUR })
      ])
      yield* TestClock.adjust("1 minute")
      assert.deepStrictEqual(yield* entries("fire"), [])
      assert.deepStrictEqual((yield* steering.status).routines.map((r) => r.nextFireAt), [
        "2025-03-04T09:00:00.000Z",
        "2025-03-03T10:00:00.000Z"
      ])
      yield* TestClock.adjust("59 minutes")
      assert.deepStrictEqual(timeline(yield* entries("fire")), ["fire:hourly@2025-03-03T10:00:00+00:00"])
    }))
})
