/**
 * Best-of-N runs over the in-memory Claude and in-memory repositories (`Testing.git`), under TestClock: each
 * attempt is told its number, is verified in its own worktree, and a winner is picked (`first` interrupts the
 * rest, `cheapest` lets all finish); no pass is `NoAttemptPassed`, naming each attempt's failing check. The losers'
 * worktrees go unless `keepAll`; bad options are refused by name.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Fiber, TestClock } from "effect"
import { Flotta } from "../src/Flotta.js"
import type { RunResult } from "../src/RunOutcome.js"
import * as Testing from "../src/Testing.js"
import { failureOf } from "./support.js"

/** `work <n> <calls>`: answers after n minutes, having made `calls` model calls (tool uses before the answer). */
const model: Testing.Model = ({ prompt }) => {
  const [, minutes = "0", calls = "1"] = prompt.split(" ")
  let reply: Testing.Reply = `done ${prompt}`
  for (let i = 1; i < Number(calls); i++) reply = Testing.toolUse("Read", { file_path: `f${i}` }, reply)
  return Number(minutes) === 0 ? reply : Testing.delay(Duration.minutes(Number(minutes)), reply)
}

/** A fleet whose checks pass for the attempts named, telling each check to `seen`. */
const fleet = (passing: ReadonlyArray<string>, seen: Array<Testing.CheckInput> = []) =>
  Testing.layer({
    model,
    git: Testing.git({
      check: (input) => {
        seen.push(input)
        return passing.includes(input.env["FLOTTA_ATTEMPT"] ?? "") ? 0 : { exitCode: 1, output: "1 test failed" }
      }
    })
  })

const statuses = (result: RunResult) => result.attempts!.map((a) => [a.attempt, a.status])

