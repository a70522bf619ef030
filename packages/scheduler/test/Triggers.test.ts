/**
 * Fires from outside: routines without a cadence, `trigger` (a webhook's, GitHub's) within working time, the pause,
 * the busy check and the rail, what the event says in the prompt, and a routine's own secret, which nothing shows.
 * Under TestClock, over a real report log and a test double of the fleet's operations.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Option, Redacted, TestClock } from "effect"
import { capText, MAX_EVENT_BYTES } from "../src/Actions.js"
import { STATE_KEY } from "../src/internal/persist.js"
import * as Routine from "../src/Routine.js"
import type { SchedulerDeps } from "../src/Scheduler.js"
import {
  entries,
  failureOf,
  fakeFleet,
  fireResults,
  gatedFleet,
  HOUR,
  LogLive,
  scanningFleet,
  setTime,
  settle,
  start,
  startAt,
  template,
  timeline,
  UTC
} from "./support.js"

const SECRET = "correct-horse-battery-staple"

/** A store's state API over a map, holding what it was given as JSON (as the real stores do). */
const memoryState = () => {
  const saved = new Map<string, string>()
  const store: NonNullable<SchedulerDeps["store"]> = {
    saveState: (key, value) => void saved.set(key, JSON.stringify(value)),
    loadState: (key) => Effect.sync(() => Option.map(Option.fromNullable(saved.get(key)), (s) => JSON.parse(s)))
  }
  return { store, saved }
}

const dataOf = (kind: string) => Effect.map(entries(kind), (list) => list.map((e) => e.data as Record<string, unknown>))

describe("routines without a cadence", () => {
  it("no every, or { triggered: true }, is a routine fired only on trigger; its new fields are checked", () => {
    const { rejected, routines } = Routine.readRoutines([
      { name: "bare", action: "scan" },
      { name: "said", action: "run", every: { triggered: true }, prompt: "go", secret: SECRET, triggerAnyTime: true },
      { name: "short", action: "scan", secret: "hunter2" },
      { name: "flag", action: "prompt", agent: "scout", prompt: "hi", triggerAnyTime: "yes" },
      { name: "no", action: "scan", every: { triggered: false } }
    ])
    assert.deepStrictEqual(routines.map((r) => [r.name, r.every]), [
      ["bare", { triggered: true }],
      ["said", { triggered: true }]
    ])
    const said = routines[1]!
    assert.isTrue(Redacted.isRedacted(said.secret))
    assert.strictEqual(Redacted.value(said.secret!), SECRET)
    assert.strictEqual(said.triggerAnyTime, true)
    assert.notInclude(JSON.stringify(routines), SECRET)
    assert.deepStrictEqual(rejected.map((r) => `${r.path}: ${r.message}`), [
      "routines[2].secret: a string of at least 16 characters",
      "routines[3].triggerAnyTime: expected true or false, got \"yes\"",
      "routines[4].every.triggered: true (or leave every out): fired only when triggered"
    ])
    assert.notInclude(JSON.stringify(rejected), "hunter2")
  })

  it.scoped("never fires on schedule, across days; fires on trigger and by hand", () =>
    Effect.gen(function*() {
      const { steering } = yield* startAt("2025-03-03T09:00:00Z", {
        schedule: UTC,
        routines: [
          { name: "hook", action: "run", prompt: "on demand" },
          { name: "said", action: "run", every: { triggered: true }, prompt: "on demand too" }
        ]
      })
      yield* TestClock.adjust("3 days")
      assert.deepStrictEqual(yield* entries("fire", "skip"), [])
      const status = yield* steering.status
      assert.deepStrictEqual(
        status.routines.map((r) => [r.name, r.every, r.nextFireAt, r.workedMs]),
        [["hook", { triggered: true }, null, undefined], ["said", { triggered: true }, null, undefined]]
      )
      const { fireId } = yield* steering.trigger("hook", { source: "webhook" })
      yield* settle(steering)
      const byHand = yield* steering.runRoutine("said")
      assert.deepStrictEqual((yield* fireResults).map((o) => [o.fireId, o.routine, o.trigger, o.ok]), [
        [fireId, "hook", "webhook", true],
        [byHand.fireId, "said", "manual", true]
      ])
      yield* TestClock.adjust("2 days")
      assert.strictEqual((yield* entries("fire")).length, 2, "still nothing on a schedule")
    }).pipe(Effect.provide(LogLive)))
})

