import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, TestClock } from "effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { Flotta } from "../src/Flotta.js"
import { fakeFleet, tempDir } from "./support.js"

const tagOf = <A, E>(exit: Exit.Exit<A, E>) =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? (exit.cause.error as { _tag: string })._tag : "success"

const errorOf = <A, E>(exit: Exit.Exit<A, E>): E => {
  if (Exit.isFailure(exit) && exit.cause._tag === "Fail") return exit.cause.error
  throw new Error(`expected a typed failure, got ${String(exit)}`)
}

const git = (cwd: string, ...args: Array<string>) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd, encoding: "utf8" }).trim()

/** A repository with one commit, in a temp dir. */
const repo = Effect.gen(function*() {
  const dir = yield* tempDir
  git(dir, "init", "-q", "-b", "main")
  fs.writeFileSync(path.join(dir, "README"), "hello\n")
  git(dir, "add", "README")
  git(dir, "commit", "-qm", "first")
  return fs.realpathSync(dir)
})

describe("runs (fake CLI)", () => {
  it.scopedLive("a run takes one turn, returns its result, and is gone afterwards", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const result = yield* fleet.run({ prompt: "hello", name: "once", maxTurns: 3, maxBudgetUsd: 0.5 })
      assert.strictEqual(result.kind, "run")
      assert.strictEqual(result.name, "once")
      assert.strictEqual(result.text, "echo: hello")
      assert.closeTo(result.costUsd, 0.001, 1e-9)
      assert.isString(result.sessionId)
      assert.deepStrictEqual(yield* fleet.list, [])
      const kinds = (yield* fleet.reports({ agent: "once" })).entries.map((e) => e.kind)
      assert.deepStrictEqual(kinds, ["spawned", "result", "closed"])
    }).pipe(Effect.provide(fakeFleet())))

  it.scopedLive("bounds and schema become CLI flags", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const schema = { type: "object", properties: { a: { type: "number" } } }
      const exit = yield* Effect.exit(
        fleet.run({ prompt: "args", maxTurns: 4, maxBudgetUsd: 0.25, jsonSchema: schema, name: "flags" })
      )
      // The fake gives no structured output: a schema run without it is a clear failure.
      const error = errorOf(exit)
      assert.strictEqual(error._tag, "StructuredOutputMissing")
      const args = JSON.parse((error as unknown as { text: string }).text) as Array<string>
      assert.strictEqual(args[args.indexOf("--max-turns") + 1], "4")
      assert.strictEqual(args[args.indexOf("--max-budget-usd") + 1], "0.25")
      assert.deepStrictEqual(JSON.parse(args[args.indexOf("--json-schema") + 1]!), schema)
      const kinds = (yield* fleet.reports({ agent: "flags" })).entries.map((e) => e.kind)
      assert.deepStrictEqual(kinds, ["spawned", "error", "closed"])
    }).pipe(Effect.provide(fakeFleet())))

  it.scopedLive("bad options are named", () =>
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
        const error = errorOf(yield* Effect.exit(fleet.run(options)))
        assert.strictEqual(error._tag, "InvalidSpec")
        assert.strictEqual((error as { path: string }).path, field)
      }
      assert.strictEqual(tagOf(yield* Effect.exit(fleet.run({ prompt: "x", name: "../up" }))), "InvalidName")
      assert.strictEqual(tagOf(yield* Effect.exit(fleet.run({ prompt: "x", worktree: "a/b" }))), "InvalidName")
    }).pipe(Effect.provide(fakeFleet())))

  it.scopedLive("runAsync returns the name at once; runResult is TurnPending, then the result", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const name = yield* fleet.runAsync({ prompt: "slow 300 async", name: "later" })
      assert.strictEqual(name, "later")
      assert.strictEqual(tagOf(yield* Effect.exit(fleet.runResult("later"))), "TurnPending")
      assert.strictEqual(
        tagOf(yield* Effect.exit(fleet.runAsync({ prompt: "x", name: "later" }))),
        "AgentAlreadyExists"
      )
      const result = yield* fleet.awaitRun("later")
      assert.strictEqual(result.kind === "run" ? result.text : "", "slow done async")
      const again = yield* fleet.runResult("later")
      assert.strictEqual(again.kind, "run")
      assert.strictEqual(tagOf(yield* Effect.exit(fleet.runResult("never-ran"))), "RunNotFound")
      const generated = yield* fleet.runAsync({ prompt: "x" })
      assert.match(generated, /^run-[0-9a-f]{8}$/)
    }).pipe(Effect.provide(fakeFleet())))

  it.scopedLive("a run's failure is kept by name", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      yield* fleet.runAsync({ prompt: "error 500", name: "doomed" })
      yield* Effect.exit(fleet.awaitRun("doomed"))
      assert.strictEqual(tagOf(yield* Effect.exit(fleet.runResult("doomed"))), "TurnFailed")
    }).pipe(Effect.provide(fakeFleet())))

  it.scoped("a run's timeout interrupts it: TurnTimeout with what it had spent", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const fiber = yield* Effect.fork(Effect.exit(fleet.run({ prompt: "hang", name: "bounded", timeout: "1 minute" })))
      for (let i = 0; i < 500 && (yield* fleet.list).length === 0; i++) {
        yield* Effect.promise(() => new Promise((r) => setTimeout(r, 10)))
      }
      yield* Effect.promise(() => new Promise((r) => setTimeout(r, 100)))
      yield* TestClock.adjust("1 minute")
      const error = errorOf(yield* Fiber.join(fiber))
      assert.strictEqual(error._tag, "TurnTimeout")
      if (error._tag === "TurnTimeout") {
        assert.isString(error.sessionId)
        assert.isNumber(error.costUsd)
      }
    }).pipe(Effect.provide(fakeFleet())))

  it.scopedLive("a template's fields apply and the call's options override them", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const dir = yield* tempDir
      yield* fleet.boot({ agents: [{ name: "tpl", lifecycle: "run", prompt: "cwd", cwd: dir, model: "opus" }] })
      const fromTemplate = yield* fleet.run({ template: "tpl" })
      assert.strictEqual(fromTemplate.text, fs.realpathSync(dir))
      assert.match(fromTemplate.name, /^tpl-[0-9a-f]{8}$/)
      const overridden = yield* fleet.run({ template: "tpl", prompt: "args" })
      const args = JSON.parse(overridden.text) as Array<string>
      assert.strictEqual(args[args.indexOf("--model") + 1], "opus")
    }).pipe(Effect.provide(fakeFleet())))
})

