/**
 * Garbage collection of run worktrees: what it may do (`GcOptions`), what it did (`GcResult`, a Schema, as the MCP
 * tool and `--json` give it), and the one policy (`collect`) that both repository seams run, git here (`gc`) and the
 * one in memory (`Testing.git`). Uncommitted work is never lost without being asked: `force` commits it to the
 * worktree's branch before removing it, and only `force` with `discard` drops it, naming each file.
 */
import type * as CommandExecutor from "@effect/platform/CommandExecutor"
import type * as FileSystem from "@effect/platform/FileSystem"
import { Effect, Schema } from "effect"
import * as path from "node:path"
import { InvalidSpec, type NotAGitRepo, WorktreeFailed } from "./Errors.js"
import { someFiles } from "./RunDiff.js"
import * as Worktrees from "./Worktrees.js"
import type { Worktree, WorktreeInfo } from "./Worktrees.js"

/** What `gc` may do to a worktree with uncommitted changes. */
export interface GcOptions {
  /** Collect those too: their work is committed to their branch first, then the worktree goes. */
  readonly force?: boolean
  /** With `force`: remove them without committing, dropping their uncommitted changes (each named in the result). */
  readonly discard?: boolean
}

const GcPath = Schema.String.annotations({ description: "The worktree's path" })
const GcFiles = Schema.Array(Schema.String).annotations({
  description: "The files it had uncommitted changes to (tracked edits, and new files that are not ignored)"
})

/** What `gc` removed (the work it committed first, the work it dropped) and what it kept, and why. */
export const GcResult = Schema.Struct({
  removed: Schema.Array(Schema.String).annotations({ description: "Every worktree removed, by path" }),
  committed: Schema.Array(Schema.Struct({
    path: GcPath,
    branch: Schema.String.annotations({ description: "The branch its work was committed to, which stays" }),
    commit: Schema.String.annotations({ description: "The commit that holds it" }),
    files: GcFiles
  })).annotations({ description: "Removed worktrees whose uncommitted work was first committed to their branch" }),
  discarded: Schema.Array(Schema.Struct({
    path: GcPath,
    branch: Schema.String.annotations({ description: "Its branch, which stays as it was" }),
    files: GcFiles
  })).annotations({
    description: "Removed worktrees whose uncommitted changes were dropped (discard)"
  }),
  kept: Schema.Array(Schema.Struct({
    path: GcPath,
    reason: Schema.String.annotations({ description: "Why it stays, and what would collect it" })
  })).annotations({
    description: "Worktrees left as they are, and why"
  })
})
export type GcResult = typeof GcResult.Type

/** What `collect` needs of a repository: the seam's own operations, from git or from memory. */
export interface GcOps<E, R> {
  readonly repoRoot: (cwd: string) => Effect.Effect<string, E, R>
  readonly list: (repo: string) => Effect.Effect<ReadonlyArray<WorktreeInfo>, E, R>
  readonly changedFiles: (worktree: Worktree) => Effect.Effect<ReadonlyArray<string>, WorktreeFailed, R>
  readonly commitAll: (worktree: Worktree, message: string) => Effect.Effect<string, WorktreeFailed, R>
  readonly remove: (repo: string, worktreePath: string) => Effect.Effect<void, WorktreeFailed, R>
}

/** The message of the commit that saves a worktree's uncommitted work before gc removes it. */
export const gcCommitMessage = (worktree: Worktree) =>
  `flotta gc: the uncommitted work of ${path.basename(worktree.path)}, saved before its worktree was removed`

/**
 * Garbage-collects run worktrees on a repository seam: a worktree whose run goes on (`busy`) or that is locked is
 * never touched; a clean one is removed; one with uncommitted changes is kept, or with `force` its work is committed
 * to its branch first (kept, and why, when that commit fails or it is on no branch), or with `force` and `discard`
 * removed with its changes dropped. Branches always stay. `gc` is this on git, `Testing.git` in memory.
 */
