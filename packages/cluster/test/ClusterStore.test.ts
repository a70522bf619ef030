/**
 * The cluster store on an SQLite file: names are unique, a placement changes hands only at the epoch it was read
 * (so of two movers exactly one wins), the report log is one cursor over every host's entries, and a mirrored
 * conversation reads back only up to its first gap.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { ClusterStore } from "../src/ClusterStore.js"

const storeIn = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "flotta-cluster-store-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
).pipe(
  Effect.flatMap((dir) => Layer.build(ClusterStore.layer({ sqlite: path.join(dir, "cluster.db") }))),
  Effect.map((context) => Context.get(context, ClusterStore))
)

const entry = (agent: string, kind: string) => ({ seq: 0, at: new Date(0).toISOString(), agent, kind, data: { kind } })

describe("ClusterStore", () => {
  it.scoped("keeps names unique and hands a placement over only at the epoch read", () =>
    Effect.gen(function*() {
      const store = yield* storeIn
      assert.isTrue(yield* store.place("scout", "node-a", "/repo", { cwd: "/repo" }))
      assert.isFalse(yield* store.place("scout", "node-b", "/repo", {}))
      assert.isTrue(yield* store.claim("scout", "node-a", 1, "inc-a", "session-1", "/repo"))
      // The claim moved the epoch on: a second claim at the old one loses.
      assert.isFalse(yield* store.claim("scout", "node-a", 1, "inc-a2", "session-1", "/repo"))
      const placed = yield* store.placement("scout")
      assert.strictEqual(placed._tag, "Some")
      const { epoch } = placed._tag === "Some" ? placed.value : assert.fail("placed")
      // Two movers read the same epoch: one wins, the other changes nothing.
      assert.isTrue(yield* store.move("scout", "node-a", "node-b", epoch))
      assert.isFalse(yield* store.move("scout", "node-a", "node-c", epoch))
      const moved = yield* store.placement("scout")
      assert.deepInclude(moved._tag === "Some" ? moved.value : {}, {
        host: "node-b",
        incarnation: null,
        movedFrom: "node-a",
        sessionId: "session-1"
      })
      assert.isFalse(yield* store.remove("scout", epoch))
      assert.isTrue(yield* store.remove("scout", epoch + 1))
      assert.isTrue(yield* store.place("scout", "node-c", "/repo", {}))
    }))

  it.scoped("reads every host's entries by one cursor, each naming its host", () =>
    Effect.gen(function*() {
      const store = yield* storeIn
      yield* store.appendReports("node-a", [entry("a1", "spawned"), entry("a1", "result")])
      yield* store.appendReports("node-b", [entry("b1", "spawned")])
      const all = yield* store.reports({})
      assert.deepStrictEqual(all.entries.map((e) => [e.seq, e.host, e.agent, e.kind]), [
        [1, "node-a", "a1", "spawned"],
        [2, "node-a", "a1", "result"],
        [3, "node-b", "b1", "spawned"]
      ])
      assert.strictEqual(all.next, 3)
      const after = yield* store.reports({ since: 1, kinds: ["spawned"] })
      assert.deepStrictEqual(after.entries.map((e) => e.agent), ["b1"])
      assert.strictEqual(after.next, 3)
      const tail = yield* store.reports({ last: 1 })
      assert.deepStrictEqual(tail.entries.map((e) => e.seq), [3])
    }))

  it.scoped("gives a mirrored conversation back in order, up to its first gap", () =>
    Effect.gen(function*() {
      const store = yield* storeIn
      yield* store.appendSession("scout", "s1", 0, "one\n")
      yield* store.appendSession("scout", "s1", 4, "two\n")
      yield* store.appendSession("scout", "s1", 100, "after a gap\n")
      assert.deepStrictEqual(yield* store.session("scout", "s1"), { text: "one\ntwo\n", bytes: 8 })
      assert.deepStrictEqual(yield* store.session("scout", "other"), { text: "", bytes: 0 })
    }))

  it.scoped("settles a value once: the first node's", () =>
    Effect.gen(function*() {
      const store = yield* storeIn
      assert.strictEqual(yield* store.settle("shardsPerGroup", "16"), "16")
      assert.strictEqual(yield* store.settle("shardsPerGroup", "32"), "16")
    }))
})