describe("worktrees (fake CLI, real git)", () => {
  it.scopedLive("worktree: true runs in <repo>/.claude/worktrees/<name> on worktree-<name>; the checkout is untouched", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const dir = yield* repo
      const result = yield* fleet.run({ prompt: "cwd", cwd: dir, worktree: true, name: "iso" })
      const expected = path.join(dir, ".claude", "worktrees", "iso")
      assert.strictEqual(result.text, expected)
      assert.deepStrictEqual(result.worktree, { path: expected, branch: "worktree-iso", removed: false })
      assert.strictEqual(git(dir, "status", "--porcelain"), "", "the user's checkout shows nothing new")
      const listed = yield* fleet.worktrees(dir)
      assert.strictEqual(listed.length, 1)
      assert.deepInclude(listed[0]!, { path: expected, branch: "worktree-iso", clean: true, locked: false })
    }).pipe(Effect.provide(fakeFleet())))

  it.scopedLive("a cwd outside git with worktree set is NotAGitRepo", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const dir = yield* tempDir
      const error = errorOf(yield* Effect.exit(fleet.run({ prompt: "x", cwd: dir, worktree: true })))
      assert.strictEqual(error._tag, "NotAGitRepo")
    }).pipe(Effect.provide(fakeFleet())))

  it.scopedLive("cleanup removes the worktree after success and keeps its branch", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const dir = yield* repo
      const result = yield* fleet.run({ prompt: "hi", cwd: dir, worktree: "tidy", cleanup: true, name: "tidy-run" })
      assert.isTrue(result.worktree?.removed)
      assert.isFalse(fs.existsSync(path.join(dir, ".claude", "worktrees", "tidy")))
      assert.include(git(dir, "branch", "--list", "worktree-tidy"), "worktree-tidy")
      assert.notInclude(git(dir, "worktree", "list"), "tidy")
    }).pipe(Effect.provide(fakeFleet())))

  it.scopedLive("gcWorktrees removes clean ones, keeps dirty ones unless forced, never a running run's", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const dir = yield* repo
      yield* fleet.run({ prompt: "x", cwd: dir, worktree: true, name: "clean-one" })
      yield* fleet.run({ prompt: "x", cwd: dir, worktree: true, name: "dirty-one" })
      fs.writeFileSync(path.join(dir, ".claude", "worktrees", "dirty-one", "scratch.txt"), "unsaved\n")
      yield* fleet.runAsync({ prompt: "slow 2000 busy", cwd: dir, worktree: true, name: "busy-one" })
      for (let i = 0; i < 200 && (yield* fleet.worktrees(dir)).length < 3; i++) {
        yield* Effect.sleep("20 millis")
      }
      const first = yield* fleet.gcWorktrees(dir)
      assert.deepStrictEqual(first.removed.map((p) => path.basename(p)), ["clean-one"])
      assert.deepStrictEqual(first.kept.map((k) => path.basename(k.path)).sort(), ["busy-one", "dirty-one"])
      yield* fleet.awaitRun("busy-one")
      const forced = yield* fleet.gcWorktrees(dir, { force: true })
      assert.deepStrictEqual(forced.removed.map((p) => path.basename(p)).sort(), ["busy-one", "dirty-one"])
      assert.strictEqual(git(dir, "worktree", "list").split("\n").length, 1)
    }).pipe(Effect.provide(fakeFleet())))
})

