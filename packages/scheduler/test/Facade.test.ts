/**
 * The `Scheduler` service over the engine, and `fleet.scheduler` on the Promise facade, with the engine over
 * the fake claude CLI.
 */
import { afterEach, assert, describe, it } from "@effect/vitest"
import { createFleet } from "@flotta/core/Client"
import { Flotta } from "@flotta/core/Flotta"
import { Chunk, Effect, Either, Layer, Option, Stream, TestClock } from "effect"
import { FAKE_CLAUDE, fakeFleet } from "../../core/test/support.js"
import * as SchedulerClient from "../src/Client.js"
import { SchedulerNotEnabled } from "../src/Errors.js"
import { Scheduler } from "../src/Scheduler.js"
import * as SchedulerConfig from "../src/SchedulerConfig.js"
import type { FireOutcome } from "../src/Steering.js"

const ALL_WEEK = Object.fromEntries(
  ["mon", "tue", "wed", "thu", "fri", "sat", "sun"].map((d) => [d, [["00:00", "24:00"]]])
)

/** The engine over the fake CLI with the scheduler of `config` on top. */
const scheduled = (config: Record<string, unknown>) =>
  Scheduler.layer(Option.getOrThrow(Either.getOrThrow(SchedulerConfig.read(config)))).pipe(
    Layer.provideMerge(fakeFleet())
  )

describe("without a scheduler", () => {
  it.scoped("optional callers get SchedulerNotEnabled", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* Effect.flip(Scheduler.enabled), new SchedulerNotEnabled())
      assert.strictEqual(
        new SchedulerNotEnabled().message,
        "the scheduler is not enabled: add a `schedule` section to the config"
      )
    }).pipe(Effect.provide(Scheduler.layer(undefined).pipe(Layer.provideMerge(fakeFleet())))))
})

describe("routines through the fleet (fake CLI, TestClock)", () => {
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
          "2025-03-03T09:30:00.000Z"
        ])
        const results = yield* fleet.subscribe({ agent: "scheduler", kinds: ["fire_result"] })
        yield* TestClock.adjust("30 minutes")
        // The fires run real (fake) claude processes: wait for their outcomes in real time.
        const outcomes = yield* results.pipe(
          Stream.filterMap((n) => (n._tag === "Entry" ? Option.some(n.entry.data as FireOutcome) : Option.none())),
          Stream.take(3),
          Stream.runCollect,
          Effect.map((c) => Chunk.toArray(c).sort((a, b) => a.routine!.localeCompare(b.routine!)))
        )
        assert.deepStrictEqual(outcomes.map((o) => [o.routine, o.ok, o.text ?? o.error?._tag]), [
          ["greet", true, "echo: hello from the template"],
          ["nudge", true, "echo: how are things?"],
          ["survey", false, "StructuredOutputMissing"]
        ])
        assert.closeTo(outcomes[1]!.costUsd, 0.001, 1e-9)
        assert.match(outcomes[0]!.runs[0]!, /^greet-[0-9a-f]{8}$/)
        // The runs went through the fleet: they are in the report log under their own names.
        const greetRun = yield* fleet.reports({ agent: outcomes[0]!.runs[0]! })
        assert.deepStrictEqual(greetRun.entries.map((e) => e.kind), ["spawned", "result", "closed"])
        const override = yield* scheduler.keepGoing(60)
        assert.strictEqual(override.minutes, 60)
        assert.strictEqual((yield* scheduler.pause).mode, "paused")
        assert.deepStrictEqual(yield* scheduler.findings(), [])
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
            { name: "survey", action: "scan", every: { intervalMs: 1_800_000 } }
          ]
        }))
      )
    }))
})

describe("createFleet with the scheduler", () => {
  const fleets: Array<ReturnType<typeof createFleet>> = []
  afterEach(async () => {
    await Promise.all(fleets.splice(0).map((f) => f.shutdown()))
  })
  const executable = { command: process.execPath, prefixArgs: [FAKE_CLAUDE] }

  it("fleet.scheduler steers through Promises, and is undefined without a schedule", async () => {
    const plain = createFleet({ executable, extensions: { scheduler: SchedulerClient.extension({ agents: [] }) } })
    fleets.push(plain)
    assert.isUndefined(plain.scheduler)

    const fleet = createFleet({
      executable,
      extensions: { scheduler: SchedulerClient.extension({ schedule: { timezone: "utc", hours: ALL_WEEK } }) }
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
    assert.deepStrictEqual(await scheduler.findings(), [])

    const bad = createFleet({
      executable,
      extensions: { scheduler: SchedulerClient.extension({ schedule: { timezone: "nowhere", hours: {} } }) }
    })
    fleets.push(bad)
    const error = await bad.list().then(() => null, (e: unknown) => e)
    assert.strictEqual((error as { _tag: string })._tag, "InvalidSpec")
  })
})
