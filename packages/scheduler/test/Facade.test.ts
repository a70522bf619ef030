/**
 * The `Scheduler` service over the engine, and `fleet.scheduler` on the Promise facade, with the engine over
 * the in-memory Claude of `@flotta/core/Testing`: no process starts, and TestClock is the only clock.
 */
import { afterEach, assert, describe, it } from "@effect/vitest"
import { fromLayer } from "@flotta/core/Client"
import { Flotta } from "@flotta/core/Flotta"
import * as Testing from "@flotta/core/Testing"
import { Chunk, Duration, Effect, Either, Layer, Option, Stream, TestClock } from "effect"
import * as SchedulerClient from "../src/Client.js"
import { SchedulerNotEnabled } from "../src/Errors.js"
import { Scheduler } from "../src/Scheduler.js"
import * as SchedulerConfig from "../src/SchedulerConfig.js"
import type { FireOutcome } from "../src/Steering.js"
import { entries, timeline } from "./support.js"

const ALL_WEEK = Object.fromEntries(
  ["mon", "tue", "wed", "thu", "fri", "sat", "sun"].map((d) => [d, [["00:00", "24:00"]]])
)

/** The engine over the in-memory Claude with the scheduler of `config` on top. */
const scheduled = (config: Record<string, unknown>, options: Testing.Options = {}) =>
  Scheduler.layer(Option.getOrThrow(Either.getOrThrow(SchedulerConfig.read(config)))).pipe(
    Layer.provideMerge(Testing.layer(options))
  )

/** The outcomes of the next `count` fires, in the order they end. */
const nextOutcomes = (count: number) =>
  Effect.gen(function*() {
    const fleet = yield* Flotta
    const results = yield* fleet.subscribe({ agent: "scheduler", kinds: ["fire_result"] })
    return results.pipe(
      Stream.filterMap((n) => (n._tag === "Entry" ? Option.some(n.entry.data as FireOutcome) : Option.none())),
      Stream.take(count),
      Stream.runCollect,
      Effect.map(Chunk.toArray)
    )
  })

describe("without a scheduler", () => {
  it.scoped("optional callers get SchedulerNotEnabled", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* Effect.flip(Scheduler.enabled), new SchedulerNotEnabled())
      assert.strictEqual(
        new SchedulerNotEnabled().message,
        "the scheduler is not enabled: add a `schedule` section to the config"
      )
    }).pipe(Effect.provide(Scheduler.layer(undefined).pipe(Layer.provideMerge(Testing.layer())))))
})

