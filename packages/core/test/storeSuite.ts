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
        first.store.saveAgent(agentRow("c"))
        yield* first.store.flush()
        // Closed after its first write was committed: the read by name sees the waiting write.
        first.store.saveAgent(
          agentRow("c", {
            status: "closed",
            closedReason: "done",
            closedAt: "1970-01-02T00:00:00.000Z",
            turnsBefore: 4
          })
        )
        assert.strictEqual(Option.getOrThrow(yield* first.store.agent("c")).status, "closed")
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
            ], ["c", "closed", 0]])
            assert.deepStrictEqual(agents[0], agentRow("a", { status: "working", restarts: 2 }))
            // One by name, as it was written last (a closed one's too).
            assert.deepStrictEqual(yield* store.agent("a"), Option.some(agents[0]!))
            assert.deepStrictEqual(
              Option.map(yield* store.agent("c"), (c) => [c.status, c.closedAt, c.turnsBefore]),
              Option.some(["closed", "1970-01-02T00:00:00.000Z", 4])
            )
            assert.isTrue(Option.isNone(yield* store.agent("nobody")))
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

    it.effect("the cost console's sums equal the sum of the turns' costs, by agent, model, day, hour, run, label", () =>
      Effect.gen(function*() {
        const { again, fresh } = yield* fixture.make()
        const first = yield* open(fresh)
        const models = ["opus", "haiku", "sonnet"]
        const rows: Array<TurnRow> = []
        for (let i = 0; i < 60; i++) {
          const agent = ["ann", "bob", "cid", "dee"][i % 4]!
          const at = new Date(Date.UTC(2025, 0, 1 + (i % 5), i % 24, i)).toISOString()
          const base = turnRow(agent, i + 1, i % 7 === 0 ? "failed" : "succeeded", at)
          // Most turns say their cost per model (one or two models); some, like an older CLI's, only in all.
          const modelCosts = i % 6 === 5 ? undefined : i % 3 === 0
            ? { [models[i % 3]!]: 0.001 * i, [models[(i + 1) % 3]!]: 0.0005 }
            : { [models[i % 3]!]: 0.002 * (i + 1) }
          const costUsd = modelCosts === undefined ? 0.0031 * i : Object.values(modelCosts).reduce((a, b) => a + b, 0)
          const row: TurnRow = {
            ...base,
            record: { ...base.record, costUsd, ...(modelCosts === undefined ? {} : { modelCosts }) },
            ...(i % 4 === 1 ? { run: `run-${i % 3}` } : {}),
            ...(i % 8 === 1
              ? { labels: { routine: "nightly", team: "a" } }
              : i % 8 === 2
              ? { labels: { team: "b" } }
              : {})
          }
          rows.push(row)
          first.store.saveTurn(row)
        }
        // Unfinished and free turns cost nothing and are not counted.
        first.store.saveTurn(turnRow("ann", 100, "queued", null))
        first.store.saveTurn({
          ...turnRow("ann", 101, "succeeded", rows[0]!.record.finishedAt),
          record: {
            ...turnRow("ann", 101, "succeeded", null).record,
            costUsd: 0,
            finishedAt: rows[0]!.record.finishedAt
          }
        })
        const close = (a: number, b: number, what: string) => assert.approximately(a, b, 1e-9, what)
        const check = (store: StoreShape) =>
          Effect.gen(function*() {
            const expected = (key: (row: TurnRow, model: string) => string | null, keep = (_: TurnRow) => true) => {
              const sums = new Map<string | null, number>()
              for (const row of rows.filter(keep)) {
                const byModel = row.record.modelCosts ?? { unknown: row.record.costUsd }
                for (const [model, usd] of Object.entries(byModel)) {
                  sums.set(key(row, model), (sums.get(key(row, model)) ?? 0) + usd)
                }
              }
              return sums
            }
            const sameAs = (
              report: { readonly groups: ReadonlyArray<{ key: string | null; costUsd: number }> },
              sums: Map<string | null, number>,
              what: string
            ) => {
              assert.deepStrictEqual(new Set(report.groups.map((g) => g.key)), new Set(sums.keys()), what)
              for (const group of report.groups) close(group.costUsd, sums.get(group.key)!, `${what} ${group.key}`)
            }
            const all = rows.reduce((sum, row) => sum + row.record.costUsd, 0)
            const byAgent = yield* store.costs({ since: null, until: null, by: "agent" })
            close(byAgent.totalUsd, all, "total")
            assert.strictEqual(byAgent.turns, rows.length)
            sameAs(byAgent, expected((row) => row.agent), "by agent")
            assert.deepStrictEqual(byAgent.groups.map((g) => g.turns), byAgent.groups.map(() => 15))
            const costs = byAgent.groups.map((g) => g.costUsd)
            assert.deepStrictEqual(costs, [...costs].sort((a, b) => b - a), "the biggest spender first")
            sameAs(yield* store.costs({ since: null, until: null, by: "model" }), expected((_, m) => m), "by model")
            const byDay = yield* store.costs({ since: null, until: null, by: "day" })
            sameAs(byDay, expected((row) => row.record.finishedAt!.slice(0, 10)), "by day")
            assert.deepStrictEqual(byDay.groups.map((g) => g.key), [
              "2025-01-01",
              "2025-01-02",
              "2025-01-03",
              "2025-01-04",
              "2025-01-05"
            ])
            sameAs(
              yield* store.costs({ since: null, until: null, by: "hour" }),
              expected((row) => row.record.finishedAt!.slice(0, 13)),
              "by hour"
            )
            sameAs(yield* store.costs({ since: null, until: null, by: "run" }), expected((r) => r.run ?? null), "run")
            sameAs(
              yield* store.costs({ since: null, until: null, by: "label:routine" }),
              expected((r) => r.labels?.["routine"] ?? null),
              "by label:routine"
            )
            sameAs(
              yield* store.costs({ since: null, until: null, by: "label:team" }),
              expected((r) => r.labels?.["team"] ?? null),
              "by label:team"
            )
            // A window: [Jan 2, Jan 4).
            const since = "2025-01-02T00:00:00.000Z"
            const until = "2025-01-04T00:00:00.000Z"
            const inWindow = (row: TurnRow) => row.record.finishedAt! >= since && row.record.finishedAt! < until
            const windowed = yield* store.costs({ since, until, by: "model" })
            sameAs(windowed, expected((_, m) => m, inWindow), "in a window")
            close(windowed.totalUsd, rows.filter(inWindow).reduce((sum, row) => sum + row.record.costUsd, 0), "window")
            assert.deepStrictEqual([windowed.since, windowed.until], [since, until])
          })
        // Still in the write-behind buffer, then committed, then read again by a later host.
        yield* check(first.store)
        yield* first.store.flush()
        yield* check(first.store)
        yield* first.close
        if (fixture.durable) {
          const second = yield* open(again)
          yield* check(second.store)
          yield* second.close
        }
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
        store.saveState("run-diff/r", { name: "r", at: old })
        store.saveState("run-diff/t", { name: "t", at: recent })
        store.saveState("approvals", { pending: [], ended: [], at: old })
        yield* store.flush()
        const pruned = yield* store.prune(30)
        // A run's recorded diff goes with its age; other state is never pruned.
        assert.strictEqual(pruned.diffs, 1)
        assert.isTrue(Option.isNone(yield* store.loadState("run-diff/r")))
        assert.isTrue(Option.isSome(yield* store.loadState("run-diff/t")))
        assert.isTrue(Option.isSome(yield* store.loadState("approvals")))
        assert.strictEqual(pruned.turns, 1)
        assert.strictEqual(pruned.runs, 1)
        assert.deepStrictEqual((yield* store.turns("a")).map((t) => t.record.turnId), ["t2", "t3"])
        assert.deepStrictEqual((yield* store.runs).map((r) => r.name), ["s"])
        assert.isTrue((yield* store.agents).some((a) => a.name === "a"))
        // The cost console's rows go with the turns' history: only the recent turn's spend is left.
        assert.strictEqual(pruned.costs, 1)
        const left = yield* store.costs({ since: null, until: null, by: "agent" })
        assert.deepStrictEqual([left.turns, left.totalUsd], [1, 0.01])
        if (fixture.durable) {
          assert.strictEqual(pruned.reports, 1)
          assert.deepStrictEqual((yield* store.readReports({})).entries.map((e) => e.kind), ["recent"])
        }
        yield* close
      }))
  })
