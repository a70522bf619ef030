/**
 * Forking a session over the in-memory Claude, under TestClock: what the fork remembers (the source's
 * conversation up to a turn), what it does not, what it takes from the source, what it leaves alone, its record,
 * its failures, and forks across a restart of the host.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, TestClock } from "effect"
import { Flotta } from "../src/Flotta.js"
import * as Testing from "../src/Testing.js"
import { eventually, failureOf, host, memoryFleet, shared } from "./support.js"

/** Answers with the prompt and every earlier prompt of its conversation: what an agent remembers. */
const memory: Testing.Model = ({ history, prompt }) =>
  prompt.startsWith("slow") ? Testing.delay("1 minute", "slow done") : `${prompt} | knows: ${history.join(", ")}`

const fleet = (options: Testing.Options = {}) => memoryFleet({ model: memory, ...options })

describe("fork", () => {
  it.effect("the fork remembers the source's conversation, and neither learns what the other is told after", () =>
    Effect.gen(function*() {
      const f = yield* Flotta
      yield* f.spawn("scout", { model: "opus", appendSystemPrompt: "be brief" })
      yield* f.ask("scout", "PELICAN")
      yield* f.ask("scout", "OTTER")
      const info = yield* f.fork("scout", "twin")
      assert.strictEqual(info.name, "twin")
      assert.strictEqual(info.lifecycle, "session")
      assert.strictEqual(info.model, "opus", "its options come from the source")
      assert.notStrictEqual(info.sessionId, (yield* f.info("scout")).sessionId, "a session id of its own")
      assert.deepStrictEqual(info.forkedFrom, {
        agent: "scout",
        turnId: "t2",
        sessionId: (yield* f.info("scout")).sessionId,
        messageId: (yield* f.transcript("scout"))[1]!.messageId!
      })
      assert.strictEqual(yield* f.ask("twin", "HERON"), "HERON | knows: PELICAN, OTTER")
      assert.strictEqual(yield* f.ask("scout", "WREN"), "WREN | knows: PELICAN, OTTER", "the source learns nothing")
      assert.strictEqual(yield* f.ask("twin", "again"), "again | knows: PELICAN, OTTER, HERON")
    }).pipe(Effect.provide(fleet())))

  it.effect("a fork at a turn has the conversation up to that turn only", () =>
    Effect.gen(function*() {
      const f = yield* Flotta
      yield* f.spawn("scout")
      yield* f.ask("scout", "PELICAN")
      yield* f.ask("scout", "OTTER")
      yield* f.fork("scout", "early", { at: "t1" })
      assert.strictEqual(yield* f.ask("early", "what"), "what | knows: PELICAN")
      assert.strictEqual((yield* f.info("early")).forkedFrom?.turnId, "t1")
    }).pipe(Effect.provide(fleet())))

  it.effect("its transcript opens with where it came from, and the report log says forked", () =>
    Effect.gen(function*() {
      const f = yield* Flotta
      yield* f.spawn("scout")
      yield* f.ask("scout", "one")
      yield* f.fork("scout", "twin")
      yield* f.ask("twin", "two")
      yield* f.ask("twin", "three")
      const turns = yield* f.transcript("twin")
      assert.deepStrictEqual(turns.map((t) => t.turnId), ["t1", "t2"], "its own turns, numbered from one")
      assert.deepStrictEqual(
        turns[0]!.marks?.map((m) => (m._tag === "Forked" ? [m._tag, m.from.agent, m.from.turnId] : [m._tag])),
        [["Forked", "scout", "t1"]]
      )
      assert.strictEqual(turns[1]!.marks, undefined)
      const forked = (yield* f.reports({ agent: "twin", kinds: ["forked"] })).entries
      assert.deepStrictEqual(forked.map((e) => e.data), [
        { from: "scout", at: "t1", sessionId: (yield* f.info("scout")).sessionId }
      ])
    }).pipe(Effect.provide(fleet())))

  it.effect("given options win over the source's; the permission in force is the source's own", () =>
    Effect.gen(function*() {
      const f = yield* Flotta
      yield* f.spawn("scout", { model: "opus", permission: { allow: ["Read", "Edit"] } })
      yield* f.ask("scout", "hi")
      const twin = yield* f.fork("scout", "twin", { model: "haiku" })
      assert.strictEqual(twin.model, "haiku")
      assert.deepStrictEqual(twin.permission, { allow: ["Read", "Edit"] })
      const strict = yield* f.fork("scout", "strict", { permission: "read_only" })
      assert.strictEqual(strict.permission, "read_only")
      const grandchild = yield* f.fork("twin", "grandchild")
      assert.strictEqual(grandchild.forkedFrom?.agent, "twin")
      assert.strictEqual(yield* f.ask("grandchild", "who"), "who | knows: hi", "a fork of a fork: not yet told more")
    }).pipe(Effect.provide(fleet())))

  it.effect("a busy source forks at its last finished turn; its turn in flight and its queue go on untouched", () =>
    Effect.gen(function*() {
      const f = yield* Flotta
      yield* f.spawn("scout")
      yield* f.ask("scout", "PELICAN")
      const running = yield* f.prompt("scout", "slow one")
      const queued = yield* f.prompt("scout", "after")
      const info = yield* f.fork("scout", "twin")
      assert.strictEqual(info.forkedFrom?.turnId, "t1")
      assert.strictEqual(yield* f.ask("twin", "what"), "what | knows: PELICAN")
      const status = yield* f.status("scout")
      assert.deepStrictEqual([status.current, status.queued], [running, 1])
      const waited = yield* Effect.fork(f.wait("scout", queued))
      yield* TestClock.adjust("1 minute")
      assert.strictEqual((yield* Fiber.join(waited)).text, "after | knows: PELICAN, slow one")
    }).pipe(Effect.provide(fleet())))

  it.effect("its failures are typed: an unknown source or turn, a turn not finished or failed, a taken name", () =>
    Effect.gen(function*() {
      const f = yield* Flotta
      yield* f.spawn("scout")
      assert.strictEqual(failureOf(yield* Effect.exit(f.fork("scout", "twin")))._tag, "CannotFork", "no turn yet")
      yield* f.ask("scout", "one")
      yield* f.spawn("taken")
      const cases = [
        [f.fork("nobody", "twin"), "AgentNotFound"],
        [f.fork("scout", "twin", { at: "t9" }), "NoResult"],
        [f.fork("scout", "taken"), "AgentAlreadyExists"],
        [f.fork("scout", "Bad Name"), "InvalidName"]
      ] as const
      for (const [effect, tag] of cases) assert.strictEqual(failureOf(yield* Effect.exit(effect))._tag, tag)
      const slow = yield* f.prompt("scout", "slow")
      const pending = failureOf(yield* Effect.exit(f.fork("scout", "twin", { at: slow })))
      assert.strictEqual(pending._tag, "TurnPending")
      yield* TestClock.adjust("1 minute")
      const failing = yield* f.prompt("scout", "slow again", { timeout: "1 second" })
      yield* TestClock.adjust("1 second")
      assert.strictEqual(failureOf(yield* Effect.exit(f.wait("scout", failing)))._tag, "TurnTimeout")
      const failed = failureOf(yield* Effect.exit(f.fork("scout", "twin", { at: failing })))
      assert.strictEqual(failed._tag, "CannotFork")
      assert.include(failed.message, "TurnTimeout")
      assert.deepStrictEqual((yield* f.list()).map((a) => a.name).sort(), ["scout", "taken"], "nothing was started")
    }).pipe(Effect.provide(fleet())))

  it.effect("a run cannot be forked", () =>
    Effect.gen(function*() {
      const f = yield* Flotta
      const run = yield* f.runAsync({ name: "job", prompt: "slow" })
      yield* eventually(f.list(), (agents) => agents.some((a) => a.name === run))
      const error = failureOf(yield* Effect.exit(f.fork(run, "twin")))
      assert.strictEqual(error._tag, "CannotFork")
      assert.include(error.message, "run")
    }).pipe(Effect.provide(fleet())))

  it.effect("a conversation an agent was given (resume) forks whole before its first turn", () =>
    Effect.gen(function*() {
      const f = yield* Flotta
      const result = yield* f.run({ prompt: "PELICAN" })
      yield* f.spawn("heir", { resume: result.sessionId })
      const twin = yield* f.fork("heir", "twin")
      assert.strictEqual(twin.forkedFrom?.turnId, null)
      assert.strictEqual(yield* f.ask("twin", "what"), "what | knows: PELICAN")
    }).pipe(Effect.provide(fleet())))
})

