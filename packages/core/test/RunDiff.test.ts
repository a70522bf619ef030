/**
 * Run diffs over the in-memory Claude and in-memory repositories (`Testing.git` with the files each run wrote),
 * under TestClock: recorded when a run in a worktree ends (however it ends), readable by name while it goes on and
 * after gc or cleanup removed its worktree, kept across a restart of the host, the patch cut at its bound; the
 * typed failures for an unknown run and for one without a worktree; and the pure numstat and patch helpers.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, TestClock } from "effect"
import { Flotta } from "../src/Flotta.js"
import { boundPatch, MAX_PATCH_BYTES, parseNumstat } from "../src/RunDiff.js"
import * as Testing from "../src/Testing.js"
import { eventually, failureOf, fleetTests, host, memoryFleet, shared } from "./support.js"

const REPO = "/repo"

/** What each run wrote, by worktree name: "two" a new file and an edit, "big" a file past the patch's bound. */
const changes: Testing.MemoryGitOptions["changes"] = ({ name }) => {
  if (name === "big") return [{ path: "big.txt", after: "0123456789abcdef\n".repeat(20_000) }]
  if (name === "none") return []
  return [
    { path: "src/add.ts", after: "export const add = (a: number, b: number) => a + b\nexport const one = 1\n" },
    { path: "README.md", before: "# old\ntext\n", after: "# new\ntext\nmore\n" }
  ]
}
const fleet = memoryFleet({ git: Testing.git({ changes }) })
const test = fleetTests(fleet)

