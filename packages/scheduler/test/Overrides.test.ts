/**
 * Steering the schedule by hand: keep going, work today or on a date, stop for today, pause and resume, and a
 * routine still busy when its next fire comes. Under TestClock, over a real report log and a test double of the
 * fleet's operations.
 */
import { assert, describe } from "@effect/vitest"
import { Deferred, Effect, TestClock } from "effect"
import {
  entries,
  failureOf,
  fireResults,
  gatedFleet,
  HOUR,
  quietScan,
  setTime,
  settle,
  start,
  startUtc,
  test,
  timeline,
  UTC,
  UTC_WEEK
} from "./support.js"

describe("overrides", () => {
  test("keepGoing extends today's window, stacks, and expires by itself", () =>
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
    }))

  test("keepGoing wants whole minutes, up to a day", () =>
    Effect.gen(function*() {
      const { steering } = yield* startUtc("2025-03-03T16:30:00Z")
      for (const minutes of [0, 1.5, 1441]) {
        const error = yield* failureOf(steering.keepGoing(minutes))
        assert.strictEqual(error._tag, "InvalidSchedule")
        assert.strictEqual(error.message, "invalid minutes: a whole number of minutes from 1 to 1440")
      }
    }))

  test("workToday adds a shift on a day off (a working day for dailyAt too) and it expires", () =>
    Effect.gen(function*() {
      yield* setTime("2025-03-08T10:00:00Z") // Saturday
      const { steering } = yield* start({
        schedule: UTC,
        routines: [quietScan("noon", { dailyAt: "12:00" })]
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
    }))

  test("workOn adds a shift on a date, and refuses bad dates and windows", () =>
    Effect.gen(function*() {
      const { steering } = yield* startUtc("2025-03-08T10:00:00Z")
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
    }))

  test("stopForToday ends the shift now, skips today's fires, and the next day works as usual", () =>
    Effect.gen(function*() {
      const { steering } = yield* startUtc("2025-03-03T11:00:00Z", [quietScan("afternoon", { dailyAt: "15:00" })])
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
    }))

  test("resume undoes stopForToday", () =>
    Effect.gen(function*() {
      const { steering } = yield* startUtc("2025-03-03T11:00:00Z")
      yield* steering.stopForToday
      const status = yield* steering.resume
      assert.isTrue(status.working)
      assert.deepStrictEqual(status.overrides, [])
    }))
})

describe("pause and busy routines", () => {
  test("pause lets an in-flight fire finish, starts nothing new, and resume picks up", () =>
    Effect.gen(function*() {
      yield* setTime("2025-03-03T09:00:00Z")
      const gate = yield* Deferred.make<void>()
      const { steering } = yield* start({
        schedule: UTC,
        routines: [
          { name: "job", action: "run", every: { intervalMs: HOUR }, prompt: "GATED" },
          quietScan("eleven", { dailyAt: "11:00" })
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
    }))

  test("a routine whose previous fire is still running is skipped, and the skip is recorded", () =>
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
    }))
})
