/**
 * Garbage collection of run worktrees over the in-memory Claude and in-memory repositories (`Testing.git`), under
 * TestClock: a clean worktree goes; one with uncommitted work is kept (naming its files), or with `force` its work is
 * committed to its branch first and named, or with `force` and `discard` dropped and named; `discard` alone is
 * refused; a worktree a run uses or that is locked is never touched; a commit that fails keeps the worktree and says
 * why. Also the pure reading of `git status --porcelain -z`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { Flotta } from "../src/Flotta.js"
import { Git } from "../src/Git.js"
import * as Testing from "../src/Testing.js"
import { parseStatus } from "../src/Worktrees.js"
import { eventually, failureOf, memoryFleet } from "./support.js"

const REPO = "/repo"
const tree = (name: string) => `${REPO}/.claude/worktrees/${name}`

/** What each run wrote, by its worktree's name: "tidy" nothing, "hooked" a file whose commit a hook refuses. */
const changes: Testing.MemoryGitOptions["changes"] = ({ name }) =>
  name === "tidy" ? [] : [
    { path: "README.md", before: "teh\n", after: "the\n" },
    { path: `notes/${name}.md`, after: `${name}\n` }
  ]
const commitFails: Testing.MemoryGitOptions["commitFails"] = ({ name }) =>
  name === "hooked" ? "the prepare-commit-msg hook exited with 1" : undefined

const fleet = memoryFleet({ git: Testing.git({ changes, commitFails }) })

/** Runs in worktrees, one per name, each ended (so unlocked). */
const runsIn = (names: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const f = yield* Flotta
    for (const name of names) yield* f.run({ prompt: "hello", name, cwd: REPO, worktree: true })
    return f
  })

