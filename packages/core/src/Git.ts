/**
 * What runs, attempts and verifies do to a repository, as a seam: find it, make a worktree for a run and lock it,
 * unlock it, commit what a run left, read what it changed (`diff`), remove it, list and collect the run worktrees,
 * verify a branch, and run shell checks in a directory. `Git.live` is git and `sh` on this machine (the functions of `Worktrees`);
 * `@flotta/core/Testing` can keep worktrees in memory instead, with checks that are functions.
 */
import * as CommandExecutor from "@effect/platform/CommandExecutor"
import * as FileSystem from "@effect/platform/FileSystem"
import { Context, Effect, Layer } from "effect"
import type { Duration } from "effect"
import { WorktreeFailed } from "./Errors.js"
import type { BranchNotFound, NotAGitRepo } from "./Errors.js"
import type { Changes } from "./RunDiff.js"
import * as WorktreeGc from "./WorktreeGc.js"
import * as Worktrees from "./Worktrees.js"

export interface ChecksOptions {
  /** Per check (default 10 minutes). */
  readonly timeout?: Duration.DurationInput
  /** Added to each check's environment. */
  readonly env?: Record<string, string>
}

export interface GitShape {
  /** The root of the repository that holds `cwd`. */
  readonly repoRoot: (cwd: string) => Effect.Effect<string, NotAGitRepo>
  /** A new worktree for a run, from HEAD (its `base`), on branch `worktree-<name>`, locked while the run goes on. */
  readonly create: (repo: string, name: string) => Effect.Effect<Worktrees.NewWorktree, WorktreeFailed>
  /** Unlocks a worktree (gc may collect it then); one that is gone is no failure. */
  readonly unlock: (path: string) => Effect.Effect<void>
  /** Commits whatever a run left uncommitted; the branch's head. */
  readonly commitAll: (worktree: Worktrees.Worktree, message: string) => Effect.Effect<string, WorktreeFailed>
  /** What a worktree holds against `base` (committed, uncommitted, untracked), the patch cut at `maxPatchBytes`. */
  readonly diff: (
    worktree: Worktrees.Worktree,
    base: string,
    maxPatchBytes?: number
  ) => Effect.Effect<Changes, WorktreeFailed>
  /** Unlocks and removes a worktree; its branch stays. */
  readonly remove: (repo: string, path: string) => Effect.Effect<void, WorktreeFailed>
  readonly list: (cwd: string) => Effect.Effect<ReadonlyArray<Worktrees.WorktreeInfo>, NotAGitRepo | WorktreeFailed>
  /**
   * Removes the run worktrees no run uses (`busy`, or locked): clean ones; with `force` the others too, their
   * uncommitted work committed to their branch first (`WorktreeGc.collect`), or with `discard` dropped.
   */
  readonly gc: (
    cwd: string,
    options: WorktreeGc.GcOptions & { readonly busy: ReadonlySet<string> }
  ) => Effect.Effect<WorktreeGc.GcResult, NotAGitRepo | WorktreeFailed>
  /** Each check against `branch`, in a throwaway worktree. */
  readonly verify: (
    cwd: string,
    options: Worktrees.VerifyOptions
  ) => Effect.Effect<Worktrees.VerifyResult, NotAGitRepo | BranchNotFound | WorktreeFailed>
  /** Each check in `dir`, every one whatever the others did. */
  readonly checksIn: (
    dir: string,
    checks: ReadonlyArray<string>,
    options?: ChecksOptions
  ) => Effect.Effect<ReadonlyArray<Worktrees.CheckResult>>
}

export class Git extends Context.Tag("@flotta/core/Git")<Git, GitShape>() {
  /** git and `sh` on this machine, through the platform's processes and files. */
  static readonly live: Layer.Layer<Git, never, CommandExecutor.CommandExecutor | FileSystem.FileSystem> = Layer
    .effect(
      Git,
      Effect.gen(function*() {
        const executor = yield* CommandExecutor.CommandExecutor
        const fileSystem = yield* FileSystem.FileSystem
        const provide = <A, E>(
          effect: Effect.Effect<A, E, CommandExecutor.CommandExecutor | FileSystem.FileSystem>
        ) =>
          effect.pipe(
            Effect.provideService(CommandExecutor.CommandExecutor, executor),
            Effect.provideService(FileSystem.FileSystem, fileSystem)
          )
        // git failing (a hook, a full disk, a lock) is the user's to see and fix, not a defect.
        const failed = (path: string) => (e: { readonly reason: string }) =>
          new WorktreeFailed({ path, reason: e.reason })
        return Git.of({
          repoRoot: (cwd) => provide(Worktrees.repoRoot(cwd)),
          create: (repo, name) => provide(Worktrees.create(repo, name)),
          unlock: (path) => Effect.ignore(provide(Worktrees.git(path, "worktree", "unlock", path))),
          commitAll: (worktree, message) =>
            provide(Worktrees.commitAll(worktree, message)).pipe(Effect.mapError(failed(worktree.path))),
          diff: (worktree, base, max) => provide(Worktrees.diff(worktree, base, max)),
          remove: (repo, path) => provide(Worktrees.remove(repo, path)).pipe(Effect.mapError(failed(path))),
          list: (cwd) => provide(Worktrees.list(cwd)),
          gc: (cwd, options) => provide(WorktreeGc.gc(cwd, options)),
          verify: (cwd, options) => provide(Worktrees.verify(cwd, options)),
          checksIn: (dir, checks, options) => provide(Worktrees.checksIn(dir, checks, options))
        })
      })
    )
}
