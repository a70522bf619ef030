/**
 * One agent's life over the in-memory Claude, under TestClock: turns, results, permission, interrupts and
 * timeouts, supervision and close. No process starts; no real time passes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, TestClock } from "effect"
import { eventually, failureOf, fleetTests, memoryFleet, tagOf, withAgents } from "./support.js"

const test = fleetTests(memoryFleet())

describe("turns", () => {
  test("prompt returns a turn id at once and turns run FIFO, one at a time", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents("fifo")
      const first = yield* fleet.prompt("fifo", "slow 300 one")
      const second = yield* fleet.prompt("fifo", "two")
      const third = yield* fleet.prompt("fifo", "three")
      assert.deepStrictEqual([first, second, third], ["t1", "t2", "t3"])
      assert.strictEqual((yield* fleet.status("fifo")).status, "working")
      const status = yield* eventually(fleet.status("fifo"), (s) => s.current === "t1")
      assert.strictEqual(status.queued, 2)
      assert.strictEqual(tagOf(yield* Effect.exit(fleet.result("fifo", "t2"))), "TurnPending")
      const waiting = yield* Effect.fork(fleet.wait("fifo", third))
      yield* TestClock.adjust("300 millis")
      const r3 = yield* Fiber.join(waiting)
      assert.strictEqual((yield* fleet.result("fifo", first)).text, "slow done one")
      assert.strictEqual(r3.text, "echo: three")
      const transcript = yield* fleet.transcript("fifo")
      assert.deepStrictEqual(transcript.map((t) => t.prompt), ["slow 300 one", "two", "three"])
      for (let i = 1; i < transcript.length; i++) {
        assert.isTrue(transcript[i]!.startedAt! >= transcript[i - 1]!.finishedAt!)
      }
      assert.deepStrictEqual(transcript.map((t) => t.status), ["succeeded", "succeeded", "succeeded"])
      assert.strictEqual(transcript[0]!.durationMs, 300)
    }))

  test("result: NoResult before any turn, latest after, and each turn's own cost", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents("res")
      assert.strictEqual(tagOf(yield* Effect.exit(fleet.result("res", "latest"))), "NoResult")
      assert.strictEqual(tagOf(yield* Effect.exit(fleet.result("res", "t9"))), "NoResult")
      const a = yield* fleet.askResult("res", "a")
      const b = yield* fleet.askResult("res", "b")
      // The process reports a running total; each turn reports its own share.
      assert.closeTo(a.costUsd, 0.001, 1e-9)
      assert.closeTo(b.costUsd, 0.001, 1e-9)
      assert.strictEqual(b.modelCalls, 1)
      assert.strictEqual(b.subtype, "success")
      assert.strictEqual((yield* fleet.result("res", "latest")).turnId, b.turnId)
      const info = yield* fleet.info("res")
      assert.strictEqual(info.totals.turns, 2)
      assert.closeTo(info.totals.costUsd, 0.002, 1e-9)
      assert.strictEqual(info.sessionId, b.sessionId)
      const kinds = (yield* fleet.reports({ agent: "res" })).entries.map((e) => e.kind)
      assert.deepStrictEqual(kinds, ["spawned", "turn_started", "result", "turn_started", "result"])
    }))

  test("an API error is TurnFailed with its HTTP status, recorded, and the agent goes on", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents("apierr")
      const error = failureOf(yield* Effect.exit(fleet.ask("apierr", "error 529")))
      assert.strictEqual(error._tag, "TurnFailed")
      assert.strictEqual(error._tag === "TurnFailed" ? error.status : null, 529)
      assert.strictEqual(tagOf(yield* Effect.exit(fleet.result("apierr", "t1"))), "TurnFailed")
      const [turn] = yield* fleet.transcript("apierr")
      assert.deepInclude(turn!, { status: "failed" })
      assert.strictEqual(turn!.error?._tag, "TurnFailed")
      assert.strictEqual(yield* fleet.ask("apierr", "still here"), "echo: still here")
    }))

  test("an empty prompt or a non-positive timeout is refused with a clear error", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents("empty")
      const error = failureOf(yield* Effect.exit(fleet.prompt("empty", "  ")))
      assert.strictEqual(error._tag, "InvalidSpec")
      assert.match(error.message, /non-empty/)
      assert.strictEqual(tagOf(yield* Effect.exit(fleet.prompt("empty", "x", { timeout: 0 }))), "InvalidSpec")
    }))

  test("the conversation carries across turns", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents("memo")
      yield* fleet.ask("memo", "the cat is grey")
      assert.strictEqual(yield* fleet.ask("memo", "recall"), "earlier: the cat is grey")
    }))
})

describe("permission as data", () => {
  test("read_only: Read runs, a Write is not even offered; both are in the transcript", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents("ro")
      const denied = yield* fleet.askResult("ro", "tool Write {\"file_path\":\"/tmp/x\",\"content\":\"y\"}")
      assert.strictEqual(denied.text, "denied Write: No such tool available: Write")
      assert.strictEqual(denied.permissionDenials[0]?.tool_name, "Write")
      assert.match(yield* fleet.ask("ro", "tool Read {\"file_path\":\"/etc/hostname\"}"), /^allowed Read/)
      const [write, read] = yield* fleet.transcript("ro")
      assert.strictEqual(write!.toolCalls[0]!.name, "Write")
      assert.strictEqual(read!.toolCalls[0]!.name, "Read")
    }))

  test("full: every tool call is asked through the policy, and recorded as a permission", (fleet) =>
    Effect.gen(function*() {
      yield* fleet.spawn("all", { permission: "full" })
      assert.match(yield* fleet.ask("all", "tool Bash {\"command\":\"ls\"}"), /^allowed Bash/)
      const [turn] = yield* fleet.transcript("all")
      assert.deepStrictEqual(turn!.permissions, [
        { toolUseId: turn!.toolCalls[0]!.id, tool: "Bash", input: { command: "ls" }, decision: "allow" }
      ])
      const { entries } = yield* fleet.reports({ agent: "all", kinds: ["permission"] })
      assert.deepStrictEqual(entries.map((e) => [e.turnId, (e.data as { decision: string }).decision]), [
        ["t1", "allow"]
      ])
    }))

  test("a function can allow, allow with changed input, or deny with a message", (fleet) =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      yield* fleet.spawn("fn", {
        permission: (tool, input) => {
          seen.push(tool)
          if (tool === "Bash") return { behavior: "deny", message: "no shell today" }
          if (tool === "Write") {
            return Promise.resolve({ behavior: "allow", updatedInput: { ...input, content: "safe" } })
          }
          return Effect.succeed({ behavior: "allow" })
        }
      })
      assert.strictEqual(yield* fleet.ask("fn", "tool Bash {\"command\":\"rm -rf /\"}"), "denied Bash: no shell today")
      assert.strictEqual(
        yield* fleet.ask("fn", "tool Write {\"file_path\":\"a\",\"content\":\"evil\"}"),
        "allowed Write {\"file_path\":\"a\",\"content\":\"safe\"}"
      )
      assert.strictEqual(
        yield* fleet.ask("fn", "tool Edit {\"file_path\":\"a\"}"),
        "allowed Edit {\"file_path\":\"a\"}"
      )
      assert.deepStrictEqual(seen, ["Bash", "Write", "Edit"])
      const turns = yield* fleet.transcript("fn")
      assert.deepStrictEqual(turns[1]!.permissions[0], {
        toolUseId: turns[1]!.toolCalls[0]!.id,
        tool: "Write",
        input: { file_path: "a", content: "evil" },
        decision: "allow",
        updatedInput: { file_path: "a", content: "safe" }
      })
    }))

  test("a policy that throws denies instead of crashing the agent", (fleet) =>
    Effect.gen(function*() {
      yield* fleet.spawn("throws", {
        permission: () => {
          throw new Error("policy bug")
        }
      })
      assert.match(yield* fleet.ask("throws", "tool Bash {}"), /^denied Bash: .*policy failed/)
      assert.strictEqual(yield* fleet.ask("throws", "hi"), "echo: hi")
    }))
})

describe("interrupt and timeouts", () => {
  test("interrupt ends the running turn as TurnInterrupted and queued turns go on", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents("intr")
      const hung = yield* fleet.prompt("intr", "hang")
      const next = yield* fleet.prompt("intr", "after")
      yield* eventually(fleet.status("intr"), (s) => s.current === hung)
      assert.isTrue(yield* fleet.interrupt("intr"))
      assert.strictEqual(tagOf(yield* Effect.exit(fleet.wait("intr", hung))), "TurnInterrupted")
      assert.strictEqual((yield* fleet.wait("intr", next)).text, "echo: after")
      assert.isFalse(yield* fleet.interrupt("intr"))
    }))

  test("ask with a timeout interrupts the turn when it expires", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents("slowpoke")
      const fiber = yield* Effect.fork(Effect.exit(fleet.ask("slowpoke", "hang", { timeout: "30 seconds" })))
      yield* eventually(fleet.status("slowpoke"), (s) => s.current !== null)
      yield* TestClock.adjust("29 seconds")
      assert.isNull(fiber.unsafePoll())
      yield* TestClock.adjust("1 second")
      assert.strictEqual(tagOf(yield* Fiber.join(fiber)), "TurnTimeout")
      // Nothing is left running on the caller's behalf: the agent is idle and answers.
      assert.strictEqual((yield* eventually(fleet.status("slowpoke"), (s) => s.status === "idle")).current, null)
      assert.strictEqual(yield* fleet.ask("slowpoke", "next"), "echo: next")
    }))

  test("a caller's timeout is a deadline from the call: a turn still queued at it never runs", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents("queue")
      yield* fleet.prompt("queue", "slow 60000 long")
      const late = yield* fleet.prompt("queue", "late", { timeout: "10 seconds" })
      const waiting = yield* Effect.fork(Effect.exit(fleet.wait("queue", late)))
      yield* TestClock.adjust("10 seconds")
      assert.strictEqual(tagOf(yield* Fiber.join(waiting)), "TurnTimeout")
      yield* TestClock.adjust("50 seconds")
      yield* eventually(fleet.status("queue"), (s) => s.status === "idle")
      const transcript = yield* fleet.transcript("queue")
      assert.isNull(transcript[1]!.startedAt, "the expired turn was never sent")
    }))

  test("the agent's default turn timeout applies to prompt too", (fleet) =>
    Effect.gen(function*() {
      yield* fleet.spawn("deft", { timeout: "5 seconds" })
      const turn = yield* fleet.prompt("deft", "hang")
      const waiting = yield* Effect.fork(Effect.exit(fleet.wait("deft", turn)))
      yield* eventually(fleet.status("deft"), (s) => s.current === turn)
      yield* TestClock.adjust("5 seconds")
      assert.strictEqual(tagOf(yield* Fiber.join(waiting)), "TurnTimeout")
    }))

  test("interrupting a caller of ask cancels its turn", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents("cancel")
      const fiber = yield* Effect.fork(fleet.ask("cancel", "hang"))
      yield* eventually(fleet.status("cancel"), (s) => s.current !== null)
      yield* Fiber.interrupt(fiber)
      yield* eventually(fleet.status("cancel"), (s) => s.status === "idle")
      assert.strictEqual(tagOf(yield* Effect.exit(fleet.result("cancel", "t1"))), "TurnInterrupted")
    }))

  test("interrupting a watcher leaves the turn running, and it still completes", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents("watched")
      const turnId = yield* fleet.prompt("watched", "slow 400 watched")
      const running = yield* eventually(fleet.status("watched"), (s) => s.current === turnId)
      assert.strictEqual(running.currentStartedAt, (yield* fleet.transcript("watched"))[0]!.startedAt)
      const watcher = yield* Effect.fork(fleet.watch("watched", turnId))
      yield* TestClock.adjust("50 millis")
      yield* Fiber.interrupt(watcher)
      assert.strictEqual((yield* fleet.status("watched")).current, turnId, "nothing cancelled it")
      const done = yield* Effect.fork(fleet.watch("watched", turnId))
      yield* TestClock.adjust("350 millis")
      assert.strictEqual((yield* Fiber.join(done)).text, "slow done watched")
      const idle = yield* eventually(fleet.status("watched"), (s) => s.status === "idle")
      assert.deepInclude(idle, { current: null, currentStartedAt: null })
      assert.strictEqual(tagOf(yield* Effect.exit(fleet.watch("watched", "t9"))), "NoResult")
      assert.strictEqual(tagOf(yield* Effect.exit(fleet.watch("nobody", "t1"))), "AgentNotFound")
    }))

  test("interrupting a watcher of a queued turn leaves it queued, and it runs", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents("watchq")
      yield* fleet.prompt("watchq", "slow 300 first")
      const queued = yield* fleet.prompt("watchq", "second")
      const watcher = yield* Effect.fork(fleet.watch("watchq", queued))
      yield* eventually(fleet.status("watchq"), (s) => s.current === "t1")
      yield* Fiber.interrupt(watcher)
      assert.strictEqual((yield* fleet.status("watchq")).queued, 1)
      const done = yield* Effect.fork(fleet.watch("watchq", queued))
      yield* TestClock.adjust("300 millis")
      assert.strictEqual((yield* Fiber.join(done)).text, "echo: second")
    }))

  it.effect("a turn with no output for stallTimeout is interrupted and the process restarted", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents("stall")
      const turn = yield* fleet.prompt("stall", "hang")
      const waiting = yield* Effect.fork(Effect.exit(fleet.wait("stall", turn)))
      yield* eventually(fleet.status("stall"), (s) => s.current === turn)
      yield* TestClock.adjust("1 minute")
      const error = failureOf(yield* Fiber.join(waiting))
      assert.strictEqual(error._tag, "AgentCrashed")
      assert.match(error.message, /stalled: no output for 1m/)
      yield* TestClock.adjust("1 second") // the restart's backoff
      yield* eventually(fleet.info("stall"), (i) => i.status === "idle" && i.restarts === 1)
      assert.strictEqual(yield* fleet.ask("stall", "back"), "echo: back")
      const kinds = (yield* fleet.reports({ agent: "stall" })).entries.map((e) => e.kind)
      assert.includeMembers(kinds, ["crashed", "restarted"])
    }).pipe(Effect.provide(memoryFleet({ stallTimeout: "1 minute", turnTimeout: "1 hour" }))))
})

describe("supervision", () => {
  test("a crash mid-turn fails that turn; the agent resumes the session and the queue goes on", (fleet) =>
    Effect.gen(function*() {
      const before = yield* fleet.spawn("phoenix")
      assert.strictEqual(yield* fleet.ask("phoenix", "the cat is grey"), "echo: the cat is grey")
      const crash = yield* fleet.prompt("phoenix", "crash 7")
      const queued = yield* fleet.prompt("phoenix", "recall")
      const error = failureOf(yield* Effect.exit(fleet.wait("phoenix", crash)))
      assert.strictEqual(error._tag, "AgentCrashed")
      if (error._tag === "AgentCrashed") {
        assert.strictEqual(error.exitCode, 7)
        assert.include(error.stderr, "simulated crash")
      }
      yield* eventually(fleet.status("phoenix"), (s) => s.status === "restarting")
      yield* TestClock.adjust("1 second")
      // The queued turn runs in the new process, which resumed the same conversation.
      assert.strictEqual((yield* fleet.wait("phoenix", queued)).text, "earlier: the cat is grey | crash 7")
      const after = yield* fleet.info("phoenix")
      assert.strictEqual(after.sessionId, before.sessionId)
      assert.strictEqual(after.restarts, 1)
    }))

  it.effect("restarts back off exponentially; past the budget the agent stays closed with the reason", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents("fragile")
      // Backoffs 1, 2, 4 s: three crashes fit the budget, the fourth closes the agent.
      for (const backoff of [1000, 2000, 4000]) {
        assert.strictEqual(tagOf(yield* Effect.exit(fleet.ask("fragile", "crash"))), "AgentCrashed")
        yield* eventually(fleet.status("fragile"), (s) => s.status === "restarting")
        yield* TestClock.adjust(backoff - 1)
        assert.strictEqual((yield* fleet.status("fragile")).status, "restarting", `still waiting at ${backoff - 1}`)
        yield* TestClock.adjust(1)
        yield* eventually(fleet.status("fragile"), (s) => s.status === "idle")
      }
      const last = yield* fleet.prompt("fragile", "crash")
      const queued = yield* fleet.prompt("fragile", "never runs")
      assert.strictEqual(tagOf(yield* Effect.exit(fleet.wait("fragile", last))), "AgentCrashed")
      assert.strictEqual(tagOf(yield* Effect.exit(fleet.wait("fragile", queued))), "AgentClosed")
      const info = yield* fleet.info("fragile")
      assert.strictEqual(info.status, "closed")
      assert.match(info.closedReason ?? "", /restarted 3 times in 10m/)
      assert.strictEqual(tagOf(yield* Effect.exit(fleet.prompt("fragile", "hi"))), "AgentClosed")
      yield* fleet.close("fragile")
      yield* fleet.spawn("fragile")
    }).pipe(Effect.provide(memoryFleet({ maxRestarts: 3 }))))

  it.effect("the restart budget is a window: old restarts stop counting", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents("steady")
      for (let i = 0; i < 5; i++) {
        assert.strictEqual(tagOf(yield* Effect.exit(fleet.ask("steady", "crash"))), "AgentCrashed")
        yield* eventually(fleet.status("steady"), (s) => s.status === "restarting")
        // Each restart starts a fresh window: the backoff never grows past the first step.
        yield* TestClock.adjust("1 second")
        yield* eventually(fleet.status("steady"), (s) => s.status === "idle")
        yield* TestClock.adjust("11 minutes")
      }
      assert.strictEqual((yield* fleet.info("steady")).restarts, 5)
    }).pipe(Effect.provide(memoryFleet({ maxRestarts: 2 }))))

  it.effect("a restart that cannot start is reported and retried within the budget", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents("flaky")
      assert.strictEqual(tagOf(yield* Effect.exit(fleet.ask("flaky", "crash"))), "AgentCrashed")
      yield* TestClock.adjust("1 second") // first restart: refused
      yield* TestClock.adjust("2 seconds") // second restart: comes up
      yield* eventually(fleet.status("flaky"), (s) => s.status === "idle")
      const crashes = (yield* fleet.reports({ agent: "flaky", kinds: ["crashed"] })).entries
      assert.strictEqual(crashes.length, 2)
      assert.match(JSON.stringify(crashes[1]!.data), /resume refused once/)
      assert.strictEqual(yield* fleet.ask("flaky", "ok"), "echo: ok")
    }).pipe(Effect.provide(memoryFleet({
      failStart: (() => {
        let refused = false
        return ({ resume }) => {
          if (!resume || refused) return undefined
          refused = true
          return "resume refused once"
        }
      })()
    }))))

  it.effect("a restart with no conversation to resume begins a new session, and says so", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents("unwritten")
      const before = yield* fleet.info("unwritten")
      assert.strictEqual(yield* fleet.ask("unwritten", "one"), "echo: one")
      assert.strictEqual(tagOf(yield* Effect.exit(fleet.ask("unwritten", "crash"))), "AgentCrashed")
      yield* TestClock.adjust("1 second") // the resume finds no conversation
      yield* TestClock.adjust("2 seconds") // a new one
      yield* eventually(fleet.status("unwritten"), (s) => s.status === "idle")
      assert.strictEqual(yield* fleet.ask("unwritten", "two"), "echo: two")
      const after = yield* fleet.info("unwritten")
      assert.notStrictEqual(after.sessionId, before.sessionId)
      assert.strictEqual(after.restarts, 2)
      const lost = (yield* fleet.reports({ agent: "unwritten", kinds: ["session_lost"] })).entries
      assert.strictEqual(lost.length, 1)
      assert.deepInclude(lost[0]!.data as object, { sessionId: before.sessionId, newSessionId: after.sessionId })
    }).pipe(Effect.provide(memoryFleet({
      // Every resume fails as the CLI does when it never wrote the session's file.
      failStart: ({ resume }) => (resume ? "No conversation found with session ID: gone" : undefined)
    }))))
})

describe("close", () => {
  test("close fails the running and queued turns with AgentClosed and frees the name", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents("closer")
      const running = yield* fleet.prompt("closer", "hang")
      const queued = yield* fleet.prompt("closer", "later")
      yield* eventually(fleet.status("closer"), (s) => s.current === running)
      yield* fleet.close("closer")
      assert.strictEqual(tagOf(yield* Effect.exit(fleet.wait("closer", running))), "AgentNotFound")
      assert.strictEqual(tagOf(yield* Effect.exit(fleet.status("closer"))), "AgentNotFound")
      yield* fleet.spawn("closer")
      const kinds = (yield* fleet.reports({ agent: "closer" })).entries.map((e) => e.kind)
      assert.includeMembers(kinds, ["spawned", "turn_started", "error", "closed"])
      const errors = (yield* fleet.reports({ agent: "closer", kinds: ["error"] })).entries
      assert.deepStrictEqual(errors.map((e) => e.turnId).sort(), [queued, running].sort())
      assert.isTrue(errors.every((e) => (e.data as { error: { _tag: string } }).error._tag === "AgentClosed"))
    }))
})
