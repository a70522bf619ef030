/**
 * The repository seam (`Git`) in memory, for `@flotta/core/Testing`: every directory is a repository whose root it
 * is, on branch `main`; a run's worktree is a record under `<repo>/.claude/worktrees/<name>` on branch
 * `worktree-<name>` (nothing is written to disk) that starts from a commit of its own, what a run wrote there is
 * what `changes` says of it (files before and after, a whole-file patch), uncommitted until a commit (cleanup's,
 * gc's) puts it on the branch (or `commitFails` refuses it), and a shell check is a function of its command,
 * directory and environment. Runs, attempts, verifies and gc act on it as on git, with no process and no clock of
 * their own.
 */
import { Effect, Layer } from "effect"
import * as path from "node:path"
import { BranchNotFound, WorktreeFailed } from "../Errors.js"
import { Git } from "../Git.js"
import type { ChecksOptions } from "../Git.js"
import { boundPatch, changesOf, MAX_PATCH_BYTES } from "../RunDiff.js"
import { collect } from "../WorktreeGc.js"
import type { CheckResult, Worktree, WorktreeInfo } from "../Worktrees.js"
import { pathOf, WORKTREES_DIR } from "../Worktrees.js"

/** A check's exit code (0 passes), or its exit code and what it printed. */
export type CheckOutcome = number | { readonly exitCode: number; readonly output?: string }

/** What a check is asked: its command, where it runs, and the environment it is given (a run's `FLOTTA_ATTEMPT`). */
export interface CheckInput {
  readonly command: string
  readonly cwd: string
  readonly env: Readonly<Record<string, string>>
}

/** A file a run wrote in its worktree: `before` absent for a new file, `after` absent for a deleted one. */
export interface FileChange {
  readonly path: string
  readonly before?: string
  readonly after?: string
}

export interface MemoryGitOptions {
  /** Decides each shell check (default: every check passes). */
  readonly check?: (input: CheckInput) => CheckOutcome
  /** What the run of each worktree (by its name, `<repo>/.claude/worktrees/<name>`) wrote there (default: nothing). */
  readonly changes?: (worktree: { readonly name: string; readonly path: string }) => ReadonlyArray<FileChange>
  /**
   * Why committing a worktree's work fails (a hook refusing it, say), or `undefined` when it succeeds (the default):
   * a commit of a worktree with nothing uncommitted never fails.
   */
  readonly commitFails?: (worktree: { readonly name: string; readonly path: string }) => string | undefined
}

const linesOf = (text: string | undefined) =>
  text === undefined || text.length === 0 ? [] : text.replace(/\n$/, "").split("\n")

/** A change as a unified patch of the whole file, the way git writes one. */
const patchOf = (change: FileChange) => {
  const before = linesOf(change.before)
  const after = linesOf(change.after)
  const header = [
    `diff --git a/${change.path} b/${change.path}`,
    ...(change.before === undefined
      ? ["new file mode 100644"]
      : change.after === undefined
      ? ["deleted file mode 100644"]
      : []),
    `--- ${change.before === undefined ? "/dev/null" : `a/${change.path}`}`,
    `+++ ${change.after === undefined ? "/dev/null" : `b/${change.path}`}`,
    `@@ -${before.length === 0 ? 0 : 1},${before.length} +${after.length === 0 ? 0 : 1},${after.length} @@`
  ]
  return [...header, ...before.map((l) => `-${l}`), ...after.map((l) => `+${l}`)].join("\n") + "\n"
}

interface Tree {
  readonly repo: string
  readonly branch: string
  locked: boolean
  /** The branch's head: the base, then each commit of the run's work. */
  head: string
  /** Whether what the run wrote is committed (cleanup or gc committed it). */
  saved: boolean
}

const BASE = "memory".padEnd(40, "0")

