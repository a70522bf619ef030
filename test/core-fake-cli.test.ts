/**
 * The engine against the fake CLI script (packages/core/test/fixtures/fake-claude.mjs): real child processes
 * speaking the real protocol, for the edges the in-memory Claude cannot show. The command line and the
 * environment a child gets, noise on its pipes, the control protocol's interrupt, a child that dies or will
 * not stop, a binary that is missing or never ready, and children that never outlive the fleet. Everything
 * else about agents is shown, faster, over `Testing` in packages/core/test.
 */
import { NodeContext } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Exit, Fiber, Layer, TestClock } from "effect"
import { execFileSync } from "node:child_process"
import * as path from "node:path"
import { createFleet } from "../packages/core/src/Client.js"
import * as Flotta from "../packages/core/src/Flotta.js"
import { FAKE_CLAUDE, fakeFleet, isAlive, tempDir, waitGone } from "../packages/core/test/support.js"

const failureTag = <A, E extends { readonly _tag: string }>(exit: Exit.Exit<A, E>) =>
  Exit.match(exit, {
    onFailure: (cause) => (cause._tag === "Fail" ? cause.error._tag : `defect: ${String(cause)}`),
    onSuccess: () => "success"
  })

const failure = <A, E>(exit: Exit.Exit<A, E>): E => {
  if (Exit.isFailure(exit) && exit.cause._tag === "Fail") return exit.cause.error
  throw new Error(`expected a typed failure, got ${String(exit)}`)
}

describe("a child's command line, environment and pipes", () => {
  it.scopedLive("duplex flags, options as flags, and the inherited environment minus parent-session markers", () =>
    Effect.gen(function*() {
      process.env["FLOTTA_TEST_INHERITED"] = "from-host"
      process.env["CLAUDECODE"] = "1"
      const fleet = yield* Flotta.Flotta
      const dir = yield* tempDir
      yield* fleet.spawn("argv", {
        cwd: dir,
        model: "haiku",
        systemPrompt: "be brief",
        appendSystemPrompt: "and kind",
        env: { FLOTTA_TEST_ADDED: "added" }
      })
      const args = JSON.parse(yield* fleet.ask("argv", "args")) as Array<string>
      for (const flag of ["--input-format", "--output-format", "--verbose", "--permission-prompt-tool"]) {
        assert.include(args, flag)
      }
      assert.strictEqual(args[args.indexOf("--model") + 1], "haiku")
      assert.strictEqual(args[args.indexOf("--system-prompt") + 1], "be brief")
      assert.strictEqual(args[args.indexOf("--append-system-prompt") + 1], "and kind")
      assert.strictEqual(args[args.indexOf("--tools") + 1], "Read,Glob,Grep")
      assert.notInclude(args, "--dangerously-skip-permissions")
      assert.notInclude(args.join(" "), "bypassPermissions")
      assert.strictEqual(yield* fleet.ask("argv", "env FLOTTA_TEST_INHERITED"), "from-host")
      assert.strictEqual(yield* fleet.ask("argv", "env FLOTTA_TEST_ADDED"), "added")
      assert.strictEqual(yield* fleet.ask("argv", "env CLAUDECODE"), "<unset>")
      assert.strictEqual(yield* fleet.ask("argv", "cwd"), path.resolve(dir))
      delete process.env["CLAUDECODE"]
    }).pipe(Effect.provide(fakeFleet())))

  it.scopedLive("lines that are not protocol JSON are skipped", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      yield* fleet.spawn("noisy", { env: { FAKE_CLAUDE_STDERR_NOISE: "1" } })
      assert.strictEqual(yield* fleet.ask("noisy", "garbage"), "after garbage")
      assert.strictEqual(yield* fleet.ask("noisy", "ok"), "echo: ok")
    }).pipe(Effect.provide(fakeFleet())))
})

describe("the control protocol and supervision", () => {
  it.scopedLive("interrupt ends the running turn as TurnInterrupted and queued turns go on", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      yield* fleet.spawn("intr")
      const hung = yield* fleet.prompt("intr", "hang")
      const next = yield* fleet.prompt("intr", "after")
      yield* Effect.sleep("100 millis")
      assert.isTrue(yield* fleet.interrupt("intr"))
      assert.strictEqual(failureTag(yield* Effect.exit(fleet.wait("intr", hung))), "TurnInterrupted")
      assert.strictEqual((yield* fleet.wait("intr", next)).text, "echo: after")
      assert.isFalse(yield* fleet.interrupt("intr"))
    }).pipe(Effect.provide(fakeFleet())))

  it.scoped("a crash mid-turn fails that turn, the agent restarts with --resume and remembers", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      const state = yield* tempDir
      const before = yield* fleet.spawn("phoenix", { env: { FAKE_CLAUDE_STATE_DIR: state } })
      assert.strictEqual(yield* fleet.ask("phoenix", "remember the cat is grey"), "ok")
      const crash = yield* fleet.prompt("phoenix", "crash 7")
      const queued = yield* fleet.prompt("phoenix", "recall")
      const exit = yield* Effect.exit(fleet.wait("phoenix", crash))
      assert.strictEqual(failureTag(exit), "AgentCrashed")
      if (Exit.isFailure(exit) && exit.cause._tag === "Fail" && exit.cause.error._tag === "AgentCrashed") {
        assert.strictEqual(exit.cause.error.exitCode, 7)
        assert.include(exit.cause.error.stderr, "simulated crash")
      }
      yield* waitFor(fleet.status("phoenix"), (s) => s.status === "restarting")
      yield* TestClock.adjust("1 second")
      // The queued turn runs in the restarted process, which resumed the same session.
      assert.strictEqual((yield* fleet.wait("phoenix", queued)).text, "facts: the cat is grey")
      const after = yield* fleet.info("phoenix")
      assert.notStrictEqual(after.pid, before.pid)
      assert.strictEqual(after.sessionId, before.sessionId)
      assert.strictEqual(after.restarts, 1)
      const args = JSON.parse(yield* fleet.ask("phoenix", "args")) as Array<string>
      assert.strictEqual(args[args.indexOf("--resume") + 1], before.sessionId)
    }).pipe(Effect.provide(fakeFleet())))

  it.scoped("a child that dies while idle is restarted too", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      const before = yield* fleet.spawn("idle-death")
      process.kill(before.pid!, "SIGKILL")
      yield* waitFor(fleet.status("idle-death"), (s) => s.status === "restarting")
      yield* TestClock.adjust("1 second")
      yield* waitFor(fleet.info("idle-death"), (i) => i.status === "idle" && i.pid !== before.pid)
      assert.strictEqual(yield* fleet.ask("idle-death", "alive"), "echo: alive")
    }).pipe(Effect.provide(fakeFleet())))
})

