/**
 * The in-memory Claude itself: every kind of reply, under TestClock, with no process anywhere.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, TestClock } from "effect"
import { Flotta } from "../src/Flotta.js"
import * as Testing from "../src/Testing.js"
import { withAgents } from "./support.js"

const failure = <A, E extends { readonly _tag: string }>(exit: Exit.Exit<A, E>) =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined

describe("Testing.layer: the in-memory Claude", () => {
  it.effect("a plain reply, with the conversation's history and turn number", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const info = yield* fleet.spawn("a")
      assert.isNull(info.pid)
      assert.strictEqual(yield* fleet.ask("a", "one"), "one|0|1")
      assert.strictEqual(yield* fleet.ask("a", "two"), "two|1|2")
      const result = yield* fleet.result("a")
      assert.strictEqual(result.turnId, "t2")
      assert.closeTo(result.costUsd, 0.001, 1e-12)
      assert.strictEqual(result.modelCalls, 1)
    }).pipe(Effect.provide(Testing.layer({
      model: ({ history, prompt, turn }) => `${prompt}|${history.length}|${turn}`
    }))))

  it.effect("a tool call goes through the agent's permission policy and into the transcript", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents("reader")
      yield* fleet.spawn("writer", { permission: (tool) => ({ behavior: "deny", message: `no ${tool} today` }) })
      // Read is allowed by the read-only flags without asking; Write is not offered to a read-only agent.
      assert.strictEqual(yield* fleet.ask("reader", "Read"), "allow")
      assert.strictEqual(yield* fleet.ask("reader", "Write"), "deny: No such tool available: Write")
      assert.strictEqual(yield* fleet.ask("writer", "Write"), "deny: no Write today")
      const [turn] = yield* fleet.transcript("writer")
      assert.deepStrictEqual(turn!.toolCalls.map((c) => c.name), ["Write"])
      assert.deepStrictEqual(turn!.permissions, [
        {
          toolUseId: turn!.toolCalls[0]!.id,
          tool: "Write",
          input: { file_path: "x" },
          decision: "deny",
          message: "no Write today"
        }
      ])
      const reports = yield* fleet.reports({ agent: "writer", kinds: ["permission"] })
      assert.strictEqual(reports.entries.length, 1)
    }).pipe(Effect.provide(Testing.layer({
      model: ({ prompt }) =>
        Testing.toolUse(
          prompt,
          { file_path: "x" },
          (d) => (d.behavior === "allow" ? "allow" : `deny: ${d.message}`)
        )
    }))))

  it.effect("a delayed reply arrives only when the clock is adjusted", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents("slow")
      const fiber = yield* Effect.fork(fleet.ask("slow", "x"))
      yield* TestClock.adjust("59 seconds")
      assert.strictEqual((yield* fleet.status("slow")).status, "working")
      assert.isNull(fiber.unsafePoll())
      yield* TestClock.adjust("1 second")
      assert.strictEqual(yield* Fiber.join(fiber), "late")
    }).pipe(Effect.provide(Testing.layer({ model: () => Testing.delay("1 minute", "late") }))))

  it.effect("an API error is TurnFailed with its status; the agent goes on", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents("a")
      const error = failure(yield* Effect.exit(fleet.ask("a", "fail")))
      assert.strictEqual(error?._tag, "TurnFailed")
      assert.strictEqual(error?._tag === "TurnFailed" ? error.status : null, 529)
      assert.strictEqual(yield* fleet.ask("a", "ok"), "echo: ok")
    }).pipe(Effect.provide(Testing.layer({
      model: (
        { prompt }
      ) => (prompt === "fail" ? Testing.apiError(529, "overloaded") : Testing.echo({ prompt } as never))
    }))))

  it.effect("a crash fails the turn; the agent restarts with --resume and the history survives", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents("c")
      assert.strictEqual(yield* fleet.ask("c", "remember blue"), "ok")
      const fiber = yield* Effect.fork(fleet.ask("c", "crash"))
      yield* TestClock.adjust("1 second") // the first restart's backoff
      const error = failure(yield* Fiber.await(fiber))
      assert.strictEqual(error?._tag, "AgentCrashed")
      assert.match(error?.message ?? "", /simulated crash/)
      assert.strictEqual(yield* fleet.ask("c", "recall"), "remember blue,crash")
      const info = yield* fleet.info("c")
      assert.strictEqual(info.restarts, 1)
      assert.deepStrictEqual(
        (yield* fleet.reports({ agent: "c" })).entries.map((e) => e.kind).filter((k) => k !== "turn_started"),
        ["spawned", "result", "error", "crashed", "restarted", "result"]
      )
    }).pipe(Effect.provide(Testing.layer({
      model: ({ history, prompt }) =>
        prompt === "crash" ? Testing.crash() : prompt === "recall" ? history.join(",") : "ok"
    }))))

  it.effect("a hang trips the caller's timeout (interrupted) and the stall watchdog (restarted)", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents("h")
      const timed = yield* Effect.fork(fleet.ask("h", "hang", { timeout: "30 seconds" }))
      yield* TestClock.adjust("30 seconds")
      assert.strictEqual(failure(yield* Fiber.await(timed))?._tag, "TurnTimeout")
      const stalled = yield* Effect.fork(fleet.ask("h", "hang"))
      yield* TestClock.adjust("5 minutes")
      yield* TestClock.adjust("1 second")
      assert.strictEqual(failure(yield* Fiber.await(stalled))?._tag, "AgentCrashed")
      assert.strictEqual(yield* fleet.ask("h", "fine"), "fine")
    }).pipe(Effect.provide(Testing.layer({
      stallTimeout: "5 minutes",
      turnTimeout: "1 hour",
      model: ({ prompt }) => (prompt === "hang" ? Testing.hang() : prompt)
    }))))

  it.effect("a start can be made to fail: SpawnFailed with the stderr, and the name stays free", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const error = failure(yield* Effect.exit(fleet.spawn("broken")))
      assert.strictEqual(error?._tag, "SpawnFailed")
      assert.match(error?.message ?? "", /no credentials/)
      assert.deepStrictEqual(yield* fleet.list(), [])
      yield* fleet.spawn("fine")
      assert.strictEqual((yield* fleet.list()).length, 1)
    }).pipe(Effect.provide(Testing.layer({
      failStart: ({ agent }) => (agent === "broken" ? "fatal: no credentials" : undefined)
    }))))

  it.effect("a run with a JSON schema gets structured output; bounds apply", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const run = yield* fleet.run({ prompt: "list", jsonSchema: { type: "object" } })
      assert.deepStrictEqual(run.structuredOutput, { items: [1, 2] })
      const loop = failure(yield* Effect.exit(fleet.run({ prompt: "loop", maxTurns: 3 })))
      assert.strictEqual(loop?._tag, "MaxTurnsReached")
      const missing = failure(yield* Effect.exit(fleet.run({ prompt: "text", jsonSchema: { type: "object" } })))
      assert.strictEqual(missing?._tag, "StructuredOutputMissing")
    }).pipe(Effect.provide(Testing.layer({
      model: function loop({ prompt }): Testing.Reply {
        if (prompt === "list") return Testing.structured({ items: [1, 2] })
        if (prompt === "loop") return Testing.toolUse("Read", {}, () => loop({ prompt } as Testing.ModelInput))
        return "just text"
      }
    }))))

  it.effect("1,000 agents spawn and answer, under TestClock, with no process", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const names = Array.from({ length: 1000 }, (_, i) => `agent-${i}`)
      yield* Effect.forEach(names, (name) => fleet.spawn(name), { concurrency: "unbounded", discard: true })
      const replies = yield* Effect.forEach(names, (name) => fleet.ask(name, name), { concurrency: "unbounded" })
      assert.deepStrictEqual(replies, names.map((n) => `echo: ${n}`))
      assert.strictEqual((yield* fleet.list()).length, 1000)
    }).pipe(Effect.provide(Testing.layer())))
})