/** The repository seam in memory (see the module's comment). */
export const layer = (options: MemoryGitOptions = {}): Layer.Layer<Git> =>
  Layer.sync(Git, () => {
    const trees = new Map<string, Tree>()
    const branches = new Set<string>()
    let commits = 0
    const check = options.check ?? (() => 0)

    const checksIn = (dir: string, checks: ReadonlyArray<string>, given: ChecksOptions = {}) =>
      Effect.sync(() =>
        checks.map((command): CheckResult => {
          const outcome = check({ command, cwd: dir, env: given.env ?? {} })
          const exitCode = typeof outcome === "number" ? outcome : outcome.exitCode
          const output = typeof outcome === "number" ? "" : outcome.output ?? ""
          return { command, ok: exitCode === 0, exitCode, timedOut: false, durationMs: 0, output }
        })
      )

    const written = (at: string) => options.changes?.({ name: path.basename(at), path: at }) ?? []
    /** What a worktree holds uncommitted: what its run wrote, until a commit. */
    const uncommitted = (at: string, tree: Tree) => (tree.saved ? [] : written(at))

    const list = (cwd: string) =>
      Effect.sync(() => {
        const prefix = path.join(path.resolve(cwd), WORKTREES_DIR) + path.sep
        return [...trees.entries()].filter(([at]) => at.startsWith(prefix)).map(([at, tree]): WorktreeInfo => ({
          path: at,
          branch: tree.branch,
          clean: uncommitted(at, tree).length === 0,
          locked: tree.locked,
          ageMs: 0
        }))
      })

    const commitAll = (worktree: Worktree) =>
      Effect.suspend(() => {
        const tree = trees.get(worktree.path)
        if (tree === undefined) return new WorktreeFailed({ path: worktree.path, reason: "not a working tree" })
        if (uncommitted(worktree.path, tree).length === 0) return Effect.succeed(tree.head)
        const refused = options.commitFails?.({ name: path.basename(worktree.path), path: worktree.path })
        if (refused !== undefined) return new WorktreeFailed({ path: worktree.path, reason: refused })
        tree.head = `memory${String(++commits).padStart(34, "0")}`
        tree.saved = true
        return Effect.succeed(tree.head)
      })

    const remove = (at: string) =>
      Effect.suspend(() =>
        trees.delete(at) ? Effect.void : new WorktreeFailed({ path: at, reason: `'${at}' is not a working tree` })
      )

    return Git.of({
      repoRoot: (cwd) => Effect.succeed(path.resolve(cwd)),
      create: (repo, name) =>
        Effect.suspend(() => {
          const at = pathOf(repo, name)
          const branch = `worktree-${name}`
          if (trees.has(at)) return new WorktreeFailed({ path: at, reason: `'${at}' already exists` })
          if (branches.has(`${repo}:${branch}`)) {
            return new WorktreeFailed({ path: at, reason: `a branch named '${branch}' already exists` })
          }
          branches.add(`${repo}:${branch}`)
          trees.set(at, { repo, branch, locked: true, head: BASE, saved: false })
          return Effect.succeed({ path: at, branch, base: BASE })
        }),
      unlock: (at) =>
        Effect.sync(() => {
          const tree = trees.get(at)
          if (tree !== undefined) tree.locked = false
        }),
      commitAll,
      diff: (worktree, _base, max = MAX_PATCH_BYTES) =>
        Effect.suspend(() => {
          if (!trees.has(worktree.path)) {
            return new WorktreeFailed({ path: worktree.path, reason: "not a working tree" })
          }
          const sorted = [...written(worktree.path)].sort((a, b) => a.path.localeCompare(b.path))
          const bytes = new TextEncoder().encode(sorted.map(patchOf).join(""))
          const files = sorted.map((c) => ({
            path: c.path,
            added: linesOf(c.after).length,
            removed: linesOf(c.before).length
          }))
          return Effect.succeed(changesOf(files, boundPatch(bytes, bytes.length, max)))
        }),
      remove: (_repo, at) => remove(at),
      list,
      gc: (cwd, given) =>
        collect(
          {
            repoRoot: (dir) => Effect.succeed(path.resolve(dir)),
            list,
            changedFiles: (worktree) =>
              Effect.sync(() => {
                const tree = trees.get(worktree.path)
                return tree === undefined ? [] : uncommitted(worktree.path, tree).map((c) => c.path).sort()
              }),
            commitAll,
            remove: (_repo, at) => remove(at)
          },
          cwd,
          given
        ),
      verify: (cwd, given) =>
        Effect.suspend(() => {
          const repo = path.resolve(cwd)
          if (given.branch !== "main" && !branches.has(`${repo}:${given.branch}`)) {
            return new BranchNotFound({ cwd: repo, branch: given.branch })
          }
          return Effect.map(checksIn(repo, given.checks), (checks) => ({
            passed: checks.every((c) => c.ok),
            branch: given.branch,
            commit: BASE,
            checks
          }))
        }),
      checksIn
    })
  })
