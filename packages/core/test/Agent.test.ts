import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Exit, Fiber, TestClock } from "effect"
import * as path from "node:path"
import { Flotta } from "../src/Flotta.js"
import { fakeFleet, isAlive, tempDir, waitGone } from "./support.js"

const failureTag = <A, E extends { readonly _tag: string }>(exit: Exit.Exit<A, E>) =>
  Exit.match(exit, {
    onFailure: (cause) => (cause._tag === "Fail" ? cause.error._tag : `defect: ${String(cause)}`),
    onSuccess: () => "success"
  })

describe("turns", () => {
  it.scopedLive("prompt returns a turn id at once and turns run FIFO, one at a time", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      yield* fleet.spawn("fifo")
      const first = yield* fleet.prompt("fifo", "slow 300 one")
      const second = yield* fleet.prompt("fifo", "two")
      const third = yield* fleet.prompt("fifo", "three")
      assert.deepStrictEqual([first, second, third], ["t1", "t2", "t3"])
      assert.strictEqual((yield* fleet.status("fifo")).status, "working")
      const status = yield* waitFor(fleet.status("fifo"), (s) => s.current === "t1")
      assert.strictEqual(status.queued, 2)
      const pending = yield* Effect.exit(fleet.result("fifo", "t2"))
      assert.strictEqual(failureTag(pending), "TurnPending")
      const r3 = yield* fleet.wait("fifo", third)
      const r1 = yield* fleet.result("fifo", first)
      assert.strictEqual(r1.text, "slow done one")
      assert.strictEqual(r3.text, "echo: three")
      const transcript = yield* fleet.transcript("fifo")
      assert.deepStrictEqual(transcript.map((t) => t.prompt), ["slow 300 one", "two", "three"])
      // One in flight at a time: each turn starts after the previous one finished.
      for (let i = 1; i < transcript.length; i++) {
        assert.isTrue(transcript[i]!.startedAt! >= transcript[i - 1]!.finishedAt!)
      }
    }).pipe(Effect.provide(fakeFleet())))

  it.scopedLive("result: NoResult before any turn, latest after, and a TurnResult with the turn's own cost", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      yield* fleet.spawn("res")
      assert.strictEqual(failureTag(yield* Effect.exit(fleet.result("res", "latest"))), "NoResult")
      assert.strictEqual(failureTag(yield* Effect.exit(fleet.result("res", "t9"))), "NoResult")
      const a = yield* fleet.askResult("res", "a")
      const b = yield* fleet.askResult("res", "b")
      // The fake's total_cost_usd grows by 0.001 a turn: each turn reports its own share.
      assert.closeTo(a.costUsd, 0.001, 1e-9)
      assert.closeTo(b.costUsd, 0.001, 1e-9)
      assert.strictEqual(b.modelCalls, 1)
      assert.isString(b.sessionId)
      assert.strictEqual((yield* fleet.result("res", "latest")).turnId, b.turnId)
      const info = yield* fleet.info("res")
      assert.strictEqual(info.totals.turns, 2)
      assert.closeTo(info.totals.costUsd, 0.002, 1e-9)
      assert.strictEqual(info.sessionId, b.sessionId)
    }).pipe(Effect.provide(fakeFleet())))

  it.scopedLive("an API error is TurnFailed with its HTTP status, and the agent goes on", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      yield* fleet.spawn("apierr")
      const exit = yield* Effect.exit(fleet.ask("apierr", "error 529"))
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit) && exit.cause._tag === "Fail") {
        const error = exit.cause.error
        assert.strictEqual(error._tag, "TurnFailed")
        if (error._tag === "TurnFailed") assert.strictEqual(error.status, 529)
      }
      assert.strictEqual(failureTag(yield* Effect.exit(fleet.result("apierr", "t1"))), "TurnFailed")
      assert.strictEqual(yield* fleet.ask("apierr", "still here"), "echo: still here")
    }).pipe(Effect.provide(fakeFleet())))

  it.scopedLive("lines that are not protocol JSON are skipped", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      yield* fleet.spawn("noisy", { env: { FAKE_CLAUDE_STDERR_NOISE: "1" } })
      assert.strictEqual(yield* fleet.ask("noisy", "garbage"), "after garbage")
      assert.strictEqual(yield* fleet.ask("noisy", "ok"), "echo: ok")
    }).pipe(Effect.provide(fakeFleet())))

  it.scopedLive("an empty prompt is refused with a clear error", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      yield* fleet.spawn("empty")
      const exit = yield* Effect.exit(fleet.prompt("empty", "  "))
      assert.strictEqual(failureTag(exit), "InvalidSpec")
    }).pipe(Effect.provide(fakeFleet())))
})

