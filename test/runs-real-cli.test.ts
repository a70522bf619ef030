/**
 * Single-shot runs, worktrees and bounds against the real pinned `claude` binary and the fake Messages API.
 */
import { NodeContext } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Flotta from "../packages/core/src/Flotta.js"
import { git, newRepo } from "./support/git.js"
import { CLAUDE, useOfflineApi } from "./support/realCli.js"

const offline = useOfflineApi("flotta-runs")

const realFleet = Flotta.layer({ claudePath: CLAUDE }).pipe(Layer.provide(NodeContext.layer))

const errorOf = <A, E>(exit: Exit.Exit<A, E>): E => {
  if (Exit.isFailure(exit) && exit.cause._tag === "Fail") return exit.cause.error
  throw new Error(`expected a typed failure, got ${String(exit)}`)
}

const WRITER = { allow: ["Read", "Write", "Edit"] } as const

describe("runs with the real claude CLI", () => {
  it.scopedLive("a write in a worktree run lands in the worktree, not in the main checkout", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      const repo = newRepo(path.join(offline.root, "repos", "isolated"))
      const worktree = path.join(repo, ".claude", "worktrees", "writer")
      const result = yield* fleet.run({
        prompt: `WRITE ${path.join(worktree, "out.txt")} written in isolation`,
        cwd: repo,
        worktree: true,
        name: "writer",
        permission: WRITER,
        env: offline.env
      })
      assert.strictEqual(result.text, `WROTE ${path.join(worktree, "out.txt")}`)
      assert.deepInclude(result.worktree!, { path: worktree, branch: "worktree-writer", removed: false })
      assert.strictEqual(fs.readFileSync(path.join(worktree, "out.txt"), "utf8"), "written in isolation\n")
      assert.isFalse(fs.existsSync(path.join(repo, "out.txt")))
      assert.strictEqual(git(repo, "status", "--porcelain"), "", "the user's checkout is untouched")
      // A dirty worktree survives a gentle gc and goes with force; then the list is clean.
      const gentle = yield* fleet.gcWorktrees(repo)
      assert.deepStrictEqual(gentle.removed, [])
      const forced = yield* fleet.gcWorktrees(repo, { force: true })
      assert.deepStrictEqual(forced.removed, [worktree])
      assert.deepStrictEqual(forced.committed.map((c) => c.files), [["out.txt"]])
      assert.strictEqual(git(repo, "show", "worktree-writer:out.txt"), "written in isolation")
      assert.strictEqual(git(repo, "worktree", "list").split("\n").length, 1)
    }).pipe(Effect.provide(realFleet)))

  it.scopedLive("cleanup commits the run's work to its branch and removes the worktree", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      const repo = newRepo(path.join(offline.root, "repos", "tidy"))
      const worktree = path.join(repo, ".claude", "worktrees", "tidy")
      const result = yield* fleet.run({
        prompt: `WRITE ${path.join(worktree, "kept.txt")} kept on the branch`,
        cwd: repo,
        worktree: true,
        cleanup: true,
        name: "tidy",
        permission: WRITER,
        env: offline.env
      })
      assert.isTrue(result.worktree?.removed)
      assert.strictEqual(git(repo, "worktree", "list").split("\n").length, 1)
      assert.strictEqual(git(repo, "show", "worktree-tidy:kept.txt"), "kept on the branch")
      assert.strictEqual(git(repo, "rev-parse", "worktree-tidy"), result.worktree?.commit)
    }).pipe(Effect.provide(realFleet)))

  it.scopedLive("a read-only run cannot write", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      const dir = path.join(offline.root, "ro-run")
      fs.mkdirSync(dir, { recursive: true })
      const target = path.join(dir, "nope.txt")
      const result = yield* fleet.run({ prompt: `WRITE ${target} sneaky`, cwd: dir, env: offline.env })
      assert.match(result.text, /^DENIED/)
      assert.isFalse(fs.existsSync(target))
    }).pipe(Effect.provide(realFleet)))

  it.scopedLive("a policy function answers a run's permission requests", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      const dir = path.join(offline.root, "fn-run")
      fs.mkdirSync(dir, { recursive: true })
      const target = path.join(dir, "redirected.txt")
      const result = yield* fleet.run({
        prompt: `WRITE ${target} original`,
        cwd: dir,
        env: offline.env,
        permission: (_tool, input) => ({ behavior: "allow", updatedInput: { ...input, content: "rewritten\n" } })
      })
      assert.strictEqual(result.text, `WROTE ${target}`)
      assert.strictEqual(fs.readFileSync(target, "utf8"), "rewritten\n")
    }).pipe(Effect.provide(realFleet)))

  it.scopedLive("--json-schema gives structuredOutput; a text answer without it is a clear error", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      const cwd = path.join(offline.root, "schema")
      fs.mkdirSync(cwd, { recursive: true })
      const jsonSchema = {
        type: "object",
        properties: { title: { type: "string" }, count: { type: "number" } },
        required: ["title", "count"]
      }
      const result = yield* fleet.run({
        prompt: "STRUCTURED {\"title\":\"fix it\",\"count\":2}",
        jsonSchema,
        cwd,
        env: offline.env
      })
      assert.deepStrictEqual(result.structuredOutput, { title: "fix it", count: 2 })
      const missing = errorOf(
        yield* Effect.exit(fleet.run({ prompt: "STRUCTURED_TEXT", jsonSchema, cwd, env: offline.env, maxTurns: 3 }))
      )
      assert.strictEqual(missing._tag, "StructuredOutputMissing")
    }).pipe(Effect.provide(realFleet)))

  it.scopedLive("maxTurns and maxBudgetUsd stop a run with typed errors carrying cost, turns and session", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      const cwd = path.join(offline.root, "bounds")
      fs.mkdirSync(cwd, { recursive: true })
      const turns = errorOf(yield* Effect.exit(fleet.run({ prompt: "LOOP", maxTurns: 2, cwd, env: offline.env })))
      assert.strictEqual(turns._tag, "MaxTurnsReached")
      if (turns._tag === "MaxTurnsReached") {
        assert.isAtLeast(turns.turns, 2)
        assert.isAbove(turns.costUsd, 0)
        assert.isAbove(turns.sessionId.length, 0)
      }
      const budget = errorOf(
        yield* Effect.exit(fleet.run({ prompt: "EXPENSIVE", maxBudgetUsd: 0.01, cwd, env: offline.env }))
      )
      assert.strictEqual(budget._tag, "BudgetExceeded")
      if (budget._tag === "BudgetExceeded") assert.isAbove(budget.costUsd, 0.01)
    }).pipe(Effect.provide(realFleet)))

  it.scopedLive("an async run's result is found by name, and its session can be resumed later", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      const cwd = path.join(offline.root, "async")
      fs.mkdirSync(cwd, { recursive: true })
      const name = yield* fleet.runAsync({ prompt: "REMEMBER the async fact", name: "bg", cwd, env: offline.env })
      assert.strictEqual(name, "bg")
      const result = yield* fleet.awaitRun("bg")
      const fetched = yield* fleet.runResult("bg")
      assert.deepStrictEqual(fetched, result)
      if (fetched.kind !== "run") return assert.fail("expected a run result")
      yield* fleet.spawn("resumed", { cwd, env: offline.env, resume: fetched.sessionId })
      assert.strictEqual(yield* fleet.ask("resumed", "RECALL"), "The fact is: the async fact")
    }).pipe(Effect.provide(realFleet)))
})