describe("best of N", () => {
  const seen: Array<Testing.CheckInput> = []
  it.effect("first: the first attempt to pass wins, and the ones still going are interrupted", () =>
    Effect.gen(function*() {
      const f = yield* Flotta
      const run = yield* Effect.fork(f.run({
        name: "fix",
        prompt: "work {{attempt}} 1",
        attempts: 3,
        verify: { checks: ["npm test"] }
      }))
      yield* TestClock.adjust("3 minutes")
      const result = yield* Fiber.join(run)
      assert.strictEqual(result.attempt, 2)
      assert.strictEqual(result.name, "fix")
      assert.strictEqual(result.text, "done work 2 1", "the winner's answer, to its own prompt")
      assert.deepStrictEqual(statuses(result), [[1, "failed"], [2, "passed"], [3, "interrupted"]])
      assert.deepStrictEqual(seen.map((c) => [c.command, c.env["FLOTTA_ATTEMPT"]]), [["npm test", "1"], [
        "npm test",
        "2"
      ]])
      assert.strictEqual(seen[1]!.cwd, result.worktree?.path, "checked in the attempt's own worktree")
      assert.strictEqual(result.worktree?.branch, "worktree-fix-a2")
      assert.isFalse(result.worktree?.removed, "the winner's worktree stays")
      const losers = result.attempts!.filter((a) => a.attempt !== 2)
      assert.isTrue(losers.every((a) => a.worktree?.removed === true), "the losers' worktrees go")
      assert.strictEqual(result.attempts![0]!.checks?.[0]?.output, "1 test failed")
      assert.deepStrictEqual((yield* f.list()).map((a) => a.name), [], "no attempt is left running")
      const failedCheck = (yield* f.reports({ agent: "fix-a1", kinds: ["verify_failed"] })).entries
      assert.deepStrictEqual(failedCheck.map((e) => e.data), [{
        attempt: 1,
        command: "npm test",
        exitCode: 1,
        timedOut: false
      }])
      const [spawned, ended] = [
        (yield* f.reports({ agent: "fix", kinds: ["spawned"] })).entries[0]?.data,
        (yield* f.reports({ agent: "fix", kinds: ["result"] })).entries[0]?.data
      ]
      assert.deepStrictEqual(spawned, { kind: "attempts", attempts: 3, pick: "first", checks: ["npm test"] })
      assert.deepInclude(ended as object, { attempt: 2 })
      // The run says once that it finished, with its winner; each attempt, a run of its own, says so too.
      const finished = (yield* f.reports({ agent: "fix", kinds: ["run_finished"] })).entries
      assert.lengthOf(finished, 1)
      assert.deepStrictEqual(finished[0]!.data, {
        ok: true,
        costUsd: result.totalCostUsd,
        durationMs: 120_000,
        branch: "worktree-fix-a2",
        worktree: result.worktree?.path,
        attempt: 2
      })
      const own = yield* f.reports({ kinds: ["run_finished"] })
      assert.deepStrictEqual(
        own.entries.map((e) => [e.agent, (e.data as { ok: boolean }).ok]).sort(),
        [["fix", true], ["fix-a1", true], ["fix-a2", true], ["fix-a3", false]],
        "an attempt whose check failed still ran to its end; the one stopped for the winner did not"
      )
    }).pipe(Effect.provide(fleet(["2", "3"], seen))))

  it.effect("cheapest: every attempt finishes, and the cheapest that passed wins", () =>
    Effect.gen(function*() {
      const f = yield* Flotta
      // Attempt i makes i model calls; 3 fails its check.
      const result = yield* f.run({
        name: "tidy",
        prompt: "work 0 {{attempt}}",
        attempts: 3,
        pick: "cheapest",
        verify: { checks: ["make check"] },
        keepAll: true
      })
      assert.strictEqual(result.attempt, 1, "one call: the cheapest")
      assert.deepStrictEqual(statuses(result), [[1, "passed"], [2, "passed"], [3, "failed"]])
      const costs = result.attempts!.map((a) => a.costUsd)
      assert.isBelow(costs[0]!, costs[1]!)
      assert.closeTo(result.totalCostUsd!, costs.reduce((a, b) => a + b, 0), 1e-9)
      assert.isTrue(result.attempts!.every((a) => a.worktree?.removed === false), "keepAll keeps every worktree")
      assert.lengthOf(yield* f.worktrees("."), 3)
    }).pipe(Effect.provide(fleet(["1", "2"]))))

  it.effect("no attempt passing is NoAttemptPassed, naming each attempt's failing check or error", () =>
    Effect.gen(function*() {
      const f = yield* Flotta
      const error = failureOf(
        yield* Effect.exit(f.run({
          name: "hopeless",
          prompt: "work 0 1",
          attempts: 2,
          verify: { checks: ["true", "npm test"] }
        }))
      )
      assert.strictEqual(error._tag, "NoAttemptPassed")
      if (error._tag !== "NoAttemptPassed") return
      assert.deepStrictEqual(error.attempts.map((a) => [a.attempt, a.check?.command, a.branch]), [
        [1, "npm test", "worktree-hopeless-a1"],
        [2, "npm test", "worktree-hopeless-a2"]
      ])
      assert.include(error.message, "attempt 1: `npm test` exited 1")
      assert.isAbove(error.costUsd, 0, "what every attempt spent, for whoever keeps the tally")
      assert.closeTo(error.costUsd, error.attempts.reduce((sum, a) => sum + a.costUsd, 0), 1e-9)
      const logged = (yield* f.reports({ agent: "hopeless", kinds: ["error"] })).entries
      assert.strictEqual((logged[0]?.data as { error: { _tag: string } }).error._tag, "NoAttemptPassed")
      const finished = (yield* f.reports({ agent: "hopeless", kinds: ["run_finished"] })).entries
      assert.deepStrictEqual(finished.map((e) => e.data), [{
        ok: false,
        costUsd: error.costUsd,
        durationMs: 0,
        error: { _tag: "NoAttemptPassed", message: error.message }
      }])
    }).pipe(Effect.provide(Testing.layer({
      model,
      git: Testing.git({ check: ({ command }) => (command === "true" ? 0 : 1) })
    }))))

  it.effect("without checks, an attempt passes when its turn succeeds; async, its outcome is kept by name", () =>
    Effect.gen(function*() {
      const f = yield* Flotta
      const name = yield* f.runAsync({ name: "race", prompt: "work {{attempt}} 1", attempts: 2 })
      const waited = yield* Effect.fork(f.awaitRun(name))
      yield* TestClock.adjust("2 minutes")
      const outcome = yield* Fiber.join(waited)
      assert.strictEqual(outcome.kind === "run" ? outcome.attempt : null, 1)
      const stored = yield* f.runResult(name)
      assert.deepStrictEqual(stored.kind === "run" ? statuses(stored) : [], [[1, "passed"], [2, "interrupted"]])
      const [view] = yield* f.runs({ limit: 1 })
      assert.deepInclude(view, { name: "race", state: "succeeded" })
      const finished = (yield* f.reports({ agent: "race", kinds: ["run_finished"] })).entries
      assert.lengthOf(finished, 1, "the async run says once that it finished")
      assert.deepInclude(finished[0]!.data as object, { ok: true, attempt: 1, branch: "worktree-race-a1" })
    }).pipe(Effect.provide(fleet([]))))

  it.effect("maxBudgetUsd bounds the whole run: each attempt gets an even share", () =>
    Effect.gen(function*() {
      const f = yield* Flotta
      // 0.001 a model call; attempt i makes i calls; a share of 0.0025 stops the third.
      const result = yield* f.run({
        name: "thrifty",
        prompt: "work 0 {{attempt}}",
        attempts: 3,
        pick: "cheapest",
        maxBudgetUsd: 0.0075
      })
      assert.deepStrictEqual(statuses(result), [[1, "passed"], [2, "passed"], [3, "failed"]])
      assert.strictEqual(result.attempts![2]!.error?._tag, "BudgetExceeded")
      assert.isAtMost(result.totalCostUsd!, 0.0075 + 0.001, "no more than the budget and one call past a share")
    }).pipe(Effect.provide(fleet([]))))

  it.effect("a run template (and so a routine that fires it) carries attempts, pick and checks", () =>
    Effect.gen(function*() {
      const f = yield* Flotta
      const boot = yield* f.boot({
        agents: [{
          name: "fixer",
          lifecycle: "run",
          attempts: 2,
          pick: "cheapest",
          verify: { checks: ["npm test"], timeout: 60_000 }
        }, { name: "bad", lifecycle: "run", attempts: 99 }]
      })
      assert.deepStrictEqual(boot.templates, ["fixer"])
      assert.deepStrictEqual(boot.rejected.map((r) => r.path), ["agents[1].attempts"])
      const result = yield* f.run({ template: "fixer", name: "fixed", prompt: "work 0 {{attempt}}" })
      assert.deepStrictEqual(statuses(result), [[1, "passed"], [2, "passed"]])
      assert.strictEqual(result.attempt, 1)
    }).pipe(Effect.provide(fleet(["1", "2"]))))

  it.effect("bad options are refused by name before anything starts", () =>
    Effect.gen(function*() {
      const f = yield* Flotta
      const refused = [
        [{ attempts: 0 }, "attempts"],
        [{ attempts: 17 }, "attempts"],
        [{ attempts: 1.5 }, "attempts"],
        [{ pick: "cheapest" as const }, "pick"],
        [{ keepAll: true }, "keepAll"],
        [{ attempts: 2, verify: { checks: [] } }, "verify.checks"],
        [{ attempts: 2, verify: { checks: [" "] } }, "verify.checks"],
        [{ attempts: 2, worktree: false }, "worktree"]
      ] as const
      for (const [options, field] of refused) {
        const error = failureOf(yield* Effect.exit(f.run({ prompt: "x", ...options })))
        assert.strictEqual(error._tag, "InvalidSpec", field)
        if (error._tag === "InvalidSpec") assert.strictEqual(error.path, field)
      }
      const long = failureOf(yield* Effect.exit(f.run({ prompt: "x", name: "n".repeat(62), attempts: 2 })))
      assert.strictEqual(long._tag, "InvalidName", "an attempt's name must be a name too")
      assert.deepStrictEqual(yield* f.worktrees("."), [])
    }).pipe(Effect.provide(fleet([]))))
})