describe("stopping children", () => {
  it.scopedLive("close fails queued turns with AgentClosed, stops the child, and frees the name", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      const info = yield* fleet.spawn("closer")
      const running = yield* fleet.prompt("closer", "hang")
      const queued = yield* fleet.prompt("closer", "later")
      yield* waitFor(fleet.status("closer"), (s) => s.current === running)
      yield* fleet.close("closer")
      assert.strictEqual(failureTag(yield* Effect.exit(fleet.wait("closer", running))), "AgentNotFound")
      assert.isTrue(yield* waitGone(info.pid!))
      assert.strictEqual(failureTag(yield* Effect.exit(fleet.status("closer"))), "AgentNotFound")
      const again = yield* fleet.spawn("closer")
      assert.notStrictEqual(again.pid, info.pid)
      const kinds = (yield* fleet.reports({ agent: "closer" })).entries.map((e) => e.kind)
      assert.includeMembers(kinds, ["spawned", "turn_started", "error", "closed"])
      const errors = (yield* fleet.reports({ agent: "closer", kinds: ["error"] })).entries
      assert.deepStrictEqual(errors.map((e) => e.turnId).sort(), [queued, running].sort())
      assert.isTrue(errors.every((e) => (e.data as { error: { _tag: string } }).error._tag === "AgentClosed"))
    }).pipe(Effect.provide(fakeFleet())))

  it.scoped("a child that ignores EOF and SIGTERM is killed with SIGKILL", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      const info = yield* fleet.spawn("stubborn", { env: { FAKE_CLAUDE_IGNORE_SIGTERM: "1" } })
      const closing = yield* Effect.fork(fleet.close("stubborn"))
      yield* Effect.sleep("1 second").pipe(Effect.withClock(realClock))
      assert.isTrue(isAlive(info.pid!), "still alive after EOF")
      yield* TestClock.adjust("2 seconds") // EOF grace: SIGTERM now (ignored)
      yield* Effect.sleep("300 millis").pipe(Effect.withClock(realClock))
      assert.isTrue(isAlive(info.pid!), "still alive after SIGTERM")
      yield* TestClock.adjust("5 seconds") // SIGTERM grace: SIGKILL now
      yield* Fiber.join(closing)
      assert.isTrue(yield* waitGone(info.pid!))
    }).pipe(Effect.provide(fakeFleet())))

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

  it("the Promise facade's shutdown stops every child", async () => {
    const fleet = createFleet({ executable: { command: process.execPath, prefixArgs: [FAKE_CLAUDE] } })
    const infos = await Promise.all(["x", "y"].map((n) => fleet.spawn(n)))
    await fleet.prompt("x", "hang")
    await fleet.shutdown()
    for (const info of infos) assert.isTrue(await Effect.runPromise(waitGone(info.pid!)))
  })
})

describe("children that do not start", () => {
  it.scopedLive("a missing binary is SpawnFailed that says what to do, and the name stays free", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      const error = failure(yield* Effect.exit(fleet.spawn("ghost")))
      assert.strictEqual(error._tag, "SpawnFailed")
      assert.match(error.message, /not found/)
      assert.deepStrictEqual(yield* fleet.list(), [])
    }).pipe(Effect.provide(
      Flotta.layer({ executable: { command: "/nonexistent/claude", prefixArgs: [] } }).pipe(
        Layer.provide(NodeContext.layer)
      )
    )))

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

  it.scopedLive("a child that never answers initialize fails after startTimeout", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      const error = failure(yield* Effect.exit(fleet.spawn("mute", { env: { FAKE_CLAUDE_START_DELAY_MS: "5000" } })))
      assert.strictEqual(error._tag, "SpawnFailed")
      assert.match(error.message, /not ready after/)
    }).pipe(Effect.provide(fakeFleet({ startTimeout: "300 millis" }))))
})

const realClock = Clock.make()

/** Polls a view (on the real clock, so TestClock stays still) until it satisfies a predicate. */
const waitFor = <A, E, R>(view: Effect.Effect<A, E, R>, predicate: (a: A) => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 1000; i++) {
      const value = yield* view
      if (predicate(value)) return value
      yield* Effect.sleep("10 millis").pipe(Effect.withClock(realClock))
    }
    return yield* Effect.dieMessage("condition never held within 10 s")
  })
