/**
 * What every store must do, run against each kind (memory, SQLite here; Postgres in the integration ring):
 * the report log's cursor, reads that see what is still buffered, the keyed rows, and retention.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Option, Scope, TestClock } from "effect"
import type { AgentRow, StoreShape, TurnRow } from "../src/Store.js"
import { Store } from "../src/Store.js"

/** How a suite gets a store: a fresh one, and `reopen` the same one again (a restart, for durable kinds). */
export interface StoreFixture {
  readonly kind: string
  readonly durable: boolean
  /** A layer for a new, empty store, and one that opens the same store again. */
  readonly make: () => Effect.Effect<
    { readonly fresh: Layer.Layer<Store, unknown>; readonly again: Layer.Layer<Store, unknown> }
  >
}

const open = (layer: Layer.Layer<Store, unknown>) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(layer, scope).pipe(Effect.orDie)
    return { store: Context.get(context, Store), close: Scope.close(scope, Exit.void) }
  })

export const agentRow = (name: string, fields: Partial<AgentRow> = {}): AgentRow => ({
  name,
  lifecycle: "session",
  options: { cwd: "/tmp", permission: "read_only", timeoutMs: 1000 },
  sessionId: `session-${name}`,
  resumable: true,
  status: "idle",
  restarts: 0,
  startedAt: new Date(0).toISOString(),
  closedReason: null,
  notRestorable: null,
  process: null,
  ...fields
})

export const turnRow = (agent: string, n: number, status: TurnRow["record"]["status"], finishedAt: string | null) => ({
  agent,
  n,
  timeoutMs: 1000,
  record: {
    turnId: `t${n}`,
    prompt: `prompt ${n}`,
    status,
    reply: status === "succeeded" ? `reply ${n}` : null,
    error: null,
    toolCalls: [],
    permissions: [],
    costUsd: 0.01,
    durationMs: 5,
    modelCalls: 1,
    enqueuedAt: new Date(0).toISOString(),
    startedAt: null,
    finishedAt
  }
} satisfies TurnRow)

const post = (store: StoreShape, agent: string, kind: string, data: unknown = {}, at = new Date(0).toISOString()) =>
  store.appendReport({ at, agent, kind, data, turnId: undefined })