describe("run diffs", () => {
  test("a worktree run records its files, counts and patch, and the diff outlives gc of the worktree", (f) =>
    Effect.gen(function*() {
      const result = yield* f.run({ prompt: "hello", name: "two", cwd: REPO, worktree: true })
      assert.strictEqual(result.worktree?.removed, false)
      const diff = yield* f.diff("two")
      assert.deepInclude(diff, {
        name: "two",
        worktree: `${REPO}/.claude/worktrees/two`,
        branch: "worktree-two",
        running: false,
        added: 5,
        removed: 2,
        truncated: false
      })
      assert.deepStrictEqual(diff.files, [
        { path: "README.md", added: 3, removed: 2 },
        { path: "src/add.ts", added: 2, removed: 0 }
      ])
      assert.include(diff.patch, "--- /dev/null\n+++ b/src/add.ts\n@@ -0,0 +1,2 @@\n+export const add")
      assert.include(diff.patch, "-# old\n")
      assert.strictEqual(diff.patchBytes, new TextEncoder().encode(diff.patch).length)

      // Its work is uncommitted: gc keeps it, and with force commits it to its branch, then removes the worktree.
      assert.deepStrictEqual((yield* f.gcWorktrees(REPO)).removed, [])
      const gc = yield* f.gcWorktrees(REPO, { force: true })
      assert.deepStrictEqual(gc.removed, [`${REPO}/.claude/worktrees/two`])
      assert.deepStrictEqual(gc.committed.map((c) => c.files), [["README.md", "src/add.ts"]])
      assert.deepStrictEqual(yield* f.worktrees(REPO), [])
      assert.deepStrictEqual(yield* f.diff("two"), diff)
    }))

  it.effect("a best-of-N run's diff is its winner's; each attempt's is read under its own name", () =>
    Effect.gen(function*() {
      const f = yield* Flotta
      const result = yield* f.run({
        prompt: "hello",
        name: "bo",
        cwd: REPO,
        worktree: true,
        attempts: 2,
        verify: { checks: ["npm test"] }
      })
      assert.strictEqual(result.attempt, 2)
      const [run, winner, loser] = [yield* f.diff("bo"), yield* f.diff("bo-a2"), yield* f.diff("bo-a1")]
      assert.deepStrictEqual(run, { ...winner, name: "bo" })
      assert.deepStrictEqual(run.files.map((file) => file.path), ["second.txt"])
      assert.deepStrictEqual(loser.files.map((file) => file.path), ["first.txt"])
    }).pipe(Effect.provide(memoryFleet({
      git: Testing.git({
        changes: ({ name }) => [{ path: name.endsWith("a2") ? "second.txt" : "first.txt", after: `${name}\n` }],
        check: ({ env }) => (env["FLOTTA_ATTEMPT"] === "2" ? 0 : 1)
      })
    }))))

  test("cleanup and failed runs record theirs too; async runs are read by name", (f) =>
    Effect.gen(function*() {
      const cleaned = yield* f.run({ prompt: "hello", name: "cleaned", cwd: REPO, worktree: true, cleanup: true })
      assert.isTrue(cleaned.worktree?.removed)
      assert.strictEqual((yield* f.diff("cleaned")).files.length, 2)

      const failed = failureOf(
        yield* Effect.exit(f.run({ prompt: "error 500", name: "broke", cwd: REPO, worktree: true }))
      )
      assert.strictEqual(failed._tag, "TurnFailed")
      assert.deepStrictEqual((yield* f.diff("broke")).files.map((file) => file.path), ["README.md", "src/add.ts"])

      const name = yield* f.runAsync({ prompt: "hello", name: "none", cwd: REPO, worktree: true })
      yield* f.awaitRun(name)
      assert.deepInclude(yield* f.diff("none"), { files: [], added: 0, removed: 0, patch: "", patchBytes: 0 })
    }))

  test("while a run goes on, its diff is its changes so far", (f) =>
    Effect.gen(function*() {
      const running = yield* Effect.fork(f.run({ prompt: "slow 5000 work", name: "busy", cwd: REPO, worktree: true }))
      const live = yield* eventually(Effect.either(f.diff("busy")), (e) => e._tag === "Right")
      assert.isTrue(live._tag === "Right" && live.right.running)
      yield* TestClock.adjust("5 seconds")
      yield* Fiber.join(running)
      assert.isFalse((yield* f.diff("busy")).running)
    }))

  test("an unknown run is RunNotFound; a run without a worktree, sync or async, is NoDiff", (f) =>
    Effect.gen(function*() {
      const unknown = failureOf(yield* Effect.exit(f.diff("ghost")))
      assert.strictEqual(unknown._tag, "RunNotFound")
      assert.strictEqual(unknown.message, `no run named "ghost"`)
      yield* f.run({ prompt: "hello", name: "plain" })
      const sync = failureOf(yield* Effect.exit(f.diff("plain")))
      assert.strictEqual(sync._tag, "NoDiff")
      assert.match(sync.message, /run "plain" had no worktree/)
      yield* f.awaitRun(yield* f.runAsync({ prompt: "hello", name: "later" }))
      assert.strictEqual(failureOf(yield* Effect.exit(f.diff("later")))._tag, "NoDiff")
    }))

  test("a patch past the bound is cut at a line, its full size kept", (f) =>
    Effect.gen(function*() {
      yield* f.run({ prompt: "hello", name: "big", cwd: REPO, worktree: true })
      const diff = yield* f.diff("big")
      assert.isTrue(diff.truncated)
      assert.deepStrictEqual(diff.files, [{ path: "big.txt", added: 20_000, removed: 0 }])
      assert.isAbove(diff.patchBytes, MAX_PATCH_BYTES)
      assert.isAtMost(diff.patch.length, MAX_PATCH_BYTES)
      assert.isTrue(diff.patch.endsWith("+0123456789abcdef\n"))
    }))

  it.effect("the recorded diff is read back from the store after a restart of the host", () =>
    Effect.gen(function*() {
      const where = shared("flotta-diff")
      const options = { git: Testing.git({ changes }) }
      yield* host(where, options)((f) => f.run({ prompt: "hello", name: "kept", cwd: REPO, worktree: true }))
      const again = yield* host(where, options)((f) => f.diff("kept"))
      assert.deepStrictEqual(again.files.map((file) => file.path), ["README.md", "src/add.ts"])
    }))

  it("numstat is read with binary files and odd names; a patch is cut after its last whole line", () => {
    assert.deepStrictEqual(parseNumstat("3\t1\ta.ts\0-\t-\timg.png\0" + "1\t0\tname with\ttab\0"), [
      { path: "a.ts", added: 3, removed: 1 },
      { path: "img.png", added: null, removed: null },
      { path: "name with\ttab", added: 1, removed: 0 }
    ])
    const bytes = new TextEncoder().encode("line one\nline two\nline three\n")
    assert.deepStrictEqual(boundPatch(bytes, bytes.length, 100), {
      patch: "line one\nline two\nline three\n",
      patchBytes: 29,
      truncated: false
    })
    assert.deepStrictEqual(boundPatch(bytes.subarray(0, 21), bytes.length, 20), {
      patch: "line one\nline two\n",
      patchBytes: 29,
      truncated: true
    })
  })
})