describe("fork across a restart of the host", () => {
  it.effect("a restored agent forks, and a fork that had no turn yet comes back still a fork", () =>
    Effect.gen(function*() {
      const where = shared("flotta-fork")
      yield* host(where, { model: memory })((f) =>
        Effect.gen(function*() {
          yield* f.spawn("scout")
          yield* f.ask("scout", "PELICAN")
          yield* f.fork("scout", "unborn")
        })
      )
      yield* host(where, { model: memory })((f) =>
        Effect.gen(function*() {
          assert.deepStrictEqual(f.restored.restored.map((r) => r.name).sort(), ["scout", "unborn"])
          assert.strictEqual((yield* f.info("unborn")).forkedFrom?.agent, "scout")
          yield* f.fork("scout", "late")
          assert.strictEqual(yield* f.ask("late", "what"), "what | knows: PELICAN")
          assert.strictEqual(yield* f.ask("unborn", "what"), "what | knows: PELICAN")
          assert.strictEqual((yield* f.transcript("unborn"))[0]!.marks?.[0]?._tag, "Forked")
        })
      )
      yield* host(where, { model: memory })((f) =>
        Effect.gen(function*() {
          assert.strictEqual(yield* f.ask("unborn", "again"), "again | knows: PELICAN, what", "now it resumes")
          yield* f.ask("late", "then")
          const late = yield* f.fork("late", "later", { at: "t1" })
          assert.strictEqual(late.forkedFrom?.agent, "late")
          assert.strictEqual(yield* f.ask("later", "x"), "x | knows: PELICAN, what")
        })
      )
    }))
})