describe("routines through the fleet (in-memory Claude, TestClock)", () => {
  it.scoped("prompt, run and scan routines fire on schedule through the public operations", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.parse("2025-03-03T09:00:00Z"))
      yield* Effect.gen(function*() {
        const fleet = yield* Flotta
        const scheduler = yield* Scheduler
        const boot = yield* fleet.boot({
          agents: [
            { name: "helper" },
            { name: "greeter", lifecycle: "run", prompt: "hello from the template" }
          ]
        })
        assert.deepStrictEqual(boot.started, ["helper"])
        const status = yield* scheduler.status
        assert.deepStrictEqual(status.routines.map((r) => r.nextFireAt), [
          "2025-03-03T09:30:00.000Z",
          "2025-03-03T09:30:00.000Z",
          "2025-03-03T09:30:00.000Z",
          "2025-03-03T09:30:00.000Z"
        ])
        const outcomes = yield* nextOutcomes(4)
        yield* TestClock.adjust("30 minutes")
        const byRoutine = (yield* outcomes).sort((a, b) => a.routine!.localeCompare(b.routine!))
        assert.deepStrictEqual(byRoutine.map((o) => [o.routine, o.ok, o.text ?? o.error?._tag]), [
          ["greet", true, "echo: hello from the template"],
          ["nudge", true, "echo: how are things?"],
          ["survey", true, undefined],
          ["text-only", false, "StructuredOutputMissing"]
        ])
        assert.closeTo(byRoutine[1]!.costUsd, 0.001, 1e-9)
        assert.match(byRoutine[0]!.runs[0]!, /^greet-[0-9a-f]{8}$/)
        // The scan's structured output became findings.
        assert.deepStrictEqual(byRoutine[2]!.tasks, [{
          title: "Fix the README",
          detail: "It is stale.",
          key: "fix the readme"
        }])
        assert.deepStrictEqual((yield* scheduler.findings()).map((f) => [f.title, f.routine]), [
          ["Fix the README", "survey"]
        ])
        // The runs went through the fleet: they are in the report log under their own names (with how each ended).
        const greetRun = yield* fleet.reports({ agent: byRoutine[0]!.runs[0]! })
        assert.deepStrictEqual(greetRun.entries.map((e) => e.kind), ["spawned", "result", "closed", "run_finished"])
        // The prompt routine's turn is in the standing session's transcript.
        assert.deepStrictEqual((yield* fleet.transcript("helper")).map((t) => t.prompt), ["how are things?"])
        const override = yield* scheduler.keepGoing(60)
        assert.strictEqual(override.minutes, 60)
        assert.strictEqual((yield* scheduler.pause).mode, "paused")
      }).pipe(
        Effect.provide(scheduled({
          schedule: { timezone: "utc", hours: ALL_WEEK, tickMs: 3_600_000 },
          routines: [
            {
              name: "nudge",
              action: "prompt",
              agent: "helper",
              prompt: "how are things?",
              every: { intervalMs: 1_800_000 }
            },
            { name: "greet", action: "run", template: "greeter", every: { intervalMs: 1_800_000 } },
            { name: "survey", action: "scan", focus: "docs", every: { intervalMs: 1_800_000 } },
            { name: "text-only", action: "scan", focus: "nothing", every: { intervalMs: 1_800_000 } }
          ]
        }, {
          // A scan answers with structured output, as the CLI does under --json-schema; "nothing" answers text.
          model: ({ prompt }) =>
            prompt.includes("Focus on: docs")
              ? Testing.structured({ tasks: [{ title: "Fix the README", detail: "It is stale." }] })
              : `echo: ${prompt}`
        }))
      )
    }))

  it.scoped("a week: an hourly routine inside working hours and a daily one, fired exactly, across a DST change", () =>
    Effect.gen(function*() {
      // Wednesday 00:00 in Los Angeles; the clocks spring forward on Sunday 2025-03-09.
      yield* TestClock.setTime(Date.parse("2025-03-05T08:00:00Z"))
      yield* Effect.gen(function*() {
        const fleet = yield* Flotta
        const scheduler = yield* Scheduler
        yield* fleet.spawn("aide")
        const outcomes = yield* nextOutcomes(45)
        yield* TestClock.adjust("7 days")
        const expected: Array<string> = []
        for (
          const [date, offset] of [
            ["2025-03-05", "-08:00"],
            ["2025-03-06", "-08:00"],
            ["2025-03-07", "-08:00"],
            ["2025-03-10", "-07:00"],
            ["2025-03-11", "-07:00"]
          ]
        ) {
          // The daily scan as the day opens; the hourly turn after each hour of working time, the last at the close.
          expected.push(`fire:standup@${date}T09:00:00${offset}`)
          for (let hour = 10; hour <= 17; hour++) expected.push(`fire:hourly@${date}T${hour}:00:00${offset}`)
        }
        assert.deepStrictEqual(timeline(yield* entries("fire")), expected)
        const results = yield* outcomes
        assert.isTrue(results.every((o) => o.ok && o.trigger === "schedule"))
        assert.strictEqual((yield* fleet.transcript("aide")).length, 40)
        assert.deepStrictEqual((yield* scheduler.findings()).map((f) => [f.title, f.sightings]), [[
          "Triage the inbox",
          5
        ]])
        assert.deepStrictEqual(timeline(yield* entries("wake", "stop")).slice(-2), [
          "wake@2025-03-11T09:00:00-07:00",
          "stop@2025-03-11T17:00:00-07:00"
        ])
      }).pipe(
        Effect.provide(scheduled({
          schedule: {
            timezone: "America/Los_Angeles",
            hours: Object.fromEntries(["mon", "tue", "wed", "thu", "fri"].map((d) => [d, [["09:00", "17:00"]]])),
            // The heartbeat wakes at every change anyway; a long tick keeps TestClock's steps to those.
            tickMs: 24 * 3_600_000
          },
          routines: [
            {
              name: "hourly",
              action: "prompt",
              agent: "aide",
              prompt: "anything new?",
              every: { intervalMs: 3_600_000 }
            },
            { name: "standup", action: "scan", every: { dailyAt: "09:00" } }
          ]
        }, {
          // Nothing here hangs, so the engine's own timers are off: each pending sleep is a TestClock step.
          startTimeout: Duration.infinity,
          turnTimeout: Duration.infinity,
          stallTimeout: Duration.infinity,
          model: ({ prompt }) =>
            prompt.startsWith("Scan")
              ? Testing.structured({ tasks: [{ title: "Triage the inbox", detail: "Every morning." }] })
              : "nothing new"
        }))
      )
    }))
})

describe("the Promise facade with the scheduler", () => {
  const fleets: Array<{ readonly shutdown: () => Promise<void> }> = []
  afterEach(async () => {
    await Promise.all(fleets.splice(0).map((f) => f.shutdown()))
  })

  // fromLayer runs on the live clock; the in-memory Claude still starts no process.
  it("fleet.scheduler steers through Promises, and is undefined without a schedule", async () => {
    const plain = fromLayer(Testing.layer(), { scheduler: SchedulerClient.extension({ agents: [] }) })
    fleets.push(plain)
    assert.isUndefined(plain.scheduler)

    const fleet = fromLayer(Testing.layer(), {
      scheduler: SchedulerClient.extension({
        schedule: { timezone: "utc", hours: ALL_WEEK },
        routines: [{ name: "hook", action: "scan" }]
      })
    })
    fleets.push(fleet)
    const scheduler = fleet.scheduler!
    const status = await scheduler.status()
    assert.strictEqual(status.mode, "working")
    assert.isTrue(status.working)
    const stop = await scheduler.stopForToday()
    assert.strictEqual(stop.kind, "stop_for_today")
    assert.isFalse((await scheduler.status()).working)
    assert.isTrue((await scheduler.resume()).working)
    const unknown = await scheduler.runRoutine("nope").then(() => null, (e: unknown) => e)
    assert.strictEqual((unknown as { _tag: string })._tag, "RoutineNotFound")
    const untriggered = await scheduler.trigger("nope", { source: "webhook" }).then(() => null, (e: unknown) => e)
    assert.strictEqual((untriggered as { _tag: string })._tag, "RoutineNotFound")
    // A trigger resolves with the fire's id once it has started, not with its outcome.
    const { fireId } = await scheduler.trigger("hook", { source: "webhook", text: "an event" })
    assert.match(fireId, /^fire-[0-9a-f]{8}$/)
    assert.deepStrictEqual(await scheduler.findings(), [])

    const bad = fromLayer(Testing.layer(), {
      scheduler: SchedulerClient.extension({ schedule: { timezone: "nowhere", hours: {} } })
    })
    fleets.push(bad)
    const error = await bad.list().then(() => null, (e: unknown) => e)
    assert.strictEqual((error as { _tag: string })._tag, "InvalidSpec")
  })
})
