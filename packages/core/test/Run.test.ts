/**
 * Single-shot runs over the in-memory Claude, under TestClock (worktrees, which need git, are shown in
 * test/runs-worktrees.test.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, TestClock } from "effect"
import * as path from "node:path"
import { buildArgs } from "../src/Agent.js"
import { Flotta } from "../src/Flotta.js"
import { boundFlags } from "../src/Run.js"
import { selectRuns, viewOf } from "../src/RunList.js"
import * as Testing from "../src/Testing.js"
import { eventually, failureOf, memoryFleet, scripted, tagOf, withAgents } from "./support.js"

/** The data of a run's `run_finished` entries (one, when it has ended). */
const finishedOf = (fleet: Flotta, name: string) =>
  fleet.reports({ agent: name, kinds: ["run_finished"] }).pipe(
    Effect.map((page) => page.entries.map((e) => e.data as Record<string, unknown>))
  )

describe("runs", () => {
  it.effect("a run takes one turn, returns its result, and is gone afterwards", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const result = yield* fleet.run({ prompt: "hello", name: "once", maxTurns: 3, maxBudgetUsd: 0.5 })
      assert.deepInclude(result, { kind: "run", name: "once", text: "echo: hello", modelCalls: 1 })
      assert.closeTo(result.costUsd, 0.001, 1e-9)
      assert.isString(result.sessionId)
      assert.deepStrictEqual(yield* fleet.list(), [])
      const kinds = (yield* fleet.reports({ agent: "once" })).entries.map((e) => e.kind)
      assert.deepStrictEqual(kinds, ["spawned", "result", "closed", "run_finished"])
      const [ended] = yield* finishedOf(fleet, "once")
      assert.deepStrictEqual(Object.keys(ended!).sort(), ["costUsd", "durationMs", "ok"], "no worktree, no error")
      assert.isTrue(ended!["ok"])
      assert.strictEqual(ended!["costUsd"], result.costUsd)
      assert.isNumber(ended!["durationMs"])
    }).pipe(Effect.provide(memoryFleet())))

  it("bounds and schema become CLI flags, after the options' own", () => {
    const schema = { type: "object", properties: { a: { type: "number" } } }
    const flags = boundFlags({ maxTurns: 4, maxBudgetUsd: 0.25, jsonSchema: schema })
    assert.deepStrictEqual(flags, [
      "--max-turns",
      "4",
      "--max-budget-usd",
      "0.25",
      "--json-schema",
      JSON.stringify(schema)
    ])
    const args = buildArgs({ model: "opus", extraArgs: flags }, "read_only", { id: "s1", resume: false })
    assert.deepStrictEqual(args.slice(-6), flags)
    assert.deepStrictEqual(args.slice(args.indexOf("--session-id"), args.indexOf("--session-id") + 2), [
      "--session-id",
      "s1"
    ])
    assert.strictEqual(args[args.indexOf("--model") + 1], "opus")
    assert.strictEqual(args[args.indexOf("--tools") + 1], "Read,Glob,Grep")
    const resumed = buildArgs({}, "full", { id: "s1", resume: true })
    assert.deepStrictEqual(resumed.slice(resumed.indexOf("--resume"), resumed.indexOf("--resume") + 2), [
      "--resume",
      "s1"
    ])
    assert.notInclude(resumed, "--tools")
  })

  it.effect("a schema run answers with structured output; one that answers in text is StructuredOutputMissing", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const schema = { type: "object", properties: { items: { type: "array" } } }
      const ok = yield* fleet.run({ prompt: "list", jsonSchema: schema })
      assert.deepStrictEqual(ok.structuredOutput, { items: ["a", "b"] })
      const error = failureOf(yield* Effect.exit(fleet.run({ prompt: "chat", jsonSchema: schema, name: "texty" })))
      assert.strictEqual(error._tag, "StructuredOutputMissing")
      assert.match(error.message, /answered in text: "just words"/)
      const kinds = (yield* fleet.reports({ agent: "texty" })).entries.map((e) => e.kind)
      assert.deepStrictEqual(kinds, ["spawned", "error", "closed", "run_finished"])
      const [ended] = yield* finishedOf(fleet, "texty")
      assert.deepInclude(ended, { ok: false, error: { _tag: "StructuredOutputMissing", message: error.message } })
    }).pipe(Effect.provide(Testing.layer({
      model: ({ prompt }) => (prompt === "list" ? Testing.structured({ items: ["a", "b"] }) : "just words")
    }))))

  it.effect("maxTurns and maxBudgetUsd stop a run with what it had spent", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const turns = failureOf(yield* Effect.exit(fleet.run({ prompt: "loop", maxTurns: 3, name: "turns" })))
      assert.strictEqual(turns._tag, "MaxTurnsReached")
      if (turns._tag === "MaxTurnsReached") assert.strictEqual(turns.turns, 3)
      const budget = failureOf(yield* Effect.exit(fleet.run({ prompt: "loop", maxBudgetUsd: 0.0025, name: "budget" })))
      assert.strictEqual(budget._tag, "BudgetExceeded")
      if (budget._tag === "BudgetExceeded") assert.closeTo(budget.costUsd, 0.003, 1e-9)
      // Each says it finished, not ok, with its error and what it had spent.
      const [byTurns] = yield* finishedOf(fleet, "turns")
      assert.deepInclude(byTurns, { ok: false, error: { _tag: "MaxTurnsReached", message: turns.message } })
      assert.closeTo(byTurns!["costUsd"] as number, 0.003, 1e-9)
      const [byBudget] = yield* finishedOf(fleet, "budget")
      assert.deepInclude(byBudget, { ok: false, error: { _tag: "BudgetExceeded", message: budget.message } })
      assert.closeTo(byBudget!["costUsd"] as number, 0.003, 1e-9)
    }).pipe(Effect.provide(Testing.layer({
      model: function loop(input): Testing.Reply {
        return Testing.toolUse("Read", { file_path: "/etc/hostname" }, () => loop(input))
      }
    }))))

  it.effect("bad options are named", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const cases = [
        [{ prompt: "" }, "prompt"],
        [{ prompt: "x", maxTurns: 0 }, "maxTurns"],
        [{ prompt: "x", maxBudgetUsd: -1 }, "maxBudgetUsd"],
        [{ prompt: "x", cleanup: true }, "cleanup"],
        [{ prompt: "x", template: "nope" }, "template"]
      ] as const
      for (const [options, field] of cases) {
        const error = failureOf(yield* Effect.exit(fleet.run(options)))
        assert.strictEqual(error._tag, "InvalidSpec")
        assert.strictEqual((error as { path: string }).path, field)
      }
      assert.strictEqual(tagOf(yield* Effect.exit(fleet.run({ prompt: "x", name: "../up" }))), "InvalidName")
      assert.strictEqual(tagOf(yield* Effect.exit(fleet.run({ prompt: "x", worktree: "a/b" }))), "InvalidName")
    }).pipe(Effect.provide(memoryFleet())))

  it.effect("runAsync returns the name at once; runResult is TurnPending, then the result", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const name = yield* fleet.runAsync({ prompt: "slow 300 async", name: "later" })
      assert.strictEqual(name, "later")
      assert.strictEqual(tagOf(yield* Effect.exit(fleet.runResult("later"))), "TurnPending")
      assert.strictEqual(
        tagOf(yield* Effect.exit(fleet.runAsync({ prompt: "x", name: "later" }))),
        "AgentAlreadyExists"
      )
      yield* eventually(fleet.list(), (list) => list.length === 1)
      yield* TestClock.adjust("300 millis")
      const result = yield* fleet.awaitRun("later")
      assert.strictEqual(result.kind === "run" ? result.text : "", "slow done async")
      assert.strictEqual((yield* fleet.runResult("later")).kind, "run")
      // Once, when it ended (not when its result was read), after 300 ms on the clock.
      const ended = yield* finishedOf(fleet, "later")
      assert.lengthOf(ended, 1)
      assert.deepInclude(ended[0], { ok: true, costUsd: result.kind === "run" ? result.costUsd : -1, durationMs: 300 })
      assert.strictEqual(tagOf(yield* Effect.exit(fleet.runResult("never-ran"))), "RunNotFound")
      assert.match(yield* fleet.runAsync({ prompt: "x" }), /^run-[0-9a-f]{8}$/)
    }).pipe(Effect.provide(memoryFleet())))

  it.effect("a run's failure is kept by name", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      yield* fleet.runAsync({ prompt: "error 500", name: "doomed" })
      yield* Effect.exit(fleet.awaitRun("doomed"))
      assert.strictEqual(tagOf(yield* Effect.exit(fleet.runResult("doomed"))), "TurnFailed")
      const ended = yield* finishedOf(fleet, "doomed")
      assert.lengthOf(ended, 1)
      assert.deepInclude(ended[0], { ok: false })
      assert.strictEqual((ended[0]!["error"] as { _tag: string })._tag, "TurnFailed")
    }).pipe(Effect.provide(memoryFleet())))

  it.effect("a run's timeout interrupts it: TurnTimeout with what it had spent", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const fiber = yield* Effect.fork(Effect.exit(fleet.run({ prompt: "hang", name: "bounded", timeout: "1 minute" })))
      yield* eventually(
        fleet.status("bounded").pipe(Effect.option),
        (s) => s._tag === "Some" && s.value.current !== null
      )
      yield* TestClock.adjust("1 minute")
      const error = failureOf(yield* Fiber.join(fiber))
      assert.strictEqual(error._tag, "TurnTimeout")
      if (error._tag === "TurnTimeout") {
        assert.isString(error.sessionId)
        assert.isNumber(error.costUsd)
      }
      assert.deepStrictEqual(yield* finishedOf(fleet, "bounded"), [{
        ok: false,
        costUsd: error._tag === "TurnTimeout" ? error.costUsd ?? 0 : -1,
        durationMs: 60_000,
        error: { _tag: "TurnTimeout", message: error.message }
      }])
    }).pipe(Effect.provide(memoryFleet())))

  it.effect("runs() lists the async runs and verifies, newest first: state, cost, error tag; sync runs are not kept", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      assert.deepStrictEqual(yield* fleet.runs(), [])
      yield* fleet.run({ prompt: "at once", name: "synchronous" })
      yield* fleet.runAsync({ prompt: "slow 300 first", name: "first" })
      yield* TestClock.adjust("10 millis")
      yield* fleet.runAsync({ prompt: "error 500", name: "broken" })
      yield* Effect.exit(fleet.awaitRun("broken"))
      yield* TestClock.adjust("10 millis")
      const verify = yield* fleet.verifyAsync("/no/such/repository", {
        branch: "main",
        checks: ["true"],
        name: "check"
      })
      yield* Effect.exit(fleet.awaitRun(verify))

      const running = yield* fleet.runs({ state: "running" })
      assert.deepStrictEqual(running.map((r) => r.name), ["first"])
      assert.deepInclude(running[0], { kind: "run", finishedAt: null, worktree: null, branch: null, error: null })
      assert.isNumber(running[0]!.costUsd, "a run still going shows what it has spent so far")

      yield* TestClock.adjust("300 millis")
      yield* fleet.awaitRun("first")
      const all = yield* fleet.runs()
      assert.deepStrictEqual(all.map((r) => [r.name, r.kind, r.state, r.error]), [
        ["check", "verify", "failed", "NotAGitRepo"],
        ["broken", "run", "failed", "TurnFailed"],
        ["first", "run", "succeeded", null]
      ])
      const first = all.find((r) => r.name === "first")!
      assert.closeTo(first.costUsd!, 0.001, 1e-9)
      assert.isString(first.finishedAt)
      assert.isNull(first.passed)
      assert.isNull(all[0]!.costUsd, "a verify spends nothing on the model")
      assert.deepStrictEqual((yield* fleet.runs({ limit: 1 })).map((r) => r.name), ["check"])
      assert.deepStrictEqual((yield* fleet.runs({ state: "failed", limit: 5 })).map((r) => r.name), ["check", "broken"])
    }).pipe(Effect.provide(memoryFleet())))

  it("a stored run's view: the branch of its worktree, what a failure had spent, a verify's verdict", () => {
    const base = { kind: "run" as const, startedAt: "2026-01-01T00:00:00.000Z", finishedAt: "2026-01-01T00:01:00.000Z" }
    const restarted = viewOf({
      ...base,
      name: "fixer",
      status: "failed",
      worktree: "/repo/.claude/worktrees/fixer",
      error: { _tag: "HostRestarted", name: "fixer", turnId: "fixer" }
    })
    assert.deepInclude(restarted, {
      state: "failed",
      worktree: "/repo/.claude/worktrees/fixer",
      branch: "worktree-fixer",
      error: "HostRestarted",
      costUsd: null
    })
    const overBudget = viewOf({
      ...base,
      name: "spender",
      status: "failed",
      worktree: null,
      error: { _tag: "BudgetExceeded", costUsd: 0.51 }
    })
    assert.deepInclude(overBudget, { costUsd: 0.51, error: "BudgetExceeded", branch: null })
    const cleaned = viewOf({
      ...base,
      name: "tidy",
      status: "succeeded",
      worktree: "/repo/.claude/worktrees/tidy",
      result: {
        kind: "run",
        costUsd: 0.2,
        worktree: { path: "/repo/.claude/worktrees/tidy", branch: "b", removed: true }
      }
    })
    assert.deepInclude(cleaned, { branch: "b", costUsd: 0.2, error: null })
    const checked = viewOf({
      ...base,
      kind: "verify",
      name: "v",
      status: "succeeded",
      worktree: null,
      result: { kind: "verify", passed: false, branch: "feature", commit: "abc", checks: [] }
    })
    assert.deepInclude(checked, { passed: false, branch: "feature", costUsd: null, state: "succeeded" })
    const views = [restarted, overBudget, cleaned, checked].map((v, i) => ({ ...v, startedAt: `2026-01-0${i + 1}` }))
    assert.deepStrictEqual(selectRuns(views, { limit: 2 }).map((v) => v.name), ["v", "tidy"])
    assert.deepStrictEqual(selectRuns(views, { state: "succeeded" }).map((v) => v.name), ["v", "tidy"])
    assert.deepStrictEqual(selectRuns(views, { state: "succeeded", kind: "run" }).map((v) => v.name), ["tidy"])
    assert.deepStrictEqual(selectRuns(views, { kind: "verify" }).map((v) => v.name), ["v"])
    assert.deepStrictEqual(selectRuns(views, { kind: "run", limit: 2 }).map((v) => v.name), ["tidy", "spender"])
  })

  it.effect("a run that fails before its agent exists, or whose caller stops it, still says it finished", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const where = "/no/such/repository"
      const error = failureOf(
        yield* Effect.exit(fleet.run({ prompt: "x", name: "nowhere", cwd: where, worktree: true }))
      )
      assert.strictEqual(error._tag, "NotAGitRepo")
      assert.deepStrictEqual(yield* finishedOf(fleet, "nowhere"), [{
        ok: false,
        costUsd: 0,
        durationMs: 0,
        error: { _tag: "NotAGitRepo", message: error.message }
      }])
      // A sync run whose caller goes away is interrupted: it says so once.
      const fiber = yield* Effect.fork(fleet.run({ prompt: "hang", name: "abandoned" }))
      yield* eventually(
        fleet.status("abandoned").pipe(Effect.option),
        (s) => s._tag === "Some" && s.value.current !== null
      )
      yield* Fiber.interrupt(fiber)
      const ended = yield* finishedOf(fleet, "abandoned")
      assert.deepStrictEqual(ended.map((e) => [e["ok"], (e["error"] as { _tag: string })._tag]), [[
        false,
        "RunInterrupted"
      ]])
      // Refused before it began (a bad option): no run, so nothing finished.
      yield* Effect.exit(fleet.run({ prompt: "", name: "refused" }))
      assert.deepStrictEqual(yield* finishedOf(fleet, "refused"), [])
    }).pipe(Effect.provide(memoryFleet())))

  it.effect("a template's fields apply and the call's options override them", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      yield* fleet.boot({ agents: [{ name: "tpl", lifecycle: "run", prompt: "where", cwd: "/srv/x", model: "opus" }] })
      const fromTemplate = yield* fleet.run({ template: "tpl" })
      assert.strictEqual(fromTemplate.text, `${path.resolve("/srv/x")} opus where`)
      assert.match(fromTemplate.name, /^tpl-[0-9a-f]{8}$/)
      const overridden = yield* fleet.run({ template: "tpl", prompt: "elsewhere", model: "haiku" })
      assert.strictEqual(overridden.text, `${path.resolve("/srv/x")} haiku elsewhere`)
    }).pipe(Effect.provide(Testing.layer({ model: ({ cwd, model, prompt }) => `${cwd} ${model} ${prompt}` }))))
})

describe("runs and sessions share one registry", () => {
  it.effect("a run is listed while it runs, interrupt reaches it, and its name is unique among agents", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents("taken")
      assert.strictEqual(tagOf(yield* Effect.exit(fleet.run({ prompt: "x", name: "taken" }))), "AgentAlreadyExists")
      const name = yield* fleet.runAsync({ prompt: "hang", name: "stoppable" })
      const info = yield* eventually(
        fleet.info(name).pipe(Effect.option),
        (i) => i._tag === "Some" && i.value.current !== null
      )
      assert.strictEqual(info._tag === "Some" ? info.value.lifecycle : "", "run")
      assert.isTrue(yield* fleet.interrupt(name))
      assert.strictEqual(tagOf(yield* Effect.exit(fleet.awaitRun(name))), "TurnInterrupted")
      const ended = yield* finishedOf(fleet, name)
      assert.deepStrictEqual(ended.map((e) => [e["ok"], (e["error"] as { _tag: string })._tag]), [[
        false,
        "TurnInterrupted"
      ]])
    }).pipe(Effect.provide(Testing.layer({ model: scripted }))))
})