export const collect = Effect.fnUntraced(
  function*<E, R>(ops: GcOps<E, R>, cwd: string, options: GcOptions & { readonly busy: ReadonlySet<string> }) {
    const repo = yield* ops.repoRoot(cwd)
    const removed: Array<string> = []
    const committed: Array<GcResult["committed"][number]> = []
    const discarded: Array<GcResult["discarded"][number]> = []
    const kept: Array<{ path: string; reason: string }> = []
    const keep = (worktree: Worktree, reason: string) => kept.push({ path: worktree.path, reason })
    /** Removes it, then `after`; kept when removing fails, the reason after `done` (what was done before). */
    const removing = (worktree: Worktree, after: () => void, done = "") =>
      Effect.match(ops.remove(repo, worktree.path), {
        onFailure: (e) => keep(worktree, `${done}removing it failed: ${e.reason}`),
        onSuccess: () => {
          removed.push(worktree.path)
          after()
        }
      })
    for (const worktree of yield* ops.list(repo)) {
      if (options.busy.has(worktree.path)) {
        keep(worktree, "its run is still going")
        continue
      }
      if (worktree.locked) {
        keep(worktree, "it is locked; if no run uses it any more, `git worktree unlock <path>` releases it")
        continue
      }
      if (worktree.clean) {
        yield* removing(worktree, () => {})
        continue
      }
      const files = yield* ops.changedFiles(worktree).pipe(Effect.either)
      if (files._tag === "Left") {
        keep(worktree, `its changes could not be read: ${files.left.reason}`)
        continue
      }
      const changes = `uncommitted changes to ${someFiles(files.right)}`
      if (options.force !== true) {
        keep(worktree, `it has ${changes} (use force to commit them to its branch and remove it)`)
        continue
      }
      if (options.discard === true) {
        yield* removing(
          worktree,
          () => discarded.push({ path: worktree.path, branch: worktree.branch, files: files.right })
        )
        continue
      }
      if (worktree.branch.length === 0) {
        const how = "commit them yourself, or use force with discard to drop them"
        keep(worktree, `it has ${changes} and is on no branch to commit them to: ${how}`)
        continue
      }
      const commit = yield* ops.commitAll(worktree, gcCommitMessage(worktree)).pipe(Effect.either)
      if (commit._tag === "Left") {
        keep(worktree, `it has ${changes}, and committing them failed, so it stays: ${commit.left.reason}`)
        continue
      }
      yield* removing(
        worktree,
        () =>
          committed.push({ path: worktree.path, branch: worktree.branch, commit: commit.right, files: files.right }),
        `its work was committed to ${worktree.branch} (${commit.right.slice(0, 12)}), but `
      )
    }
    return { removed, committed, discarded, kept }
  }
)

/** A git failure on the worktree at `path`, as `WorktreeFailed`. */
const failedAt = (at: string) =>
  Effect.mapError((e: { readonly reason: string }) => new WorktreeFailed({ path: at, reason: e.reason }))

/** `collect` on git here: see there. */
export const gc = Effect.fnUntraced(
  function*(cwd: string, options: GcOptions & { readonly busy: ReadonlySet<string> }) {
    return yield* collect<NotAGitRepo | WorktreeFailed, CommandExecutor.CommandExecutor | FileSystem.FileSystem>(
      {
        repoRoot: Worktrees.repoRoot,
        list: Worktrees.list,
        changedFiles: (worktree) => Worktrees.changedFiles(worktree.path).pipe(failedAt(worktree.path)),
        commitAll: (worktree, message) => Worktrees.commitAll(worktree, message).pipe(failedAt(worktree.path)),
        remove: (repo, worktreePath) => Worktrees.remove(repo, worktreePath).pipe(failedAt(worktreePath))
      },
      cwd,
      options
    )
  }
)

/** `discard` drops uncommitted work, so it is refused without `force` (`InvalidSpec`, naming it). */
export const checkOptions = Effect.fnUntraced(function*(options: GcOptions) {
  return yield* options.discard === true && options.force !== true
    ? new InvalidSpec({ path: "discard", reason: "it drops uncommitted work, so it needs force: true as well" })
    : Effect.void
})
