/**
 * The report kinds as data: each kind's Schema round-trips what it describes, an entry decodes into the tagged union
 * on its kind, and an entry this version cannot read (a newer host's kind, data that does not fit its kind) is kept
 * and shown raw, never dropped and never fatal.
 */
import { assert, describe, it } from "@effect/vitest"
import { Arbitrary, Chunk, Effect, FastCheck, JSONSchema, Layer, Option, Schema, Stream } from "effect"
import type { ReportEntry } from "../src/AgentView.js"
import * as EngineEvents from "../src/EngineEvents.js"
import * as ReportEvent from "../src/ReportEvent.js"
import { ReportLog } from "../src/ReportLog.js"
import { Store } from "../src/Store.js"

const entry = (kind: string, data: unknown): ReportEntry => ({
  seq: 7,
  at: "2026-01-01T00:00:00.000Z",
  agent: "alpha",
  kind,
  turnId: "t1",
  data
})

/** Every value a kind's Schema describes survives encoding and decoding, and the Schema has a JSON form. */
const roundTrips = (kinds: ReadonlyArray<ReportEvent.AnyKind>) => {
  for (const k of kinds) {
    const encode = Schema.encodeSync(k.data)
    const decode = Schema.decodeUnknownSync(k.data)
    FastCheck.assert(
      FastCheck.property(jsonData(k.data), (data) => {
        assert.deepStrictEqual(decode(encode(data)), data, k.kind)
      }),
      { numRuns: 25 }
    )
    // As the store keeps it: the entry's JSON, decoded by the union of the kinds.
    const union = Schema.decodeUnknownSync(ReportEvent.union(kinds))
    FastCheck.assert(
      FastCheck.property(jsonData(k.data), (data) => {
        assert.strictEqual(union({ kind: k.kind, data }).kind, k.kind)
      }),
      { numRuns: 5 }
    )
    assert.isObject(JSONSchema.make(k.data), k.kind)
  }
}

const turnDone = { text: "done", costUsd: 0.25, durationMs: 1200, modelCalls: 2 }

/**
 * A kind's data as a poster gives it: a key `__proto__` (which fast-check generates for a Record) is not one a
 * plain object keeps when it is copied, and no poster writes one.
 */
const jsonData = <A>(schema: Schema.Schema<A>) =>
  Arbitrary.make(schema).filter((data) => !(JSON.stringify(data) ?? "").includes("\"__proto__\""))

describe("ReportEvent", () => {
  it("each engine kind round-trips through its Schema, and their names are unique", () => {
    roundTrips(EngineEvents.engine)
    const names = EngineEvents.engine.map((k) => k.kind)
    assert.strictEqual(new Set(names).size, names.length)
    assert.include(names, "turn_started")
    assert.include(names, "host_lost")
  })

  it("decoder: a known kind is typed and narrows on its kind; its data is what the Schema says", () => {
    const decoded = EngineEvents.decodeEngine(entry("result", { ...turnDone, extra: 1 }))
    assert.strictEqual(decoded._tag, "Known")
    if (decoded._tag === "Known" && decoded.kind === "result") {
      assert.deepStrictEqual(decoded.data, turnDone) // a field the Schema does not name is not read
      assert.strictEqual(decoded.turnId, "t1")
      assert.strictEqual(decoded.seq, 7)
    }
  })

  it("decoder: a newer host's kind is kept raw, with everything it said", () => {
    const raw = entry("teleported", { to: "mars", nested: [1, { a: null }] })
    const decoded = EngineEvents.decodeEngine(raw)
    assert.deepStrictEqual(decoded, { ...raw, _tag: "Raw", why: "unknown kind" })
  })

  it("decoder: a known kind whose data does not fit is kept raw as malformed, never a failure", () => {
    for (const data of [null, "text", { pid: "one" }, { error: "no tag" }, []]) {
      const decoded = EngineEvents.decodeEngine(entry("error", data))
      assert.strictEqual(decoded._tag, "Raw")
      if (decoded._tag === "Raw") {
        assert.strictEqual(decoded.why, "malformed")
        assert.deepStrictEqual(decoded.data, data)
      }
    }
  })

  it("decodeAs: one kind, or none for another kind and for data that does not fit", () => {
    const asResult = ReportEvent.decodeAs(EngineEvents.result)
    assert.deepStrictEqual(Option.map(asResult(entry("result", turnDone)), (e) => e.data), Option.some(turnDone))
    assert.isTrue(Option.isNone(asResult(entry("error", turnDone))))
    assert.isTrue(Option.isNone(asResult(entry("result", { text: 1 }))))
  })

  it("line: a kind's own summary, cut to 200 characters; anything else as its data's JSON", () => {
    const line = ReportEvent.line(EngineEvents.engine)
    assert.strictEqual(line(entry("result", turnDone)), "done ($0.2500)")
    assert.strictEqual(line(entry("error", { error: { _tag: "TurnTimeout", message: "slow" } })), "TurnTimeout: slow")
    assert.strictEqual(line(entry("closed", {})), "")
    assert.strictEqual(line(entry("teleported", { to: "mars" })), `{"to":"mars"}`)
    assert.strictEqual(line(entry("result", { text: 1 })), `{"text":1}`)
    assert.strictEqual(line(entry("turn_started", { prompt: "p".repeat(500) })), "p".repeat(200) + "…")
  })

  it("union: one member per kind, then any other entry kept raw", () => {
    const decode = Schema.decodeUnknownSync(ReportEvent.union([EngineEvents.closed, EngineEvents.turnStarted]))
    assert.deepStrictEqual(decode({ kind: "closed", data: { reason: "done" } }), {
      kind: "closed",
      data: { reason: "done" }
    })
    assert.deepStrictEqual(decode({ kind: "later", data: [1] }), { kind: "later", data: [1] })
    assert.deepStrictEqual(decode({ kind: "turn_started", data: 3 }), { kind: "turn_started", data: 3 })
  })

  it.scoped("the log keeps a newer host's entry as it came, reads it back and hands it to subscribers", () =>
    Effect.gen(function*() {
      const log = yield* ReportLog
      const feed = yield* log.subscribe({})
      const taken = yield* feed.pipe(Stream.take(2), Stream.runCollect, Effect.fork)
      log.unsafeReplay([{ at: "2026-01-01T00:00:00.000Z", agent: "alpha", kind: "teleported", data: { to: "mars" } }])
      yield* log.post("alpha", "closed", { reason: "done" })
      const page = yield* log.reports({})
      assert.deepStrictEqual(page.entries.map((e) => [e.kind, e.data]), [
        ["teleported", { to: "mars" }],
        ["closed", { reason: "done" }]
      ])
      const decoded = page.entries.map(EngineEvents.decodeEngine)
      assert.deepStrictEqual(decoded.map((e) => e._tag), ["Raw", "Known"])
      const live = Chunk.toArray(yield* taken.await.pipe(Effect.flatten))
      assert.deepStrictEqual(live.map((n) => (n._tag === "Entry" ? n.entry.kind : "missed")), ["teleported", "closed"])
    }).pipe(Effect.provide(ReportLog.Default.pipe(Layer.provide(Store.memory)))))
})