describe("verify", () => {
  it.scopedLive("runs checks in a throwaway worktree of the branch, with real exit codes, then removes it", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const dir = yield* repo
      git(dir, "checkout", "-qb", "feature")
      fs.writeFileSync(path.join(dir, "feature.txt"), "on the branch\n")
      git(dir, "add", "feature.txt")
      git(dir, "commit", "-qm", "feature")
      git(dir, "checkout", "-q", "main")
      const result = yield* fleet.verify(dir, {
        branch: "feature",
        checks: ["cat feature.txt", "exit 3", "sleep 30"],
        timeout: "1 second",
        name: "gate"
      })
      assert.isFalse(result.passed)
      const [cat, three, sleep] = result.checks
      assert.deepInclude(cat!, { command: "cat feature.txt", ok: true, exitCode: 0, timedOut: false })
      assert.include(cat!.output, "on the branch")
      assert.deepInclude(three!, { ok: false, exitCode: 3, timedOut: false })
      assert.deepInclude(sleep!, { ok: false, timedOut: true })
      assert.strictEqual(git(dir, "worktree", "list").split("\n").length, 1, "the throwaway worktree is gone")
      assert.isFalse(fs.existsSync(path.join(dir, "feature.txt")), "the user's checkout is untouched")
      const passing = yield* fleet.verify(dir, { branch: "feature", checks: ["test -f feature.txt"] })
      assert.isTrue(passing.passed)
      const kinds = (yield* fleet.reports({ agent: "gate" })).entries.map((e) => e.kind)
      assert.deepStrictEqual(kinds, ["spawned", "result", "closed"])
    }).pipe(Effect.provide(fakeFleet())))

  it.scopedLive("a branch that does not exist is BranchNotFound; no checks is InvalidSpec", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const dir = yield* repo
      const error = errorOf(yield* Effect.exit(fleet.verify(dir, { branch: "nope", checks: ["true"] })))
      assert.strictEqual(error._tag, "BranchNotFound")
      assert.include(error.message, "nope")
      assert.strictEqual(tagOf(yield* Effect.exit(fleet.verify(dir, { branch: "main", checks: [] }))), "InvalidSpec")
      const outside = yield* tempDir
      assert.strictEqual(
        tagOf(yield* Effect.exit(fleet.verify(outside, { branch: "main", checks: ["true"] }))),
        "NotAGitRepo"
      )
    }).pipe(Effect.provide(fakeFleet())))

  it.scopedLive("verifyAsync mirrors runAsync", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const dir = yield* repo
      const name = yield* fleet.verifyAsync(dir, { branch: "main", checks: ["sleep 0.3", "true"] })
      assert.match(name, /^verify-/)
      assert.strictEqual(tagOf(yield* Effect.exit(fleet.runResult(name))), "TurnPending")
      const verdict = yield* fleet.awaitRun(name)
      assert.isTrue(verdict.kind === "verify" && verdict.passed)
    }).pipe(Effect.provide(fakeFleet())))
})
