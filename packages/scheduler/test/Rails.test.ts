/**
 * Cost rails: each fire is bounded by what its routine may still spend, and a routine that crossed its daily budget
 * waits for the next day (or a resume); and every step of the schedule is a span as well as an entry. Under
 * TestClock, over a real report log and a test double of the fleet's operations.
 */
import { assert, describe } from "@effect/vitest"
import { NoAttemptPassed } from "@flotta/core/Errors"
import { Deferred, Effect, TestClock, Tracer } from "effect"
import {
  entries,
  failureOf,
  fakeFleet,
  fireResults,
  gatedFleet,
  HOUR,
  runResult,
  setTime,
  settle,
  start,
  startAt,
  startUtc,
  test,
  timeline,
  UTC
} from "./support.js"

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

  test("each fire is bounded by what is left; crossing the daily rail pauses the routine until the next day", () =>
    Effect.gen(function*() {
      const { fleet, steering } = yield* startAt("2025-03-03T09:00:00Z", railed)
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
    }))

  test("resume lifts a rail", () =>
    Effect.gen(function*() {
      const { steering } = yield* startAt("2025-03-03T09:00:00Z", railed)
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
    }))

  test("a restart does not reset a spent rail within the same day", () =>
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
    }))
})

describe("cost rails and best-of-N runs", () => {
  test("a fire counts what every attempt spent, when one wins and when none passes", () =>
    Effect.gen(function*() {
      // The first fire's three attempts spent 0.06 (the winner 0.01 of it); the second's, none passing, 0.07.
      let fires = 0
      const fleet = fakeFleet({
        run: (options) =>
          ++fires === 1
            ? Effect.succeed({ ...runResult(options.name!, "won", { costUsd: 0.01 }), totalCostUsd: 0.06 })
            : Effect.fail(new NoAttemptPassed({ name: options.name!, attempts: [], costUsd: 0.07 }))
      })
      const { steering } = yield* startUtc("2025-03-03T09:00:00Z", [{
        name: "best",
        action: "run",
        every: { intervalMs: HOUR },
        prompt: "work",
        dailyBudgetUsd: 1
      }], fleet)
      yield* TestClock.adjust("2 hours")
      yield* settle(steering)
      const outcomes = yield* fireResults
      assert.deepStrictEqual(outcomes.map((o) => [o.ok, Number(o.costUsd.toFixed(4))]), [[true, 0.06], [false, 0.07]])
      assert.closeTo((yield* steering.status).routines[0]!.spentTodayUsd, 0.13, 1e-9)
    }))
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

  test("every wake, stop, fire, skip, override and rail is a span as well as a report entry", () =>
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
    }))
})
