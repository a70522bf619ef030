/**
 * A closed agent is read back from the store, over the in-memory Claude under TestClock: its info (status
 * `closed`, when and why) and its transcript, for a session, a sleeper closed by its record, a run, a name used
 * again, and across a restart of the host; every other operation on the name stays AgentNotFound, which says the
 * agent was closed, and a name never seen is plainly AgentNotFound.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import type { AgentNotFound } from "../src/Errors.js"
import { failureOf, fleetTests, host, memoryFleet, shared, withAgents } from "./support.js"

const at = (millis: number) => new Date(millis).toISOString()

const notFound = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.map(Effect.exit(effect), (exit) => failureOf(exit) as unknown as AgentNotFound)

const test = fleetTests(memoryFleet())

describe("a closed agent", () => {
  test("answers info and transcript from the store, marked closed; other calls say it was closed", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents(["alpha", "beta"])
      yield* fleet.ask("alpha", "one")
      yield* TestClock.adjust("1 minute")
      yield* Effect.exit(fleet.ask("alpha", "error 500"))
      yield* fleet.ask("alpha", "two")
      yield* TestClock.adjust("1 minute")
      yield* fleet.close("alpha")

      const info = yield* fleet.info("alpha")
      assert.deepInclude(info, {
        name: "alpha",
        status: "closed",
        closedReason: "closed by request",
        closedAt: at(120_000),
        alive: false,
        pid: null,
        current: null,
        queued: 0,
        lifecycle: "session"
      })
      assert.deepStrictEqual(info.totals, { turns: 3, failed: 1, costUsd: 0.002 })
      const transcript = yield* fleet.transcript("alpha")
      assert.deepStrictEqual(
        transcript.map((t) => [t.turnId, t.prompt, t.status, t.error?._tag ?? t.reply]),
        [["t1", "one", "succeeded", "echo: one"], ["t2", "error 500", "failed", "TurnFailed"], [
          "t3",
          "two",
          "succeeded",
          "echo: two"
        ]]
      )
      // Not among the live ones.
      assert.deepStrictEqual((yield* fleet.list()).map((a) => a.name), ["beta"])

      const calls: ReadonlyArray<Effect.Effect<unknown, unknown>> = [
        fleet.prompt("alpha", "three"),
        fleet.status("alpha"),
        fleet.close("alpha")
      ]
      for (const call of calls) {
        const error = yield* notFound(call)
        assert.strictEqual(error._tag, "AgentNotFound")
        assert.deepStrictEqual(error.closed, { reason: "closed by request", at: at(120_000) })
        assert.strictEqual(
          error.message,
          `agent "alpha" was closed at ${at(120_000)} (closed by request): only its info and transcript can still ` +
            `be read (live agents: beta)`
        )
      }
      const ghost = yield* notFound(fleet.info("ghost"))
      assert.strictEqual(ghost._tag, "AgentNotFound")
      assert.isUndefined(ghost.closed)
      assert.strictEqual(ghost.message, `no agent named "ghost" (live agents: beta)`)
      assert.strictEqual(failureOf(yield* Effect.exit(fleet.transcript("ghost")))._tag, "AgentNotFound")
    }))

  test("a name used again: the live agent answers, and once it closes too, only its own turns", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents("alpha")
      yield* fleet.ask("alpha", "first life")
      yield* fleet.close("alpha")
      yield* fleet.spawn("alpha")
      yield* fleet.ask("alpha", "second life")
      assert.strictEqual((yield* fleet.info("alpha")).status, "idle")
      assert.deepStrictEqual((yield* fleet.transcript("alpha")).map((t) => t.prompt), ["second life"])
      yield* fleet.close("alpha")
      const closed = yield* fleet.info("alpha")
      assert.deepInclude(closed, { status: "closed", closedReason: "closed by request" })
      assert.strictEqual(closed.totals.turns, 1)
      assert.deepStrictEqual(
        (yield* fleet.transcript("alpha")).map((t) => [t.turnId, t.prompt]),
        [["t2", "second life"]]
      )
    }))

  test("a sleeper closed by its record, and a finished run, read back closed", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents("sleeper")
      yield* fleet.ask("sleeper", "remember")
      yield* fleet.hibernate("sleeper")
      yield* TestClock.adjust("5 minutes")
      yield* fleet.close("sleeper")
      assert.deepInclude(yield* fleet.info("sleeper"), { status: "closed", closedAt: at(300_000) })
      assert.deepStrictEqual((yield* fleet.transcript("sleeper")).map((t) => t.reply), ["echo: remember"])

      const name = yield* fleet.runAsync({ name: "job", prompt: "do it" })
      yield* fleet.awaitRun(name)
      const run = yield* fleet.info("job")
      assert.deepInclude(run, { lifecycle: "run", status: "closed" })
      assert.deepStrictEqual((yield* fleet.transcript("job")).map((t) => t.reply), ["echo: do it"])
    }))

  it.effect("a long transcript is read as a live one is kept: its last historyLimit turns", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents("chatty")
      for (const word of ["a", "b", "c", "d"]) yield* fleet.ask("chatty", word)
      yield* fleet.close("chatty")
      assert.deepStrictEqual((yield* fleet.transcript("chatty")).map((t) => t.prompt), ["c", "d"])
      assert.strictEqual((yield* fleet.info("chatty")).totals.turns, 4)
    }).pipe(Effect.provide(memoryFleet({ historyLimit: 2 }))))

  test("one that never took a turn reads back with an empty transcript", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents("solo")
      yield* fleet.close("solo")
      assert.deepInclude(yield* fleet.info("solo"), { status: "closed", totals: { turns: 0, failed: 0, costUsd: 0 } })
      assert.deepStrictEqual(yield* fleet.transcript("solo"), [])
    }))

  it.effect("is still read after a restart of the host", () =>
    Effect.gen(function*() {
      const where = shared("flotta-closed")
      yield* host(where)((fleet) =>
        Effect.gen(function*() {
          yield* fleet.spawn("kept")
          yield* fleet.ask("kept", "before the restart")
          yield* fleet.close("kept")
        })
      )
      const after = yield* host(where)((fleet) =>
        Effect.all({ info: fleet.info("kept"), transcript: fleet.transcript("kept"), live: fleet.list() })
      )
      assert.deepInclude(after.info, { status: "closed", closedReason: "closed by request" })
      assert.deepStrictEqual(after.transcript.map((t) => t.reply), ["echo: before the restart"])
      assert.deepStrictEqual(after.live, [])
    }))
})
