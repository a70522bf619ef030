/**
 * Sessions that live for weeks, over the in-memory Claude under TestClock: how full each agent's context is, a
 * compaction asked for (`compact`), queued by `autoCompactAt`, or done by the CLI itself near its window, each
 * reported with its tokens and marked in the transcript; `clear` (a new conversation under the same name); and a
 * CLI that could not write its session file, which the agent shows.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { Flotta } from "../src/Flotta.js"
import * as Testing from "../src/Testing.js"

/** Answers with what its conversation holds. */
const memory: Testing.Model = ({ history, prompt }) => `${prompt} | knows: ${history.join(", ")}`

const fleet = (options: Testing.Options = {}) => Testing.layer({ model: memory, ...options })

const LONG = "a rather long fact that takes its share of the context window ".repeat(4)

describe("context and compaction", () => {
  it.effect("every turn says how full the context is; compact shrinks it, reported with its tokens", () =>
    Effect.gen(function*() {
      const f = yield* Flotta
      yield* f.spawn("long", { model: "opus" })
      assert.isUndefined((yield* f.info("long")).context, "no turn has said yet")
      for (const n of [1, 2, 3]) yield* f.ask("long", `PELICAN ${n} ${LONG}`)
      const before = (yield* f.status("long")).context!
      assert.strictEqual(before.window, 200_000)
      assert.isAbove(before.tokens, 200)
      assert.strictEqual(before.percent, Math.round((before.tokens / 200_000) * 1000) / 10)
      assert.deepStrictEqual((yield* f.list())[0]!.context, before)

      const turnId = yield* f.compact("long", "keep the pelicans")
      const result = yield* f.wait("long", turnId)
      const compaction = result.compaction!
      assert.strictEqual(compaction.trigger, "manual")
      assert.isAbove(compaction.preTokens, compaction.postTokens!)
      const after = (yield* f.info("long")).context!
      assert.isBelow(after.tokens, before.tokens, "context use drops")
      assert.strictEqual(after.tokens, compaction.postTokens)
      const [entry] = (yield* f.reports({ agent: "long", kinds: ["compacted"] })).entries
      assert.deepStrictEqual(entry!.data, compaction)
      assert.strictEqual(entry!.turnId, turnId)
      const turns = yield* f.transcript("long")
      assert.strictEqual(turns.at(-1)!.prompt, "/compact keep the pelicans")
      assert.deepStrictEqual(turns.at(-1)!.marks, [{ _tag: "Compacted", compaction }])
      assert.match(yield* f.ask("long", "what"), /^what \| knows: Summary: PELICAN 1 .*PELICAN 3/, "the facts survive")
    }).pipe(Effect.provide(fleet())))

  it.effect("autoCompactAt: a turn that leaves the context fuller than that queues a compaction before the next", () =>
    Effect.gen(function*() {
      const f = yield* Flotta
      yield* f.spawn("busy", { autoCompactAt: 40 })
      yield* f.ask("busy", "small")
      assert.deepStrictEqual((yield* f.reports({ agent: "busy", kinds: ["compacted"] })).entries, [])
      const big = yield* f.prompt("busy", LONG)
      const next = yield* f.prompt("busy", "after")
      yield* f.wait("busy", next)
      // The compaction (t4) ran between the full turn and the one queued behind it.
      const started = (yield* f.reports({ agent: "busy", kinds: ["turn_started"] })).entries
      assert.deepStrictEqual(started.slice(0, 4).map((e) => e.turnId), ["t1", big, "t4", next])
      assert.strictEqual((yield* f.transcript("busy")).find((t) => t.turnId === "t4")?.prompt, "/compact")
      const [queued] = (yield* f.reports({ agent: "busy", kinds: ["compaction_queued"] })).entries
      assert.strictEqual((queued!.data as { reason: string }).reason, "its context is 47.6% full (autoCompactAt 40%)")
      const [compacted] = (yield* f.reports({ agent: "busy", kinds: ["compacted"] })).entries
      assert.strictEqual(compacted!.turnId, "t4")
    }).pipe(Effect.provide(fleet({ contextWindow: 250 }))))

  it.effect("a fleet-wide autoCompactAt applies to every session; an agent's own wins", () =>
    Effect.gen(function*() {
      const f = yield* Flotta
      yield* f.spawn("follows")
      yield* f.spawn("own", { autoCompactAt: 90 })
      for (const name of ["follows", "own"]) {
        yield* f.ask(name, LONG)
        yield* f.ask(name, "after")
      }
      const queued = (yield* f.reports({ kinds: ["compaction_queued"] })).entries
      assert.deepStrictEqual(queued.map((e) => e.agent), ["follows"])
      assert.match((queued[0]!.data as { reason: string }).reason, /\(autoCompactAt 40%\)$/)
      const compacted = (yield* f.reports({ kinds: ["compacted"] })).entries
      assert.deepStrictEqual(compacted.map((e) => e.agent), ["follows"])
    }).pipe(Effect.provide(fleet({ contextWindow: 250, autoCompactAt: 40 }))))

  it.effect("the CLI's own compaction near its window is recorded too, on the turn it happened in", () =>
    Effect.gen(function*() {
      const f = yield* Flotta
      yield* f.spawn("full")
      for (let i = 0; i < 4; i++) yield* f.ask("full", `${i} ${LONG}`)
      const [auto] = (yield* f.reports({ agent: "full", kinds: ["compacted"] })).entries
      assert.strictEqual((auto!.data as { trigger: string }).trigger, "auto")
      const turn = (yield* f.transcript("full")).find((t) => t.turnId === auto!.turnId)!
      assert.strictEqual(turn.marks?.[0]?._tag, "Compacted")
      assert.isNotNull(turn.reply, "the turn itself went on")
    }).pipe(Effect.provide(fleet({ contextWindow: 300, autoCompactAt: 100 }))))

  it.effect("clear starts a new conversation under the same name; the transcript goes on, marked", () =>
    Effect.gen(function*() {
      const f = yield* Flotta
      yield* f.spawn("fresh")
      yield* f.ask("fresh", "PELICAN")
      const old = (yield* f.info("fresh")).sessionId
      const cleared = yield* f.clear("fresh")
      yield* f.wait("fresh", cleared)
      const info = yield* f.info("fresh")
      assert.notStrictEqual(info.sessionId, old)
      assert.strictEqual(info.context?.tokens, 0)
      assert.strictEqual(yield* f.ask("fresh", "what"), "what | knows: ", "it remembers nothing")
      const turns = yield* f.transcript("fresh")
      assert.deepStrictEqual(turns.map((t) => t.turnId), ["t1", "t2", "t3"])
      assert.deepStrictEqual(turns[1]!.marks, [{ _tag: "Cleared", previousSessionId: old, sessionId: info.sessionId }])
      const [entry] = (yield* f.reports({ agent: "fresh", kinds: ["cleared"] })).entries
      assert.deepStrictEqual(entry!.data, { previousSessionId: old, sessionId: info.sessionId })
      // A fork at a turn from before the clear has that old conversation.
      yield* f.fork("fresh", "before", { at: "t1" })
      assert.strictEqual(yield* f.ask("before", "then"), "then | knows: PELICAN")
    }).pipe(Effect.provide(fleet())))

  it.effect("a CLI that could not write its session file is reported, and the agent shows it", () =>
    Effect.gen(function*() {
      const f = yield* Flotta
      yield* f.spawn("unlucky")
      yield* f.spawn("fine")
      yield* f.ask("unlucky", "hello")
      yield* f.hibernate("unlucky")
      yield* f.hibernate("fine")
      const lost = (yield* f.info("unlucky")).sessionWritesLost!
      assert.deepInclude(lost, { errorCode: "ENOSPC", lost: ["transcript"] })
      assert.deepStrictEqual(lost.sessionIds, [(yield* f.info("unlucky")).sessionId])
      assert.isUndefined((yield* f.info("fine")).sessionWritesLost)
      const entries = (yield* f.reports({ kinds: ["session_writes_lost"] })).entries
      assert.deepStrictEqual(entries.map((e) => e.agent), ["unlucky"])
    }).pipe(Effect.provide(fleet({ diskFull: ({ agent }) => agent === "unlucky" }))))
})
