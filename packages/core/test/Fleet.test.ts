import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Metric, MetricState } from "effect"
import { execFileSync } from "node:child_process"
import * as Flotta from "../src/Flotta.js"
import * as Telemetry from "../src/Telemetry.js"
import { fakeFleet, isAlive, waitGone } from "./support.js"

const failure = <A, E>(exit: Exit.Exit<A, E>): E => {
  if (Exit.isFailure(exit) && exit.cause._tag === "Fail") return exit.cause.error
  throw new Error(`expected a typed failure, got ${String(exit)}`)
}

describe("names", () => {
  it.scopedLive("a bad name is InvalidName, a taken one AgentAlreadyExists", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      for (const bad of ["", "Upper", "../escape", "a/b", "-lead", "x".repeat(64), ".hidden"]) {
        const error = failure(yield* Effect.exit(fleet.spawn(bad)))
        assert.strictEqual(error._tag, "InvalidName", bad)
      }
      yield* fleet.spawn("a.b_c-1")
      const taken = failure(yield* Effect.exit(fleet.spawn("a.b_c-1")))
      assert.strictEqual(taken._tag, "AgentAlreadyExists")
      assert.match(taken.message, /already exists/)
    }).pipe(Effect.provide(fakeFleet())))

  it.scopedLive("an unknown agent is AgentNotFound and the message lists the live ones", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      yield* fleet.spawn("one")
      yield* fleet.spawn("two")
      const error = failure(yield* Effect.exit(fleet.ask("three", "hi")))
      assert.strictEqual(error._tag, "AgentNotFound")
      assert.include(error.message, "live agents: one, two")
    }).pipe(Effect.provide(fakeFleet())))
})

describe("spawn failures", () => {
  it.scopedLive("a missing binary is SpawnFailed that says what to do, and the name stays free", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      const error = failure(yield* Effect.exit(fleet.spawn("ghost")))
      assert.strictEqual(error._tag, "SpawnFailed")
      assert.match(error.message, /not found/)
      assert.deepStrictEqual(yield* fleet.list, [])
    }).pipe(Effect.provide(Flotta.layer({ executable: { command: "/nonexistent/claude", prefixArgs: [] } }))))

  it.scopedLive("a binary that exits at start is SpawnFailed with its exit code and stderr tail", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      const error = failure(yield* Effect.exit(fleet.spawn("doa", { env: { FAKE_CLAUDE_EXIT_AT_START: "4" } })))
      assert.strictEqual(error._tag, "SpawnFailed")
      if (error._tag === "SpawnFailed") {
        assert.strictEqual(error.exitCode, 4)
        assert.include(error.stderr, "fatal: cannot start")
      }
      // The name is free again.
      yield* fleet.spawn("doa")
    }).pipe(Effect.provide(fakeFleet())))

  it.scopedLive("a cwd that does not exist is SpawnFailed naming it", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      const error = failure(yield* Effect.exit(fleet.spawn("lost", { cwd: "/no/such/dir" })))
      assert.strictEqual(error._tag, "SpawnFailed")
      assert.include(error.message, "/no/such/dir")
    }).pipe(Effect.provide(fakeFleet())))

  it.scopedLive("starts are admitted a few at a time and a wait for a slot never times out", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      // Each start takes 300 ms; with 2 slots, 8 starts take 4 rounds (1.2 s), far past the 500 ms
      // readiness timeout, which only runs once a start has its slot.
      const started = Date.now()
      const infos = yield* Effect.forEach(
        Array.from({ length: 8 }, (_, i) => `s${i}`),
        (name) => fleet.spawn(name, { env: { FAKE_CLAUDE_START_DELAY_MS: "300" } }),
        { concurrency: "unbounded" }
      )
      const elapsed = Date.now() - started
      assert.strictEqual(infos.length, 8)
      assert.isAtLeast(elapsed, 1100, "never more than 2 starting at once")
      assert.strictEqual((yield* fleet.list).filter((i) => i.status === "idle").length, 8)
    }).pipe(Effect.provide(fakeFleet({ maxConcurrentStarts: 2, startTimeout: "500 millis" }))))

  it.scopedLive("a child that never answers initialize fails after startTimeout", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      const error = failure(yield* Effect.exit(fleet.spawn("mute", { env: { FAKE_CLAUDE_START_DELAY_MS: "5000" } })))
      assert.strictEqual(error._tag, "SpawnFailed")
      assert.match(error.message, /not ready after/)
    }).pipe(Effect.provide(fakeFleet({ startTimeout: "300 millis" }))))
})