describe("the child's command line and environment", () => {
  it.scopedLive("duplex flags, options as flags, and the inherited environment minus parent-session markers", () =>
    Effect.gen(function*() {
      process.env["FLOTTA_TEST_INHERITED"] = "from-host"
      process.env["CLAUDECODE"] = "1"
      const fleet = yield* Flotta
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
})

describe("permission as data", () => {
  it.scopedLive("read_only denies Write and records the decision", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      yield* fleet.spawn("ro")
      const reply = yield* fleet.askResult("ro", "tool Write {\"file_path\":\"/tmp/x\",\"content\":\"y\"}")
      assert.match(reply.text, /^denied Write: Permission denied by flotta/)
      assert.strictEqual(reply.permissionDenials[0]?.tool_name, "Write")
      const ok = yield* fleet.ask("ro", "tool Read {\"file_path\":\"/etc/hostname\"}")
      assert.match(ok, /^allowed Read/)
      const [denied, allowed] = yield* fleet.transcript("ro")
      assert.strictEqual(denied!.permissions[0]!.decision, "deny")
      assert.strictEqual(denied!.toolCalls[0]!.name, "Write")
      assert.strictEqual(allowed!.permissions[0]!.decision, "allow")
      const { entries } = yield* fleet.reports({ agent: "ro", kinds: ["permission"] })
      assert.deepStrictEqual(entries.map((e) => (e.data as { decision: string }).decision), ["deny", "allow"])
    }).pipe(Effect.provide(fakeFleet())))

  it.scopedLive("an allow list allows exactly the named tools", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      yield* fleet.spawn("list", { permission: { allow: ["Read", "Edit"] } })
      const reply = yield* fleet.ask("list", "tools Edit Bash Read")
      assert.match(reply, /allowed Edit; denied Bash: .*allow list.*; allowed Read/)
    }).pipe(Effect.provide(fakeFleet())))

  it.scopedLive("a function can allow, allow with changed input, or deny with a message", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const seen: Array<string> = []
      yield* fleet.spawn("fn", {
        permission: (tool, input) => {
          seen.push(tool)
          if (tool === "Bash") return { behavior: "deny", message: "no shell today" }
          if (tool === "Write") {
            return Promise.resolve({ behavior: "allow", updatedInput: { ...input, content: "safe" } })
          }
          return { behavior: "allow" }
        }
      })
      assert.strictEqual(yield* fleet.ask("fn", "tool Bash {\"command\":\"rm -rf /\"}"), "denied Bash: no shell today")
      assert.strictEqual(
        yield* fleet.ask("fn", "tool Write {\"file_path\":\"a\",\"content\":\"evil\"}"),
        "allowed Write {\"file_path\":\"a\",\"content\":\"safe\"}"
      )
      assert.strictEqual(
        yield* fleet.ask("fn", "tool Read {\"file_path\":\"a\"}"),
        "allowed Read {\"file_path\":\"a\"}"
      )
      assert.deepStrictEqual(seen, ["Bash", "Write", "Read"])
    }).pipe(Effect.provide(fakeFleet())))

  it.scopedLive("a policy that throws denies instead of crashing the agent", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      yield* fleet.spawn("throws", {
        permission: () => {
          throw new Error("policy bug")
        }
      })
      assert.match(yield* fleet.ask("throws", "tool Read {}"), /^denied Read: .*policy failed/)
      assert.strictEqual(yield* fleet.ask("throws", "hi"), "echo: hi")
    }).pipe(Effect.provide(fakeFleet())))
})

