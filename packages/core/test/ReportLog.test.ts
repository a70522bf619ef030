import { assert, describe, it } from "@effect/vitest"
import { Chunk, Effect, Fiber, Layer, Stream, TestClock } from "effect"
import { ReportLog } from "../src/ReportLog.js"
import { Store } from "../src/Store.js"

const LogLive = ReportLog.Default.pipe(Layer.provide(Store.memory))

const spawned = {
  pid: 1,
  sessionId: "s-1",
  cwd: "/w",
  model: null,
  permission: "full",
  role: "member",
  lifecycle: "session"
} as const
const turnDone = { text: "ok", costUsd: 0.01, durationMs: 5, modelCalls: 1 }
const failed = { error: { _tag: "TurnTimeout", message: "too slow" } }

describe("ReportLog", () => {
  it.effect("entries get strictly increasing seq and the Clock's time", () =>
    Effect.gen(function*() {
      const log = yield* ReportLog
      yield* TestClock.setTime(Date.UTC(2026, 10, 29, 12, 0, 0))
      const a = yield* log.post("alpha", "spawned", spawned)
      const b = yield* log.post("alpha", "turn_started", { prompt: "x" }, "t1")
      assert.strictEqual(a.seq, 1)
      assert.strictEqual(b.seq, 2)
      assert.strictEqual(a.at, "2026-11-29T12:00:00.000Z")
      assert.strictEqual(b.turnId, "t1")
      assert.notProperty(a, "turnId")
    }).pipe(Effect.provide(LogLive)))

  it.effect("cursor reads with agent and kind filters, and a limit", () =>
    Effect.gen(function*() {
      const log = yield* ReportLog
      for (let i = 0; i < 10; i++) {
        yield* (i < 5
          ? log.post(i % 2 === 0 ? "even" : "odd", "result", turnDone)
          : log.post(i % 2 === 0 ? "even" : "odd", "error", failed))
      }
      const all = yield* log.reports({})
      assert.strictEqual(all.entries.length, 10)
      assert.strictEqual(all.next, 10)
      const page1 = yield* log.reports({ limit: 3 })
      assert.deepStrictEqual(page1.entries.map((e) => e.seq), [1, 2, 3])
      const page2 = yield* log.reports({ since: page1.next, limit: 3 })
      assert.deepStrictEqual(page2.entries.map((e) => e.seq), [4, 5, 6])
      const odd = yield* log.reports({ agent: "odd", kinds: ["error"] })
      assert.deepStrictEqual(odd.entries.map((e) => e.seq), [6, 8, 10])
      const empty = yield* log.reports({ since: 10 })
      assert.deepStrictEqual(empty, { entries: [], next: 10 })
      // A filtered read that stops at its limit resumes right after its last match.
      const first = yield* log.reports({ agent: "even", limit: 2 })
      assert.deepStrictEqual(first.entries.map((e) => e.seq), [1, 3])
      const rest = yield* log.reports({ agent: "even", since: first.next })
      assert.deepStrictEqual(rest.entries.map((e) => e.seq), [5, 7, 9])
    }).pipe(Effect.provide(LogLive)))

  it.effect("a tail read: the last n matching entries, oldest first, and the cursor after the newest", () =>
    Effect.gen(function*() {
      const log = yield* ReportLog
      assert.deepStrictEqual(yield* log.reports({ last: 5 }), { entries: [], next: 0 })
      for (let i = 0; i < 10; i++) {
        yield* (i < 5
          ? log.post(i % 2 === 0 ? "even" : "odd", "result", turnDone)
          : log.post(i % 2 === 0 ? "even" : "odd", "error", failed))
      }
      const tail = yield* log.reports({ last: 3 })
      assert.deepStrictEqual(tail.entries.map((e) => e.seq), [8, 9, 10])
      assert.strictEqual(tail.next, 10)
      // `limit` does not cut a tail read; fewer entries than asked is all of them.
      assert.deepStrictEqual((yield* log.reports({ last: 4, limit: 1 })).entries.map((e) => e.seq), [7, 8, 9, 10])
      assert.strictEqual((yield* log.reports({ last: 50 })).entries.length, 10)
      const even = yield* log.reports({ agent: "even", last: 2 })
      assert.deepStrictEqual(even.entries.map((e) => e.seq), [7, 9])
      assert.strictEqual(even.next, 10)
      const results = yield* log.reports({ kinds: ["result"], last: 2 })
      assert.deepStrictEqual(results.entries.map((e) => e.seq), [4, 5])
      assert.strictEqual(results.next, 10)
      // With `since`, only entries after it.
      assert.deepStrictEqual((yield* log.reports({ since: 8, last: 5 })).entries.map((e) => e.seq), [9, 10])
      assert.deepStrictEqual(yield* log.reports({ agent: "nobody", last: 5 }), { entries: [], next: 10 })
    }).pipe(Effect.provide(LogLive)))

  it.scoped("a live subscriber gets entries in order, filtered", () =>
    Effect.gen(function*() {
      const log = yield* ReportLog
      const feed = yield* log.subscribe({ agent: "a" })
      const fiber = yield* feed.pipe(Stream.take(3), Stream.runCollect, Effect.fork)
      yield* log.post("a", "spawned", spawned)
      yield* log.post("b", "spawned", spawned)
      yield* log.post("a", "result", turnDone)
      yield* log.post("a", "closed", {})
      const got = Chunk.toArray(yield* Fiber.join(fiber))
      assert.deepStrictEqual(got.map((n) => (n._tag === "Entry" ? n.entry.kind : "missed")), [
        "spawned",
        "result",
        "closed"
      ])
    }).pipe(Effect.provide(LogLive)))

  it.scoped("a slow subscriber never blocks posting and is told how many entries it missed", () =>
    Effect.gen(function*() {
      const log = yield* ReportLog
      // Subscribe, then post 10 entries while nobody reads: 4 are buffered, 6 are missed.
      const collected = yield* Effect.gen(function*() {
        const pull = yield* Stream.toPull(yield* log.subscribe({ capacity: 4 }))
        for (let i = 0; i < 10; i++) yield* log.post("x", "turn_started", { prompt: String(i) })
        const first = yield* pull
        yield* log.post("x", "turn_started", { prompt: "10" })
        const second = yield* pull
        return [...Chunk.toArray(first), ...Chunk.toArray(second)]
      }).pipe(Effect.scoped)
      assert.deepStrictEqual(collected.slice(0, 5), [
        ...[1, 2, 3, 4].map((seq) => ({ _tag: "Entry", entry: collectedEntry(collected, seq) })),
        { _tag: "Missed", count: 6, after: 4 }
      ])
      const last = collected[5]
      assert.strictEqual(last?._tag === "Entry" ? last.entry.seq : -1, 11)
      // The missed entries are still in the log, by cursor.
      const gap = yield* log.reports({ since: 4, limit: 6 })
      assert.deepStrictEqual(gap.entries.map((e) => e.seq), [5, 6, 7, 8, 9, 10])
    }).pipe(Effect.provide(LogLive)))
})

const collectedEntry = (notices: ReadonlyArray<{ readonly _tag: string }>, seq: number) => {
  for (const notice of notices) {
    const n = notice as { readonly _tag: string; readonly entry?: { readonly seq: number } }
    if (n._tag === "Entry" && n.entry?.seq === seq) return n.entry
  }
  throw new Error(`no entry ${seq}`)
}