export const storeSuite = (fixture: StoreFixture) =>
  describe(`Store: ${fixture.kind}`, () => {
    it.effect("numbers report entries in order and reads them by cursor, filter and tail, buffered or not", () =>
      Effect.gen(function*() {
        const { fresh } = yield* fixture.make()
        const { close, store } = yield* open(fresh)
        for (let i = 1; i <= 30; i++) post(store, i % 2 === 0 ? "even" : "odd", i % 3 === 0 ? "three" : "other", { i })
        // Half committed, half still in the buffer: reads see both, in order.
        yield* store.flush()
        const entry = store.appendReport({
          at: new Date(0).toISOString(),
          agent: "odd",
          kind: "late",
          data: { i: 31 },
          turnId: "t9"
        })
        assert.strictEqual(entry.seq, 31)
        const all = yield* store.readReports({ limit: 100 })
        assert.deepStrictEqual(all.entries.map((e) => e.seq), Array.from({ length: 31 }, (_, i) => i + 1))
        assert.strictEqual(all.next, 31)
        assert.deepStrictEqual(all.entries[30], {
          seq: 31,
          at: new Date(0).toISOString(),
          agent: "odd",
          kind: "late",
          turnId: "t9",
          data: { i: 31 }
        })
        const page = yield* store.readReports({ since: 10, limit: 5 })
        assert.deepStrictEqual(page.entries.map((e) => e.seq), [11, 12, 13, 14, 15])
        assert.strictEqual(page.next, 15)
        const even = yield* store.readReports({ agent: "even", kinds: ["three"] })
        assert.deepStrictEqual(even.entries.map((e) => (e.data as { i: number }).i), [6, 12, 18, 24, 30])
        assert.strictEqual(even.next, 31)
        const tail = yield* store.readReports({ last: 3 })
        assert.deepStrictEqual(tail.entries.map((e) => e.seq), [29, 30, 31])
        const nothing = yield* store.readReports({ since: 31 })
        assert.deepStrictEqual(nothing, { entries: [], next: 31 })
        yield* close
      }))

    it.effect("keeps agents, turns, runs and state, newest write winning, and reads them back after a reopen", () =>
      Effect.gen(function*() {
        const { again, fresh } = yield* fixture.make()
        const first = yield* open(fresh)
        first.store.saveAgent(agentRow("a"))
        first.store.saveAgent(agentRow("a", { status: "working", restarts: 2 }))
        first.store.saveAgent(agentRow("b"))
        first.store.saveTurn(turnRow("a", 2, "queued", null))
        first.store.saveTurn(turnRow("a", 1, "running", null))
        first.store.saveTurn(turnRow("a", 1, "succeeded", new Date(0).toISOString()))
        first.store.saveTurn(turnRow("b", 1, "queued", null))
        first.store.saveRun({
          name: "r",
          kind: "run",
          status: "running",
          startedAt: "x",
          finishedAt: null,
          worktree: "/w"
        })
        first.store.saveState("scheduler", { mode: "paused", list: [1, 2] })
        // Before any commit, reads see the writes.
        assert.deepStrictEqual((yield* first.store.turns("a")).map((t) => [t.record.turnId, t.record.status]), [
          ["t1", "succeeded"],
          ["t2", "queued"]
        ])
        const check = (store: StoreShape) =>
          Effect.gen(function*() {
            const agents = [...(yield* store.agents)].sort((x, y) => x.name.localeCompare(y.name))
            assert.deepStrictEqual(agents.map((a) => [a.name, a.status, a.restarts]), [["a", "working", 2], [
              "b",
              "idle",
              0
            ]])
            assert.deepStrictEqual(agents[0], agentRow("a", { status: "working", restarts: 2 }))
            assert.deepStrictEqual((yield* store.turns("a")).map((t) => [t.record.turnId, t.record.status]), [
              ["t1", "succeeded"],
              ["t2", "queued"]
            ])
            assert.strictEqual((yield* store.turns("b")).length, 1)
            assert.strictEqual(yield* store.lastTurn("a"), 2)
            assert.strictEqual(yield* store.lastTurn("nobody"), 0)
            assert.deepStrictEqual((yield* store.runs).map((r) => [r.name, r.worktree]), [["r", "/w"]])
            assert.deepStrictEqual(Option.map(yield* store.run("r"), (r) => r.worktree), Option.some("/w"))
            assert.isTrue(Option.isNone(yield* store.run("nope")))
            assert.deepStrictEqual(yield* store.loadState("scheduler"), Option.some({ mode: "paused", list: [1, 2] }))
            assert.isTrue(Option.isNone(yield* store.loadState("nothing")))
          })
        yield* check(first.store)
        if (!fixture.durable) return yield* first.close
        yield* first.close
        const second = yield* open(again)
        yield* check(second.store)
        // The cursor goes on from where the last host left it.
        post(second.store, "a", "x")
        post(second.store, "a", "y")
        const page = yield* second.store.readReports({})
        assert.deepStrictEqual(page.entries.map((e) => e.seq), [1, 2])
        yield* second.close
        const third = yield* open(again)
        assert.strictEqual(post(third.store, "a", "z").seq, 3)
        yield* third.close
      }))

    it.effect("retention removes old history and keeps what a live agent needs", () =>
      Effect.gen(function*() {
        yield* TestClock.setTime(100 * 86_400_000)
        const { fresh } = yield* fixture.make()
        const { close, store } = yield* open(fresh)
        const old = new Date(10 * 86_400_000).toISOString()
        const recent = new Date(99 * 86_400_000).toISOString()
        post(store, "a", "old", {}, old)
        post(store, "a", "recent", {}, recent)
        store.saveAgent(agentRow("a"))
        store.saveAgent(agentRow("gone", { status: "closed" }))
        store.saveTurn(turnRow("a", 1, "succeeded", old))
        store.saveTurn(turnRow("a", 2, "succeeded", recent))
        store.saveTurn(turnRow("a", 3, "queued", null))
        store.saveRun({ name: "r", kind: "run", status: "succeeded", startedAt: old, finishedAt: old, worktree: null })
        store.saveRun({ name: "s", kind: "run", status: "running", startedAt: old, finishedAt: null, worktree: null })
        yield* store.flush()
        const pruned = yield* store.prune(30)
        assert.strictEqual(pruned.turns, 1)
        assert.strictEqual(pruned.runs, 1)
        assert.deepStrictEqual((yield* store.turns("a")).map((t) => t.record.turnId), ["t2", "t3"])
        assert.deepStrictEqual((yield* store.runs).map((r) => r.name), ["s"])
        assert.isTrue((yield* store.agents).some((a) => a.name === "a"))
        if (fixture.durable) {
          assert.strictEqual(pruned.reports, 1)
          assert.deepStrictEqual((yield* store.readReports({})).entries.map((e) => e.kind), ["recent"])
        }
        yield* close
      }))
  })