describe("trigger", () => {
  it.scoped("returns the fire's id as soon as it has started; the entries say what fired it, with its detail", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const { steering } = yield* startAt("2025-03-03T10:00:00Z", {
        schedule: UTC,
        routines: [{ name: "ci", action: "run", prompt: "GATED" }]
      }, gatedFleet(gate))
      const detail = { event: "check_run.completed", delivery: "d-1" }
      const { fireId } = yield* steering.trigger("ci", { source: "github", detail })
      assert.match(fireId, /^fire-[0-9a-f]{8}$/)
      // Not waited for: the fire is in flight and has no outcome yet.
      assert.deepStrictEqual((yield* steering.status).running.map((r) => [r.fireId, r.routine, r.trigger]), [
        [fireId, "ci", "github"]
      ])
      assert.deepStrictEqual(yield* fireResults, [])
      // A fire still running refuses the next trigger, as it refuses runRoutine; the skip says so.
      const busy = yield* failureOf(steering.trigger("ci", { source: "webhook", detail: { delivery: "d-2" } }))
      assert.strictEqual(busy._tag, "RoutineBusy")
      assert.match(busy.message, new RegExp(`routine "ci" is still running \\(fire ${fireId}`))
      yield* Deferred.succeed(gate, undefined)
      yield* settle(steering)
      assert.deepStrictEqual(yield* dataOf("fire"), [{
        fireId,
        routine: "ci",
        action: "run",
        trigger: "github",
        localTime: "2025-03-03T10:00:00+00:00",
        detail
      }])
      assert.deepStrictEqual(yield* dataOf("skip"), [{
        routine: "ci",
        reason: "previous fire still running",
        trigger: "webhook",
        localTime: "2025-03-03T10:00:00+00:00",
        detail: { delivery: "d-2" },
        running: fireId
      }])
      assert.deepStrictEqual((yield* fireResults).map((o) => [o.fireId, o.trigger, o.ok, o.text]), [
        [fireId, "github", true, "opened"]
      ])
      const missing = yield* failureOf(steering.trigger("nope", { source: "webhook" }))
      assert.deepStrictEqual([missing._tag, missing.message], [
        "RoutineNotFound",
        "no routine named \"nope\" (routines: ci)"
      ])
    }).pipe(Effect.provide(LogLive)))

  it.scoped("the event's text goes into the prompt: after a blank line, or in place of {{event}}; cut at 16 KiB", () =>
    Effect.gen(function*() {
      const fleet = scanningFleet(() => [], 0.1)
      fleet.templates.set("fixer", template({ name: "fixer", prompt: "Fix what the event says." }))
      const { steering } = yield* startAt("2025-03-03T10:00:00Z", {
        schedule: UTC,
        routines: [
          { name: "append", action: "run", prompt: "Look into this." },
          { name: "placed", action: "run", prompt: "The event:\n{{event}}\nNow act on it." },
          { name: "templated", action: "run", template: "fixer" },
          { name: "turn", action: "prompt", agent: "scout", prompt: "status?" },
          { name: "scan", action: "scan", focus: "docs" },
          { name: "hourly", action: "run", every: { intervalMs: HOUR }, prompt: "Tick {{event}}" }
        ]
      }, fleet)
      const text = "check_run failed on main"
      for (const name of ["append", "placed", "templated", "turn", "scan"]) {
        yield* steering.trigger(name, { source: "webhook", text })
        yield* settle(steering)
      }
      const promptOf = (routine: string) => fleet.runs.find((r) => r.labels?.["routine"] === routine)?.prompt
      assert.strictEqual(promptOf("append"), `Look into this.\n\n${text}`)
      assert.strictEqual(promptOf("placed"), `The event:\n${text}\nNow act on it.`)
      assert.strictEqual(promptOf("templated"), `Fix what the event says.\n\n${text}`)
      assert.strictEqual(fleet.runs.find((r) => r.labels?.["routine"] === "templated")?.template, "fixer")
      assert.deepStrictEqual(fleet.prompts, [{ agent: "scout", text: `status?\n\n${text}` }])
      assert.strictEqual(
        promptOf("scan"),
        `Scan for actionable work and report it as tasks. Focus on: docs\n\n${text}`
      )
      // The schedule's fires and the manual ones, and a trigger with no text, leave the prompt as it is.
      yield* TestClock.adjust("1 hour")
      yield* steering.runRoutine("hourly")
      yield* steering.trigger("templated", { source: "webhook" })
      yield* settle(steering)
      yield* steering.trigger("templated", { source: "webhook", text: "  \n" })
      yield* settle(steering)
      assert.deepStrictEqual(fleet.runs.filter((r) => r.labels?.["routine"] === "hourly").map((r) => r.prompt), [
        "Tick {{event}}",
        "Tick {{event}}"
      ])
      const untouched = fleet.runs.filter((r) => r.labels?.["routine"] === "templated").at(-1)!
      assert.deepStrictEqual([untouched.template, untouched.prompt], ["fixer", undefined])
      // A long text is cut between two characters, and says so.
      const long = "ab" + "€".repeat(10_000)
      yield* steering.trigger("append", { source: "webhook", text: long })
      yield* settle(steering)
      const cut = fleet.runs.filter((r) => r.labels?.["routine"] === "append").at(-1)!.prompt!
      assert.strictEqual(
        cut,
        "Look into this.\n\nab" + "€".repeat(5460) +
          "\n[the event's text was cut: the first 16382 of its 30002 bytes are above]"
      )
      assert.strictEqual(capText("é".repeat(MAX_EVENT_BYTES / 2)), "é".repeat(MAX_EVENT_BYTES / 2))
    }).pipe(Effect.provide(LogLive)))

  it.scoped("outside working hours it is refused and the skip recorded, unless the routine has triggerAnyTime", () =>
    Effect.gen(function*() {
      const { steering } = yield* startAt("2025-03-03T07:30:00Z", {
        schedule: UTC,
        routines: [
          { name: "strict", action: "run", prompt: "work" },
          { name: "anytime", action: "run", prompt: "work", triggerAnyTime: true }
        ]
      })
      const detail = { delivery: "d-9" }
      const error = yield* failureOf(steering.trigger("strict", { source: "github", detail }))
      assert.deepStrictEqual<unknown>(
        { ...error },
        { _tag: "RoutineOffHours", name: "strict", reason: "outside working hours", until: "2025-03-03T09:00:00.000Z" }
      )
      assert.strictEqual(
        error.message,
        "routine \"strict\" was not triggered: outside working hours (working time starts at " +
          "2025-03-03T09:00:00.000Z); set triggerAnyTime: true on the routine to let a trigger fire it at any time"
      )
      const { fireId } = yield* steering.trigger("anytime", { source: "github", detail })
      yield* settle(steering)
      assert.deepStrictEqual(yield* dataOf("skip"), [{
        routine: "strict",
        reason: "outside working hours",
        trigger: "github",
        localTime: "2025-03-03T07:30:00+00:00",
        detail
      }])
      assert.deepStrictEqual((yield* fireResults).map((o) => [o.fireId, o.routine, o.trigger, o.ok]), [
        [fireId, "anytime", "github", true]
      ])
      // At 09:00 working time starts and the strict one is fired too.
      yield* TestClock.adjust("90 minutes")
      yield* steering.trigger("strict", { source: "github" })
      yield* settle(steering)
      assert.deepStrictEqual(timeline(yield* entries("fire", "skip")), [
        "skip:strict@2025-03-03T07:30:00+00:00",
        "fire:anytime@2025-03-03T07:30:00+00:00",
        "fire:strict@2025-03-03T09:00:00+00:00"
      ])
    }).pipe(Effect.provide(LogLive)))

  it.scoped("while paused it is refused and the skip recorded, unless the routine has triggerAnyTime", () =>
    Effect.gen(function*() {
      const { steering } = yield* startAt("2025-03-03T10:00:00Z", {
        schedule: UTC,
        routines: [
          { name: "strict", action: "run", prompt: "work" },
          { name: "anytime", action: "run", prompt: "work", triggerAnyTime: true }
        ]
      })
      yield* steering.pause
      const error = yield* failureOf(steering.trigger("strict", { source: "webhook" }))
      assert.deepStrictEqual<unknown>({ ...error }, {
        _tag: "RoutineOffHours",
        name: "strict",
        reason: "the scheduler is paused"
      })
      assert.match(error.message, /^routine "strict" was not triggered: the scheduler is paused; set triggerAnyTime/)
      yield* steering.trigger("anytime", { source: "webhook" })
      yield* settle(steering)
      assert.deepStrictEqual((yield* dataOf("skip")).map((d) => [d["routine"], d["reason"], d["trigger"]]), [
        ["strict", "the scheduler is paused", "webhook"]
      ])
      assert.deepStrictEqual((yield* fireResults).map((o) => [o.routine, o.trigger]), [["anytime", "webhook"]])
      yield* steering.resume
      yield* steering.trigger("strict", { source: "webhook" })
      yield* settle(steering)
      assert.deepStrictEqual((yield* fireResults).map((o) => o.routine), ["anytime", "strict"])
    }).pipe(Effect.provide(LogLive)))

  it.scoped("the daily rail refuses it as it refuses runRoutine, and the skip says so", () =>
    Effect.gen(function*() {
      const { steering } = yield* startAt("2025-03-03T10:00:00Z", {
        schedule: UTC,
        routines: [{ name: "pricey", action: "run", prompt: "work", dailyBudgetUsd: 0.05 }]
      }, fakeFleet({ costUsd: 0.1 }))
      yield* steering.trigger("pricey", { source: "webhook" })
      yield* settle(steering)
      assert.strictEqual((yield* steering.status).routines[0]!.state, "railed")
      const error = yield* failureOf(steering.trigger("pricey", { source: "webhook", detail: { delivery: "d-3" } }))
      assert.deepStrictEqual([error._tag, error.message], [
        "RoutineRailed",
        "routine \"pricey\" spent $0.1000 of its $0.05 daily budget and is paused until 2025-03-04T00:00:00.000Z; " +
        "resume() lifts the rail"
      ])
      assert.deepStrictEqual(yield* dataOf("skip"), [{
        routine: "pricey",
        reason: "daily budget rail",
        trigger: "webhook",
        localTime: "2025-03-03T10:00:00+00:00",
        detail: { delivery: "d-3" }
      }])
    }).pipe(Effect.provide(LogLive)))
})

