/**
 * The fleet as a whole over the in-memory Claude, under TestClock: names, admission of starts, start failures,
 * broadcast, the declarative fleet, shutdown and metrics.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Metric, MetricState, TestClock } from "effect"
import * as Flotta from "../src/Flotta.js"
import * as Telemetry from "../src/Telemetry.js"
import { eventually, failureOf, memoryFleet, tagOf } from "./support.js"

describe("names", () => {
  it.effect("a bad name is InvalidName, a taken one AgentAlreadyExists", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      for (const bad of ["", "Upper", "../escape", "a/b", "-lead", "x".repeat(64), ".hidden"]) {
        assert.strictEqual(failureOf(yield* Effect.exit(fleet.spawn(bad)))._tag, "InvalidName", bad)
      }
      yield* fleet.spawn("a.b_c-1")
      const taken = failureOf(yield* Effect.exit(fleet.spawn("a.b_c-1")))
      assert.strictEqual(taken._tag, "AgentAlreadyExists")
      assert.match(taken.message, /already exists/)
    }).pipe(Effect.provide(memoryFleet())))

  it.effect("an unknown agent is AgentNotFound and the message lists the live ones", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      yield* fleet.spawn("one")
      yield* fleet.spawn("two")
      const error = failureOf(yield* Effect.exit(fleet.ask("three", "hi")))
      assert.strictEqual(error._tag, "AgentNotFound")
      assert.include(error.message, "live agents: one, two")
    }).pipe(Effect.provide(memoryFleet())))
})

describe("starting", () => {
  it.effect("a process that dies at start is SpawnFailed with its exit code and stderr, and the name stays free", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      const error = failureOf(yield* Effect.exit(fleet.spawn("doa")))
      assert.strictEqual(error._tag, "SpawnFailed")
      if (error._tag === "SpawnFailed") {
        assert.strictEqual(error.exitCode, 1)
        assert.include(error.stderr, "fatal: cannot start")
        assert.match(error.message, /exited during start/)
      }
      assert.deepStrictEqual(yield* fleet.list(), [])
      const reports = yield* fleet.reports({ agent: "doa" })
      assert.deepStrictEqual(reports.entries, [], "nothing is reported for an agent that never came up")
    }).pipe(
      Effect.provide(memoryFleet({ failStart: ({ agent }) => (agent === "doa" ? "fatal: cannot start" : undefined) }))
    ))

  it.effect("starts are admitted a few at a time, and a wait for a slot never times out", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      // Each start takes 300 ms; with 2 slots, 8 starts take 4 rounds (1.2 s), far past the 500 ms readiness
      // timeout, which only runs once a start has its slot.
      const names = Array.from({ length: 8 }, (_, i) => `s${i}`)
      const all = yield* Effect.fork(Effect.forEach(names, (name) => fleet.spawn(name), { concurrency: "unbounded" }))
      for (const round of [1, 2, 3]) {
        yield* TestClock.adjust("300 millis")
        const up = yield* eventually(fleet.list(), (list) => list.length === 2 * round)
        assert.strictEqual(up.length, 2 * round, `after round ${round}`)
      }
      yield* TestClock.adjust("300 millis")
      const infos = yield* Fiber.join(all)
      assert.strictEqual(infos.length, 8)
      assert.strictEqual((yield* fleet.list()).filter((i) => i.status === "idle").length, 8)
    }).pipe(
      Effect.provide(memoryFleet({ maxConcurrentStarts: 2, startTimeout: "500 millis", startDelay: "300 millis" }))
    ))

  it.effect("a process that never answers initialize fails after startTimeout", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      const spawn = yield* Effect.fork(Effect.exit(fleet.spawn("mute")))
      yield* TestClock.adjust("300 millis")
      yield* TestClock.adjust("1 second") // the moment given to the exit code and stderr
      const error = failureOf(yield* Fiber.join(spawn))
      assert.strictEqual(error._tag, "SpawnFailed")
      assert.match(error.message, /not ready after 300ms \(no answer to initialize\)/)
      assert.deepStrictEqual(yield* fleet.list(), [])
    }).pipe(Effect.provide(memoryFleet({ startTimeout: "300 millis", startDelay: "1 hour" }))))
})

describe("broadcast", () => {
  it.effect("every session at once; a slow or failing one never holds up the others", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      yield* fleet.spawn("fast")
      yield* fleet.spawn("also-fast")
      yield* fleet.spawn("busy")
      // `busy` is working on a hang, so the broadcast turn queues behind it and times out.
      yield* fleet.prompt("busy", "hang")
      const broadcast = yield* Effect.fork(fleet.broadcast("hi", { timeout: "1 second" }))
      yield* TestClock.adjust("1 second")
      const outcomes = yield* Fiber.join(broadcast)
      const byName = Object.fromEntries(outcomes.map((o) => [o.name, o]))
      assert.deepStrictEqual(byName["fast"], { name: "fast", ok: true, turnId: "t1", text: "echo: hi", costUsd: 0.001 })
      assert.isTrue(byName["also-fast"]!.ok)
      assert.deepInclude(byName["busy"]!, { ok: false })
      assert.strictEqual(byName["busy"]!.ok ? "" : byName["busy"]!.error._tag, "TurnTimeout")
    }).pipe(Effect.provide(memoryFleet())))

  it.effect("broadcast reaches sessions only, never a run in flight", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      yield* fleet.spawn("session")
      const run = yield* fleet.runAsync({ prompt: "slow 1000 working", name: "busy-run" })
      yield* eventually(fleet.list(), (list) => list.some((i) => i.name === run))
      const outcomes = yield* fleet.broadcast("status?")
      assert.deepStrictEqual(outcomes.map((o) => o.name), ["session"])
      yield* TestClock.adjust("1 second")
      const result = yield* fleet.awaitRun(run)
      assert.strictEqual(result.kind === "run" ? result.text : "", "slow done working")
      const prompts = (yield* fleet.reports({ agent: run, kinds: ["turn_started"] })).entries
      assert.deepStrictEqual(prompts, [], "the run took no second turn")
    }).pipe(Effect.provide(memoryFleet())))
})

describe("the declarative fleet", () => {
  it.effect("boot starts the sessions, keeps runs as templates, skips bad entries with their path", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      const report = yield* fleet.boot({
        fleetDefaults: { model: "haiku" },
        agents: [
          { name: "scout", appendSystemPrompt: "read-only" },
          { name: "writer", permission: "full" },
          { name: "Bad Name" },
          { name: "runner", lifecycle: "run", worktree: true, permission: { allow: ["Read", "Edit"] } },
          { name: "typo", permision: "full" },
          { name: "isolated", worktree: true }
        ]
      })
      assert.deepStrictEqual(report.started, ["scout"])
      assert.deepStrictEqual(report.templates, ["runner"])
      assert.deepStrictEqual(report.rejected.map((r) => r.path), [
        "agents[1].permission",
        "agents[2].name",
        "agents[4].permision",
        "agents[5].worktree"
      ])
      const scout = yield* fleet.info("scout")
      assert.strictEqual(scout.model, "haiku")
      assert.strictEqual(scout.permission, "read_only")
      assert.isDefined(yield* fleet.template("runner"))
    }).pipe(Effect.provide(memoryFleet())))
})

describe("shutdown and telemetry", () => {
  it.effect("closing the fleet's scope closes every agent and fails their turns", () =>
    Effect.gen(function*() {
      const outcome = yield* Effect.scoped(
        Effect.gen(function*() {
          const fleet = yield* Flotta.Flotta
          yield* Effect.forEach(["a", "b", "c"], (n) => fleet.spawn(n), { concurrency: 3 })
          const turn = yield* fleet.prompt("a", "hang")
          const registry = yield* Flotta.Flotta
          return { fleet: registry, wait: yield* Effect.fork(Effect.exit(fleet.wait("a", turn))) }
        }).pipe(Effect.provide(memoryFleet()))
      )
      assert.strictEqual(tagOf(yield* Fiber.join(outcome.wait)), "AgentClosed")
    }))

  it.effect("a spawn still starting when the fleet shuts down fails, and nothing is left", () =>
    Effect.gen(function*() {
      const starting = yield* Effect.scoped(
        Effect.gen(function*() {
          const fleet = yield* Flotta.Flotta
          const fiber = yield* Effect.fork(Effect.exit(fleet.spawn("late")))
          yield* TestClock.adjust("100 millis")
          return fiber
        }).pipe(Effect.provide(memoryFleet({ startDelay: "1 second" })))
      )
      const exit = yield* Fiber.join(starting)
      assert.notStrictEqual(tagOf(exit), "success")
    }))

  it.effect("turns are counted per agent and outcome, and live agents are gauged", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      yield* fleet.spawn("metered")
      yield* fleet.ask("metered", "one")
      yield* Effect.exit(fleet.ask("metered", "error 500"))
      const ok = yield* Metric.value(
        Telemetry.turnsTotal.pipe(Metric.tagged("agent", "metered"), Metric.tagged("outcome", "ok"))
      )
      const failed = yield* Metric.value(
        Telemetry.turnsTotal.pipe(Metric.tagged("agent", "metered"), Metric.tagged("outcome", "TurnFailed"))
      )
      assert.strictEqual(ok.count, 1)
      assert.strictEqual(failed.count, 1)
      const live = yield* Metric.value(Telemetry.agentsLive)
      assert.isTrue(MetricState.isGaugeState(live))
      assert.strictEqual(live.value, 1)
    }).pipe(Effect.provide(Layer.fresh(memoryFleet()))))
})