describe("interrupt and timeouts", () => {
  it.scopedLive("interrupt ends the running turn as TurnInterrupted and queued turns go on", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      yield* fleet.spawn("intr")
      const hung = yield* fleet.prompt("intr", "hang")
      const next = yield* fleet.prompt("intr", "after")
      yield* Effect.sleep("100 millis")
      assert.isTrue(yield* fleet.interrupt("intr"))
      assert.strictEqual(failureTag(yield* Effect.exit(fleet.wait("intr", hung))), "TurnInterrupted")
      assert.strictEqual((yield* fleet.wait("intr", next)).text, "echo: after")
      assert.isFalse(yield* fleet.interrupt("intr"))
    }).pipe(Effect.provide(fakeFleet())))

  it.scoped("ask with a timeout interrupts the turn when it expires (TestClock)", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      yield* fleet.spawn("slowpoke")
      const fiber = yield* Effect.fork(Effect.exit(fleet.ask("slowpoke", "hang", { timeout: "30 seconds" })))
      yield* waitFor(fleet.status("slowpoke"), (s) => s.status === "working")
      yield* TestClock.adjust("30 seconds")
      const exit = yield* Fiber.join(fiber)
      assert.strictEqual(failureTag(exit), "TurnTimeout")
      // Nothing left running on the caller's behalf: the agent is idle and answers.
      assert.strictEqual((yield* fleet.status("slowpoke")).status, "idle")
      assert.strictEqual(yield* fleet.ask("slowpoke", "next"), "echo: next")
    }).pipe(Effect.provide(fakeFleet())))

  it.scoped("the agent's default turn timeout applies to prompt too", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      yield* fleet.spawn("deft", { timeout: "5 seconds" })
      const turn = yield* fleet.prompt("deft", "hang")
      yield* waitFor(fleet.status("deft"), (s) => s.status === "working")
      yield* TestClock.adjust("5 seconds")
      assert.strictEqual(failureTag(yield* Effect.exit(fleet.wait("deft", turn))), "TurnTimeout")
    }).pipe(Effect.provide(fakeFleet())))

  it.scopedLive("interrupting a caller of ask cancels its turn", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      yield* fleet.spawn("cancel")
      const fiber = yield* Effect.fork(fleet.ask("cancel", "hang"))
      yield* waitFor(fleet.status("cancel"), (s) => s.status === "working")
      yield* Fiber.interrupt(fiber)
      yield* waitFor(fleet.status("cancel"), (s) => s.status === "idle")
      assert.strictEqual(failureTag(yield* Effect.exit(fleet.result("cancel", "t1"))), "TurnInterrupted")
    }).pipe(Effect.provide(fakeFleet())))

  it.scopedLive("interrupting a watcher leaves the turn running, and it still completes", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      yield* fleet.spawn("watched")
      const turnId = yield* fleet.prompt("watched", "slow 400 watched")
      const running = yield* waitFor(fleet.status("watched"), (s) => s.current === turnId)
      assert.isString(running.currentStartedAt)
      const transcript = yield* fleet.transcript("watched")
      assert.strictEqual(running.currentStartedAt, transcript[0]!.startedAt)
      const watcher = yield* Effect.fork(fleet.watch("watched", turnId))
      yield* Effect.sleep("50 millis")
      yield* Fiber.interrupt(watcher)
      // Still the turn in flight: nothing cancelled it.
      assert.strictEqual((yield* fleet.status("watched")).current, turnId)
      const result = yield* fleet.watch("watched", turnId)
      assert.strictEqual(result.text, "slow done watched")
      assert.strictEqual((yield* fleet.result("watched", turnId)).text, "slow done watched")
      const idle = yield* waitFor(fleet.status("watched"), (s) => s.status === "idle")
      assert.deepInclude(idle, { current: null, currentStartedAt: null })
      // The same errors as wait.
      assert.strictEqual(failureTag(yield* Effect.exit(fleet.watch("watched", "t9"))), "NoResult")
      assert.strictEqual(failureTag(yield* Effect.exit(fleet.watch("nobody", "t1"))), "AgentNotFound")
    }).pipe(Effect.provide(fakeFleet())))

  it.scopedLive("interrupting a watcher of a queued turn leaves it queued, and it runs", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      yield* fleet.spawn("watchq")
      yield* fleet.prompt("watchq", "slow 300 first")
      const queued = yield* fleet.prompt("watchq", "second")
      const watcher = yield* Effect.fork(fleet.watch("watchq", queued))
      yield* Effect.sleep("50 millis")
      yield* Fiber.interrupt(watcher)
      assert.strictEqual((yield* fleet.status("watchq")).queued, 1)
      assert.strictEqual((yield* fleet.watch("watchq", queued)).text, "echo: second")
    }).pipe(Effect.provide(fakeFleet())))

  it.scoped("a turn with no output for stallTimeout is interrupted and the process restarted", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const before = yield* fleet.spawn("stall")
      const turn = yield* fleet.prompt("stall", "hang")
      yield* waitFor(fleet.status("stall"), (s) => s.status === "working")
      yield* TestClock.adjust("1 minute")
      const exit = yield* Effect.exit(fleet.wait("stall", turn))
      assert.strictEqual(failureTag(exit), "AgentCrashed")
      yield* TestClock.adjust("1 second") // the restart backoff
      yield* waitFor(fleet.info("stall"), (i) => i.status === "idle" && i.pid !== before.pid)
      assert.strictEqual(yield* fleet.ask("stall", "back"), "echo: back")
      const kinds = (yield* fleet.reports({ agent: "stall" })).entries.map((e) => e.kind)
      assert.includeMembers(kinds, ["crashed", "restarted"])
    }).pipe(Effect.provide(fakeFleet({ stallTimeout: "1 minute", turnTimeout: "1 hour" }))))
})