describe("a routine's own secret", () => {
  it.scoped("routineSecret gives it; status, the report log and the saved state never show it", () =>
    Effect.gen(function*() {
      const { saved, store } = memoryState()
      yield* setTime("2025-03-03T10:00:00Z")
      const { scheduler, steering } = yield* start(
        {
          schedule: UTC,
          routines: [
            { name: "hook", action: "run", prompt: "work", secret: SECRET },
            { name: "plain", action: "run", every: { intervalMs: HOUR }, prompt: "work" }
          ]
        },
        fakeFleet(),
        store
      )
      const secret = yield* scheduler.routineSecret("hook")
      assert.isTrue(Option.isSome(secret))
      assert.strictEqual(Redacted.value(Option.getOrThrow(secret)), SECRET)
      assert.isTrue(Option.isNone(yield* scheduler.routineSecret("plain")))
      assert.strictEqual((yield* failureOf(scheduler.routineSecret("nope")))._tag, "RoutineNotFound")

      yield* steering.trigger("hook", { source: "webhook", text: "an event" })
      yield* settle(steering)
      yield* steering.runRoutine("hook")
      yield* TestClock.adjust("1 hour")
      yield* settle(steering)
      const shown = [
        JSON.stringify(yield* steering.status),
        JSON.stringify(yield* entries()),
        saved.get(STATE_KEY) ?? ""
      ]
      assert.isTrue(shown.every((s) => s.length > 0))
      for (const s of shown) assert.notInclude(s, SECRET)
    }).pipe(Effect.provide(LogLive)))
})