describe("gcWorktrees", () => {
  it.effect("removes a clean worktree and keeps one with uncommitted work, naming its files", () =>
    Effect.gen(function*() {
      const f = yield* runsIn(["tidy", "typo"])
      const result = yield* f.gcWorktrees(REPO)
      assert.deepStrictEqual(result.removed, [tree("tidy")])
      assert.deepStrictEqual(result.committed, [])
      assert.deepStrictEqual(result.discarded, [])
      assert.deepStrictEqual(result.kept, [{
        path: tree("typo"),
        reason: "it has uncommitted changes to README.md, notes/typo.md (use force to commit them to its branch and " +
          "remove it)"
      }])
      assert.deepStrictEqual((yield* f.worktrees(REPO)).map((w) => [w.path, w.clean]), [[tree("typo"), false]])
    }).pipe(Effect.provide(fleet)))

  it.effect("with force, commits a worktree's work to its branch first, names the commit and files, then removes it", () =>
    Effect.gen(function*() {
      const f = yield* runsIn(["typo", "tidy"])
      const diff = yield* f.diff("typo")
      const result = yield* f.gcWorktrees(REPO, { force: true })
      assert.deepStrictEqual(result.removed, [tree("typo"), tree("tidy")])
      assert.strictEqual(result.committed.length, 1)
      const [saved] = result.committed
      assert.deepInclude(saved, { path: tree("typo"), branch: "worktree-typo", files: ["README.md", "notes/typo.md"] })
      assert.match(saved!.commit, /^memory0*1$/)
      assert.notStrictEqual(saved!.commit, diff.base, "a new commit, not the one the run started from")
      assert.deepStrictEqual(result.discarded, [])
      assert.deepStrictEqual(result.kept, [])
      assert.deepStrictEqual(yield* f.worktrees(REPO), [])
      // What the run changed is still readable by its name.
      assert.deepStrictEqual(yield* f.diff("typo"), diff)
    }).pipe(Effect.provide(fleet)))

  it.effect("with force and discard, drops the uncommitted work and names each file it drops", () =>
    Effect.gen(function*() {
      const f = yield* runsIn(["typo", "tidy"])
      const result = yield* f.gcWorktrees(REPO, { force: true, discard: true })
      assert.deepStrictEqual(result.removed, [tree("typo"), tree("tidy")])
      assert.deepStrictEqual(result.committed, [])
      assert.deepStrictEqual(result.discarded, [{
        path: tree("typo"),
        branch: "worktree-typo",
        files: ["README.md", "notes/typo.md"]
      }])
      assert.deepStrictEqual(yield* f.worktrees(REPO), [])
    }).pipe(Effect.provide(fleet)))

  it.effect("discard without force is InvalidSpec, and nothing is touched", () =>
    Effect.gen(function*() {
      const f = yield* runsIn(["typo", "tidy"])
      const error = failureOf(yield* Effect.exit(f.gcWorktrees(REPO, { discard: true })))
      assert.strictEqual(error._tag, "InvalidSpec")
      assert.strictEqual(
        error.message,
        "invalid spec at discard: it drops uncommitted work, so it needs force: true as well"
      )
      assert.strictEqual((yield* f.worktrees(REPO)).length, 2)
    }).pipe(Effect.provide(fleet)))

  it.effect("a commit that fails keeps the worktree and says why; the others go on", () =>
    Effect.gen(function*() {
      const f = yield* runsIn(["hooked", "typo"])
      const result = yield* f.gcWorktrees(REPO, { force: true })
      assert.deepStrictEqual(result.removed, [tree("typo")])
      assert.deepStrictEqual(result.committed.map((c) => c.path), [tree("typo")])
      assert.deepStrictEqual(result.kept, [{
        path: tree("hooked"),
        reason: "it has uncommitted changes to README.md, notes/hooked.md, and committing them failed, so it stays: " +
          "the prepare-commit-msg hook exited with 1"
      }])
      assert.deepInclude((yield* f.worktrees(REPO))[0]!, { path: tree("hooked"), clean: false })
    }).pipe(Effect.provide(fleet)))

  it.effect("never touches the worktree of a run that goes on, even with force and discard", () =>
    Effect.gen(function*() {
      const f = yield* Flotta
      const going = yield* f.run({ prompt: "slow 5000 busy", name: "going", cwd: REPO, worktree: true }).pipe(
        Effect.fork
      )
      yield* eventually(f.worktrees(REPO), (trees) => trees.length === 1)
      const result = yield* f.gcWorktrees(REPO, { force: true, discard: true })
      assert.deepStrictEqual(result.removed, [])
      assert.deepStrictEqual(result.kept, [{ path: tree("going"), reason: "its run is still going" }])
      yield* Fiber.interrupt(going)
    }).pipe(Effect.provide(fleet)))

  it.effect("a locked worktree no run of this fleet uses (another process's run) is kept too", () =>
    Effect.gen(function*() {
      const git = yield* Git
      yield* git.create(REPO, "elsewhere")
      const result = yield* git.gc(REPO, { busy: new Set(), force: true, discard: true })
      assert.deepStrictEqual(result.removed, [])
      assert.deepStrictEqual(result.kept, [{
        path: tree("elsewhere"),
        reason: "it is locked; if no run uses it any more, `git worktree unlock <path>` releases it"
      }])
      yield* git.unlock(tree("elsewhere"))
      const after = yield* git.gc(REPO, { busy: new Set(), force: true })
      assert.deepStrictEqual(after.committed.map((c) => [c.path, c.branch]), [[
        tree("elsewhere"),
        "worktree-elsewhere"
      ]])
    }).pipe(Effect.provide(Testing.git({ changes }))))
})

describe("parseStatus", () => {
  it("reads `git status --porcelain -z`: edits, deletions, new files, a rename's new path, names with spaces", () => {
    const text = [" M README.md", "D  gone.txt", "?? notes/new file.md", "R  moved.ts", "old.ts", "AM src/a.ts", ""]
      .join("\0")
    assert.deepStrictEqual(parseStatus(text), ["README.md", "gone.txt", "moved.ts", "notes/new file.md", "src/a.ts"])
    assert.deepStrictEqual(parseStatus(""), [])
  })
})