describe("supervision", () => {
  it.scoped("a crash mid-turn fails that turn, the agent restarts with --resume and remembers", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
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

  it.scoped("after too many restarts in the window the agent stays closed with the reason", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      yield* fleet.spawn("fragile")
      // Backoffs 1, 2, 4 s: three crashes fit the budget, the fourth closes the agent.
      for (const backoff of ["1 second", "2 seconds", "4 seconds"] as const) {
        assert.strictEqual(failureTag(yield* Effect.exit(fleet.ask("fragile", "crash"))), "AgentCrashed")
        yield* waitFor(fleet.status("fragile"), (s) => s.status === "restarting")
        yield* TestClock.adjust(backoff)
        yield* waitFor(fleet.status("fragile"), (s) => s.status === "idle")
      }
      const last = yield* fleet.prompt("fragile", "crash")
      const queued = yield* fleet.prompt("fragile", "never runs")
      assert.strictEqual(failureTag(yield* Effect.exit(fleet.wait("fragile", last))), "AgentCrashed")
      assert.strictEqual(failureTag(yield* Effect.exit(fleet.wait("fragile", queued))), "AgentClosed")
      const info = yield* fleet.info("fragile")
      assert.strictEqual(info.status, "closed")
      assert.match(info.closedReason ?? "", /restarted 3 times/)
      assert.strictEqual(failureTag(yield* Effect.exit(fleet.prompt("fragile", "hi"))), "AgentClosed")
      // Closing it frees the name.
      yield* fleet.close("fragile")
      yield* fleet.spawn("fragile")
    }).pipe(Effect.provide(fakeFleet({ maxRestarts: 3 }))))

  it.scoped("a child that dies while idle is restarted too", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const before = yield* fleet.spawn("idle-death")
      process.kill(before.pid!, "SIGKILL")
      yield* waitFor(fleet.status("idle-death"), (s) => s.status === "restarting")
      yield* TestClock.adjust("1 second")
      yield* waitFor(fleet.info("idle-death"), (i) => i.status === "idle" && i.pid !== before.pid)
      assert.strictEqual(yield* fleet.ask("idle-death", "alive"), "echo: alive")
    }).pipe(Effect.provide(fakeFleet())))
})

describe("close", () => {
  it.scopedLive("close fails queued turns with AgentClosed, stops the child, and frees the name", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
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
      const fleet = yield* Flotta
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
