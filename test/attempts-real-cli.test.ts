/**
 * Best-of-N runs with the real claude CLI, offline against the simulator, in a real git repository: three
 * attempts of one task at once, each in its own worktree, each told its number (`FLOTTA_ATTEMPT` in its Bash,
 * `{{attempt}}` in its prompt) and verified there by a shell check. The one attempt that passes wins, the two still
 * working are interrupted, the losers' worktrees go (what they did kept on their branches); with no attempt passing,
 * the run ends with `NoAttemptPassed`, naming each attempt's failing check.
 */
import { NodeContext } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Flotta from "../packages/core/src/Flotta.js"
import { git, newRepo } from "./support/git.js"
import { CLAUDE, useOfflineApi } from "./support/realCli.js"

const offline = useOfflineApi("flotta-attempts")

const realFleet = () =>
  Flotta.layer({ claudePath: CLAUDE, env: offline.env, maxConcurrentStarts: 3 }).pipe(Layer.provide(NodeContext.layer))

describe("best of N with the real claude CLI", () => {
  it.scopedLive(
    "the one attempt that passes its check wins; the two still working are interrupted",
    () =>
      Effect.gen(function*() {
        const fleet = yield* Flotta.Flotta
        const repo = newRepo(offline.workdir("attempts-repo"))
        // Attempt 2 answers at once; 1 and 3 sleep in their Bash for a minute, until the winner interrupts them.
        const result = yield* fleet.run({
          name: "best",
          cwd: repo,
          permission: { allow: ["Bash"] },
          prompt: "BASH echo \"$FLOTTA_ATTEMPT/{{attempt}}\" > attempt.txt; [ \"$FLOTTA_ATTEMPT\" = 2 ] || sleep 60",
          attempts: 3,
          verify: { checks: ["test \"$(cat attempt.txt)\" = 2/2"] },
          timeout: "3 minutes"
        })
        assert.strictEqual(result.attempt, 2)
        assert.deepStrictEqual(result.attempts!.map((a) => [a.attempt, a.status]), [
          [1, "interrupted"],
          [2, "passed"],
          [3, "interrupted"]
        ])
        const winner = result.worktree!
        assert.strictEqual(winner.path, path.join(repo, ".claude", "worktrees", "best-a2"))
        assert.strictEqual(fs.readFileSync(path.join(winner.path, "attempt.txt"), "utf8"), "2/2\n")
        for (const loser of [1, 3]) {
          const report = result.attempts![loser - 1]!
          assert.isTrue(report.worktree?.removed, `attempt ${loser}'s worktree is removed`)
          assert.isFalse(fs.existsSync(path.join(repo, ".claude", "worktrees", `best-a${loser}`)))
          assert.include(git(repo, "branch", "--list", `worktree-best-a${loser}`), `worktree-best-a${loser}`)
        }
        const spent = result.attempts!.reduce((sum, a) => sum + a.costUsd, 0)
        assert.closeTo(result.totalCostUsd!, spent, 1e-9, "every attempt's spend counts, the interrupted ones' too")
        for (const report of result.attempts!) {
          // One interrupted mid-turn ended with its turn's result, which names its session (one stopped before it
          // started has none).
          if (report.error?._tag === "TurnInterrupted") assert.isString(report.sessionId, `attempt ${report.attempt}`)
        }
        assert.deepStrictEqual(yield* fleet.list(), [], "no attempt is left running")
      }).pipe(Effect.provide(realFleet())),
    { timeout: 300_000 }
  )

  it.scopedLive(
    "no attempt passing ends the run with NoAttemptPassed, naming each attempt's failing check",
    () =>
      Effect.gen(function*() {
        const fleet = yield* Flotta.Flotta
        const repo = newRepo(offline.workdir("attempts-none"))
        const exit = yield* Effect.exit(fleet.run({
          name: "none",
          cwd: repo,
          prompt: "ECHO attempt {{attempt}}",
          attempts: 2,
          verify: { checks: ["test -f missing.txt"] }
        }))
        assert.isTrue(Exit.isFailure(exit))
        const error = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined
        assert.strictEqual(error?._tag, "NoAttemptPassed")
        if (error?._tag !== "NoAttemptPassed") return
        assert.deepStrictEqual(error.attempts.map((a) => [a.attempt, a.check?.command, a.check?.exitCode]), [
          [1, "test -f missing.txt", 1],
          [2, "test -f missing.txt", 1]
        ])
        assert.include(error.message, "attempt 2: `test -f missing.txt` exited 1")
        assert.strictEqual(git(repo, "worktree", "list").split("\n").length, 1, "every attempt's worktree is gone")
      }).pipe(Effect.provide(realFleet())),
    { timeout: 300_000 }
  )
})
