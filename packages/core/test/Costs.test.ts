/**
 * The cost console and session budgets over the in-memory Claude under TestClock: each turn keeps its own cost per
 * model, `costs` answers by agent, model, day, run and any label with the store's sums, and a session with
 * `maxBudgetUsd` takes no new turn once its turns have spent it (for its life, or per UTC day), across a restart.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, TestClock } from "effect"
import { Flotta } from "../src/Flotta.js"
import { Registry } from "../src/Registry.js"
import * as Testing from "../src/Testing.js"
import { host, shared } from "./support.js"

const DAY = 86_400_000

const failure = (exit: Exit.Exit<unknown, unknown>) =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error as Record<string, unknown> : undefined

describe("the cost console", () => {
  it.effect("each turn keeps its own cost per model, and costs sums the turns by agent, model, day and run", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.UTC(2025, 5, 1, 9))
      const f = yield* Flotta
      yield* f.spawn("ann", { model: "opus" })
      yield* f.spawn("bob", { model: "haiku" })
      for (const text of ["one", "two", "three"]) yield* f.ask("ann", text)
      yield* f.ask("bob", "one")
      yield* TestClock.adjust(DAY)
      yield* f.ask("bob", "two")
      yield* f.run({ name: "job", prompt: "do it", model: "opus", labels: { routine: "nightly" } })
      const turns = [...yield* f.transcript("ann"), ...yield* f.transcript("bob")]
      for (const turn of turns) {
        // The CLI's modelUsage is a running total per process: each turn keeps only its own share.
        assert.deepStrictEqual(Object.keys(turn.modelCosts ?? {}).length, 1)
        assert.approximately(Object.values(turn.modelCosts!)[0]!, turn.costUsd, 1e-12)
        assert.isAbove(turn.costUsd, 0)
      }
      const spent = turns.reduce((sum, t) => sum + t.costUsd, 0)
      const byAgent = yield* f.costs({ by: "agent" })
      assert.strictEqual(byAgent.turns, 6)
      const ann = (yield* f.transcript("ann")).reduce((s, t) => s + t.costUsd, 0)
      const bob = (yield* f.transcript("bob")).reduce((s, t) => s + t.costUsd, 0)
      const job = byAgent.groups.find((g) => g.key === "job")!.costUsd
      assert.approximately(byAgent.totalUsd, spent + job, 1e-12)
      assert.approximately(byAgent.groups.find((g) => g.key === "ann")!.costUsd, ann, 1e-12)
      assert.approximately(byAgent.groups.find((g) => g.key === "bob")!.costUsd, bob, 1e-12)
      const byModel = yield* f.costs({ by: "model" })
      assert.deepStrictEqual(new Set(byModel.groups.map((g) => g.key)), new Set(["opus", "haiku"]))
      assert.approximately(byModel.groups.find((g) => g.key === "opus")!.costUsd, ann + job, 1e-12)
      assert.approximately(byModel.groups.find((g) => g.key === "haiku")!.costUsd, bob, 1e-12)
      const byDay = yield* f.costs({ by: "day" })
      assert.deepStrictEqual(byDay.groups.map((g) => [g.key, g.turns]), [["2025-06-01", 4], ["2025-06-02", 2]])
      const byRun = yield* f.costs({ by: "run" })
      assert.deepStrictEqual(byRun.groups.map((g) => g.key).sort(), ["job", null].sort())
      const byRoutine = yield* f.costs({ by: "label:routine" })
      assert.approximately(byRoutine.groups.find((g) => g.key === "nightly")!.costUsd, job, 1e-12)
      assert.approximately(byRoutine.groups.find((g) => g.key === null)!.costUsd, ann + bob, 1e-12)
      // The old spelling is gone: it names no label.
      const oldBy = failure(yield* Effect.exit(f.costs({ by: "routine" as never })))
      assert.deepStrictEqual([oldBy?._tag, oldBy?.path], ["InvalidSpec", "by"])
      const noKey = failure(yield* Effect.exit(f.costs({ by: "label:" as never })))
      assert.deepStrictEqual([noKey?._tag, noKey?.path], ["InvalidSpec", "by"])
      // A window back from now: only today's turns.
      const today = yield* f.costs({ since: "12h", by: "agent" })
      assert.strictEqual(today.turns, 2)
      assert.strictEqual(today.since, new Date(Date.UTC(2025, 5, 1, 21)).toISOString())
      const bad = failure(yield* Effect.exit(f.costs({ since: "last tuesday" })))
      assert.deepStrictEqual([bad?._tag, bad?.path], ["InvalidSpec", "since"])
      const badBy = failure(yield* Effect.exit(f.costs({ by: "weekday" as never })))
      assert.deepStrictEqual([badBy?._tag, badBy?.path], ["InvalidSpec", "by"])
    }).pipe(Effect.provide(Testing.layer({ model: Testing.echo }))))
})

describe("labels", () => {
  it.effect("spend groups by any label; relabel changes a live agent's labels, its info and its later turns' cost", () =>
    Effect.gen(function*() {
      const f = yield* Flotta
      yield* f.spawn("ann", { labels: { team: "a", tier: "gold" } })
      yield* f.spawn("bob", { labels: { team: "b" } })
      yield* f.spawn("cid")
      yield* f.ask("ann", "one")
      yield* f.ask("bob", "one")
      yield* f.ask("cid", "one")
      assert.deepStrictEqual((yield* f.info("ann")).labels, { team: "a", tier: "gold" })
      assert.notProperty(yield* f.info("cid"), "labels")
      const byTeam = (yield* f.costs({ by: "label:team" })).groups.map((g) => [g.key, g.turns])
      assert.sameDeepMembers(byTeam, [["a", 1], ["b", 1], [null, 1]])
      const byTier = (yield* f.costs({ by: "label:tier" })).groups.map((g) => [g.key, g.turns])
      assert.sameDeepMembers(byTier, [["gold", 1], [null, 2]])

      // Relabeled: its info says so at once, and only the turns that finish from now on are booked on the new labels.
      const cid = yield* Effect.flatMap(Registry, (registry) => registry.get("cid"))
      yield* cid.relabel({ team: "a" })
      assert.deepStrictEqual((yield* f.info("cid")).labels, { team: "a" })
      yield* f.ask("cid", "two")
      const after = (yield* f.costs({ by: "label:team" })).groups.map((g) => [g.key, g.turns])
      assert.sameDeepMembers(after, [["a", 2], ["b", 1], [null, 1]])
      yield* cid.relabel({})
      assert.notProperty(yield* f.info("cid"), "labels")
    }).pipe(Effect.provide(Testing.layer({ model: Testing.echo }))))

  it.effect("list and runs keep those with every label asked for", () =>
    Effect.gen(function*() {
      const f = yield* Flotta
      yield* f.spawn("ann", { labels: { team: "a", tier: "gold" } })
      yield* f.spawn("bob", { labels: { team: "b" } })
      yield* f.spawn("cid")
      const names = (labels?: Record<string, string>) =>
        Effect.map(f.list(labels === undefined ? {} : { labels }), (infos) => infos.map((i) => i.name).sort())
      assert.deepStrictEqual(yield* names(), ["ann", "bob", "cid"])
      assert.deepStrictEqual(yield* names({ team: "a" }), ["ann"])
      assert.deepStrictEqual(yield* names({ team: "a", tier: "silver" }), [])
      assert.deepStrictEqual(yield* names({}), ["ann", "bob", "cid"])
      const r1 = yield* f.runAsync({ name: "r1", prompt: "go", labels: { team: "a" } })
      const r2 = yield* f.runAsync({ name: "r2", prompt: "go" })
      yield* f.awaitRun(r1)
      yield* f.awaitRun(r2)
      const runs = (labels?: Record<string, string>) =>
        Effect.map(f.runs(labels === undefined ? {} : { labels }), (views) => views.map((v) => v.name).sort())
      assert.deepStrictEqual(yield* runs(), ["r1", "r2"])
      assert.deepStrictEqual(yield* runs({ team: "a" }), ["r1"])
      assert.deepStrictEqual((yield* f.runs({ labels: { team: "a" } }))[0]!.labels, { team: "a" })
    }).pipe(Effect.provide(Testing.layer({ model: Testing.echo }))))

  it.effect("a run's labels add to its template's, and its turn is booked on them", () =>
    Effect.gen(function*() {
      const f = yield* Flotta
      yield* f.boot({ agents: [{ name: "nightly", lifecycle: "run", prompt: "go", labels: { team: "a", kind: "x" } }] })
      yield* f.run({ name: "r1", template: "nightly", labels: { kind: "y" } })
      const byTeam = (yield* f.costs({ by: "label:team" })).groups.map((g) => [g.key, g.turns])
      const byKind = (yield* f.costs({ by: "label:kind" })).groups.map((g) => [g.key, g.turns])
      assert.deepStrictEqual([byTeam, byKind], [[["a", 1]], [["y", 1]]])
    }).pipe(Effect.provide(Testing.layer({ model: Testing.echo }))))
})

describe("session budgets", () => {
  it.effect("a session stops at its budget: the turn in flight finishes, the next is refused and reported", () =>
    Effect.gen(function*() {
      const f = yield* Flotta
      // Each turn costs 0.001 (one model call): after 3 turns 0.003 is spent, over 0.0025.
      yield* f.spawn("thrifty", { maxBudgetUsd: 0.0025 })
      for (const text of ["one", "two", "three"]) yield* f.ask("thrifty", text)
      const info = yield* f.info("thrifty")
      assert.strictEqual(info.budget?.budgetUsd, 0.0025)
      assert.strictEqual(info.budget?.per, "life")
      assert.approximately(info.budget!.spentUsd, 0.003, 1e-12)
      const refused = failure(yield* Effect.exit(f.ask("thrifty", "four")))
      assert.strictEqual(refused?._tag, "BudgetExceeded")
      assert.strictEqual(refused?.budgetUsd, 0.0025)
      assert.include(String(refused?.message), "of its $0.0025 for its life")
      const [entry] = (yield* f.reports({ agent: "thrifty", kinds: ["budget_exceeded"] })).entries
      assert.strictEqual(entry?.turnId, "t4")
      assert.deepStrictEqual(Object.keys(entry!.data as object).sort(), ["budgetUsd", "per", "spentUsd"])
      const transcript = yield* f.transcript("thrifty")
      assert.strictEqual(transcript.at(-1)!.status, "failed")
      assert.strictEqual(transcript.at(-1)!.costUsd, 0, "a refused turn was never sent")
      // A session without a budget is not held back.
      yield* f.spawn("free")
      for (const text of ["one", "two", "three", "four"]) yield* f.ask("free", text)
    }).pipe(Effect.provide(Testing.layer({ model: Testing.echo, costPerCall: 0.001 }))))

  it.effect("a budget per day comes back the next UTC day", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.UTC(2025, 5, 1, 22))
      const f = yield* Flotta
      yield* f.spawn("daily", { maxBudgetUsd: 0.002, budgetPer: "day" })
      yield* f.ask("daily", "one")
      yield* f.ask("daily", "two")
      assert.strictEqual(failure(yield* Effect.exit(f.ask("daily", "three")))?._tag, "BudgetExceeded")
      yield* TestClock.adjust("1 hour") // 23:00: still the same day
      assert.strictEqual(failure(yield* Effect.exit(f.ask("daily", "three")))?._tag, "BudgetExceeded")
      yield* TestClock.adjust("1 hour") // midnight UTC: a new day's budget
      assert.strictEqual((yield* f.info("daily")).budget?.spentUsd, 0)
      yield* f.ask("daily", "four")
      yield* f.ask("daily", "five")
      const refused = failure(yield* Effect.exit(f.ask("daily", "six")))
      assert.deepStrictEqual([refused?._tag, refused?.per], ["BudgetExceeded", "day"])
    }).pipe(Effect.provide(Testing.layer({ model: Testing.echo, costPerCall: 0.001 }))))

  it.effect("the spend survives a restart of the host: it is counted again from the store", () =>
    Effect.gen(function*() {
      const where = shared("flotta-budget")
      const options = { model: Testing.echo, costPerCall: 0.001 }
      yield* host(where, options)((f) =>
        Effect.gen(function*() {
          yield* f.spawn("kept", { maxBudgetUsd: 0.002 })
          yield* f.ask("kept", "one")
          yield* f.ask("kept", "two")
        })
      )
      const again = yield* host(where, options)((f) =>
        Effect.gen(function*() {
          const info = yield* f.info("kept")
          return { info, exit: yield* Effect.exit(f.ask("kept", "three")) }
        })
      )
      assert.approximately(again.info.budget!.spentUsd, 0.002, 1e-12)
      assert.strictEqual(failure(again.exit)?._tag, "BudgetExceeded")
    }))

  it.effect("a bad budget is refused naming the field", () =>
    Effect.gen(function*() {
      const f = yield* Flotta
      const negative = failure(yield* Effect.exit(f.spawn("a", { maxBudgetUsd: -1 })))
      assert.deepStrictEqual([negative?._tag, negative?.path], ["InvalidSpec", "maxBudgetUsd"])
      const per = failure(yield* Effect.exit(f.spawn("b", { maxBudgetUsd: 1, budgetPer: "week" as never })))
      assert.deepStrictEqual([per?._tag, per?.path], ["InvalidSpec", "budgetPer"])
      const alone = failure(yield* Effect.exit(f.spawn("c", { budgetPer: "day" })))
      assert.deepStrictEqual([alone?._tag, alone?.path], ["InvalidSpec", "budgetPer"])
    }).pipe(Effect.provide(Testing.layer({ model: Testing.echo }))))
})