describe("a restart of the host", () => {
  it.scoped("a routine fired only on trigger comes back from the saved state with its last fire", () =>
    Effect.gen(function*() {
      const { saved, store } = memoryState()
      const config = { schedule: UTC, routines: [{ name: "hook", action: "run", prompt: "work" }] }
      yield* setTime("2025-03-03T10:00:00Z")
      const fireId = yield* Effect.scoped(Effect.gen(function*() {
        const { steering } = yield* start(config, fakeFleet(), store)
        const { fireId } = yield* steering.trigger("hook", { source: "webhook" })
        yield* settle(steering)
        return fireId
      }))
      const state = JSON.parse(saved.get(STATE_KEY)!) as { routines: Record<string, unknown> }
      assert.deepInclude(state.routines["hook"], { every: { triggered: true }, workedMs: 0, lastSlot: null })

      yield* TestClock.adjust("1 day")
      yield* Effect.scoped(Effect.gen(function*() {
        const { steering } = yield* start(config, fakeFleet(), store)
        const hook = (yield* steering.status).routines[0]!
        assert.deepStrictEqual([hook.every, hook.nextFireAt, hook.lastFire?.fireId], [
          { triggered: true },
          null,
          fireId
        ])
        const resumed = (yield* dataOf("resumed")).at(-1)!
        assert.deepStrictEqual(resumed["problems"], [])
        assert.deepStrictEqual(resumed["fresh"], [])
        assert.deepStrictEqual(
          (resumed["routines"] as Record<string, { lastFire: { fireId: string } }>)["hook"]?.lastFire.fireId,
          fireId
        )
      }))

      // A cadence given to it since: the history stays, the cursor starts fresh, and the entry says why.
      yield* Effect.scoped(
        start({ ...config, routines: [{ ...config.routines[0]!, every: { intervalMs: HOUR } }] }, fakeFleet(), store)
      )
      const fresh = (yield* dataOf("resumed")).at(-1)!["fresh"]
      assert.deepStrictEqual(fresh, [{
        routine: "hook",
        reason: "its cadence changed (on trigger, now every 3600000 ms of working time)"
      }])
    }).pipe(Effect.provide(LogLive)))
})
