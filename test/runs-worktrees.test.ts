/**
 * Run worktrees, gc and verify: the engine over the fake CLI script with real git repositories.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Schedule } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { Flotta } from "../packages/core/src/Flotta.js"
import { fakeFleet, tempDir } from "../packages/core/test/support.js"
import { git, newRepo } from "./support/git.js"

const tagOf = <A, E>(exit: Exit.Exit<A, E>) =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? (exit.cause.error as { _tag: string })._tag : "success"

const errorOf = <A, E>(exit: Exit.Exit<A, E>): E => {
  if (Exit.isFailure(exit) && exit.cause._tag === "Fail") return exit.cause.error
  throw new Error(`expected a typed failure, got ${String(exit)}`)
}

/** A repository with one commit, in a temp dir. */
const repo = Effect.gen(function*() {
  const dir = yield* tempDir
  return fs.realpathSync(newRepo(dir))
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

  it.scopedLive("a run that writes two files records its diff (files, counts, patch); it outlives gc of the worktree", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const dir = yield* repo
      const base = git(dir, "rev-parse", "HEAD")
      const files = {
        "README": "hi\nthere\n",
        "src/new.ts": "export const a = 1\nexport const b = 2\nexport const c = 3\n"
      }
      const result = yield* fleet.run({
        prompt: `write ${JSON.stringify(files)}`,
        cwd: dir,
        worktree: true,
        name: "scribe"
      })
      assert.strictEqual(result.text, "wrote README, src/new.ts")
      const tree = path.join(dir, ".claude", "worktrees", "scribe")
      const diff = yield* fleet.diff("scribe")
      assert.deepInclude(diff, { name: "scribe", worktree: tree, branch: "worktree-scribe", base, running: false })
      assert.deepStrictEqual(diff.files, [
        { path: "README", added: 2, removed: 1 },
        { path: "src/new.ts", added: 3, removed: 0 }
      ])
      assert.deepInclude(diff, { added: 5, removed: 1, truncated: false })
      assert.include(diff.patch, "diff --git a/README b/README")
      assert.include(diff.patch, "-hello\n+hi\n+there\n")
      assert.include(diff.patch, "new file mode 100644")
      assert.include(diff.patch, "+++ b/src/new.ts\n@@ -0,0 +1,3 @@\n+export const a = 1\n")
      assert.strictEqual(diff.patchBytes, Buffer.byteLength(diff.patch))
      // The worktree's own index is untouched: the new file is still untracked there.
      assert.include(git(tree, "status", "--porcelain"), "?? src/")

      const collected = yield* fleet.gcWorktrees(dir, { force: true })
      assert.deepStrictEqual(collected.removed, [tree])
      assert.isFalse(fs.existsSync(tree))
      assert.deepStrictEqual(yield* fleet.diff("scribe"), diff)

      // With cleanup, which commits what the run left and removes its worktree, the diff is kept the same way.
      const second = { "notes.md": "one\n" }
      yield* fleet.run({
        prompt: `write ${JSON.stringify(second)}`,
        cwd: dir,
        worktree: true,
        cleanup: true,
        name: "tidy-scribe"
      })
      assert.deepStrictEqual((yield* fleet.diff("tidy-scribe")).files, [{ path: "notes.md", added: 1, removed: 0 }])
      assert.strictEqual(tagOf(yield* Effect.exit(fleet.diff("nobody"))), "RunNotFound")
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
      // The dirty one's work was committed to its branch first.
      assert.deepStrictEqual(forced.committed.map((c) => [path.basename(c.path), c.branch, c.files]), [
        ["dirty-one", "worktree-dirty-one", ["scratch.txt"]]
      ])
      assert.strictEqual(git(dir, "show", "worktree-dirty-one:scratch.txt"), "unsaved")
      assert.strictEqual(git(dir, "rev-parse", "worktree-dirty-one"), forced.committed[0]!.commit)
      assert.strictEqual(
        git(dir, "log", "-1", "--format=%s", "worktree-dirty-one"),
        "flotta gc: the uncommitted work of dirty-one, saved before its worktree was removed"
      )
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

describe("an async run in a worktree when the host stops (fake CLI, real git, SQLite store)", () => {
  it.scopedLive("ends as HostRestarted on the next start; its worktree is kept, listed and unlocked", () =>
    Effect.gen(function*() {
      const dir = yield* repo
      const store = { sqlite: path.join(yield* tempDir, "state.db") }
      // The first host: the run starts, its child hangs, and the host stops (gracefully: its scope closes).
      yield* Effect.scoped(Effect.gen(function*() {
        const fleet = Context.get(yield* Layer.build(fakeFleet({ store })), Flotta)
        yield* fleet.runAsync({ name: "long", prompt: "hang", cwd: dir, worktree: true })
        // Running: its worktree is made and locked, and its agent is live.
        yield* fleet.worktrees(dir).pipe(
          Effect.filterOrFail((ws) => ws.length === 1 && ws[0]!.locked),
          Effect.zipRight(fleet.status("long")),
          Effect.retry(Schedule.spaced("50 millis"))
        )
      }))
      const fleet = Context.get(yield* Layer.build(fakeFleet({ store })), Flotta)
      const expected = path.join(dir, ".claude", "worktrees", "long")
      assert.deepStrictEqual(fleet.restored.interruptedRuns, ["long"])
      const error = errorOf(yield* Effect.exit(fleet.runResult("long")))
      assert.strictEqual(error._tag, "HostRestarted")
      assert.strictEqual(error._tag === "HostRestarted" ? error.worktree : null, expected)
      const [kept] = yield* fleet.worktrees(dir)
      assert.deepInclude(kept!, { path: expected, branch: "worktree-long", locked: false })
    }))
})