describe("broadcast", () => {
  it.scopedLive("every agent at once; a slow or failing one never holds up the others", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      yield* fleet.spawn("fast")
      yield* fleet.spawn("also-fast")
      yield* fleet.spawn("broken")
      // `broken` is busy with a hang, so the broadcast turn queues behind it and times out.
      yield* fleet.prompt("broken", "hang")
      const started = Date.now()
      const outcomes = yield* fleet.broadcast("hi", { timeout: "1 second" })
      const byName = Object.fromEntries(outcomes.map((o) => [o.name, o]))
      assert.deepStrictEqual(byName["fast"], { name: "fast", ok: true, turnId: "t1", text: "echo: hi", costUsd: 0.001 })
      assert.isTrue(byName["also-fast"]!.ok)
      assert.isFalse(byName["broken"]!.ok)
      assert.isBelow(Date.now() - started, 10_000)
    }).pipe(Effect.provide(fakeFleet({ turnTimeout: "1 second", interruptGrace: "1 second" }))))
})

describe("the declarative fleet", () => {
  it.scopedLive("boot starts the sessions, keeps runs as templates, skips bad entries with their path", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      const report = yield* fleet.boot({
        fleetDefaults: { model: "haiku" },
        agents: [
          { name: "scout", appendSystemPrompt: "read-only" },
          { name: "writer", permission: "full" },
          { name: "Bad Name" },
          { name: "runner", lifecycle: "run", worktree: true, permission: { allow: ["Read", "Edit"] } },
          { name: "typo", permision: "full" }
        ]
      })
      assert.deepStrictEqual(report.started, ["scout"])
      assert.deepStrictEqual(report.templates, ["runner"])
      assert.deepStrictEqual(report.rejected.map((r) => r.path), [
        "agents[1].permission",
        "agents[2].name",
        "agents[4].permision"
      ])
      const scout = yield* fleet.info("scout")
      assert.strictEqual(scout.model, "haiku")
      assert.strictEqual(scout.permission, "read_only")
      assert.isDefined(yield* fleet.template("runner"))
    }).pipe(Effect.provide(fakeFleet())))
})

describe("shutdown and telemetry", () => {
  it.live("closing the fleet's scope stops every child", () =>
    Effect.gen(function*() {
      const pids = yield* Effect.scoped(
        Effect.gen(function*() {
          const fleet = yield* Flotta.Flotta
          const infos = yield* Effect.forEach(["a", "b", "c"], (n) => fleet.spawn(n), { concurrency: 3 })
          yield* fleet.prompt("a", "hang")
          return infos.map((i) => i.pid!)
        }).pipe(Effect.provide(fakeFleet()))
      )
      for (const pid of pids) assert.isTrue(yield* waitGone(pid), `pid ${pid} outlived the fleet`)
    }))

  it.live("a spawn still starting when the fleet shuts down fails and leaves no child behind", () =>
    Effect.gen(function*() {
      const marker = `--flotta-test-marker-${process.pid}-${Date.now()}`
      const exit = yield* Effect.scoped(
        Effect.gen(function*() {
          const fleet = yield* Flotta.Flotta
          const starting = yield* Effect.fork(
            fleet.spawn("late", { env: { FAKE_CLAUDE_START_DELAY_MS: "1500" }, extraArgs: [marker] })
          )
          yield* Effect.sleep("300 millis")
          return starting
        }).pipe(Effect.provide(fakeFleet()))
      ).pipe(Effect.flatMap((fiber) => Fiber.await(fiber)))
      assert.isTrue(Exit.isFailure(exit), String(exit))
      yield* Effect.sleep("200 millis")
      const left = execFileSync("ps", ["-eo", "args"], { encoding: "utf8" }).split("\n").filter((l) =>
        l.includes(marker)
      )
      assert.deepStrictEqual(left, [])
    }))

  it.scopedLive("turns are counted per agent and outcome, and live agents are gauged", () =>
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
    }).pipe(Effect.provide(fakeFleet())))
})

describe("processes", () => {
  it.scopedLive("isAlive sees the fake child while it runs", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      const info = yield* fleet.spawn("visible")
      assert.isTrue(isAlive(info.pid!))
      assert.strictEqual(yield* fleet.ask("visible", "pid"), String(info.pid))
    }).pipe(Effect.provide(fakeFleet())))
})
