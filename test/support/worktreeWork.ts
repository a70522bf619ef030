/**
 * Whether the work of runs' worktrees survives, for tests that follow the docs: `record` reads each run worktree of
 * a repository (`<repo>/.claude/worktrees/*`) as one git tree, its commits, edits and new files that are not
 * ignored together (through a throwaway index, so the worktree's own is never touched), and keeps the latest per
 * worktree; `lost` names each recorded work that is now neither in its worktree nor the tree of a commit on its
 * branch. Record after every step: a worktree made and removed within one step is never seen.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

export interface Work {
  readonly path: string
  /** Null for a detached worktree. */
  readonly branch: string | null
  /** The tree of everything it holds. */
  readonly tree: string
  /** The files where that differs from its HEAD: its uncommitted work. */
  readonly uncommitted: ReadonlyArray<string>
}

const git = (cwd: string, args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  execFileSync("git", args, { cwd, encoding: "utf8", env: { ...process.env, ...env } }).trim()

/** The run worktrees of `repo`, with their branches. */
const runWorktrees = (repo: string) => {
  const prefix = path.join(repo, ".claude", "worktrees") + path.sep
  return git(repo, ["worktree", "list", "--porcelain"]).split("\n\n").flatMap((block) => {
    const lines = block.split("\n")
    const at = lines.find((l) => l.startsWith("worktree "))?.slice("worktree ".length)
    const branch = lines.find((l) => l.startsWith("branch "))?.slice("branch refs/heads/".length) ?? null
    return at !== undefined && at.startsWith(prefix) ? [{ path: at, branch }] : []
  })
}

/** What a worktree holds, as a tree, read through a throwaway index. */
const workOf = (worktree: { readonly path: string; readonly branch: string | null }): Work => {
  const index = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "flotta-work-")), "index")
  try {
    const env = { GIT_INDEX_FILE: index }
    git(worktree.path, ["read-tree", "HEAD"], env)
    git(worktree.path, ["add", "-A"], env)
    const tree = git(worktree.path, ["write-tree"], env)
    const changed = git(worktree.path, ["diff", "--cached", "--name-only", "HEAD"], env)
    return { ...worktree, tree, uncommitted: changed.length === 0 ? [] : changed.split("\n") }
  } finally {
    fs.rmSync(path.dirname(index), { recursive: true, force: true })
  }
}

export class WorkLog {
  readonly seen = new Map<string, Work>()

  /** Reads each run worktree of `repo` now; the latest reading of each is what must survive. */
  record(repo: string) {
    for (const worktree of runWorktrees(repo)) this.seen.set(worktree.path, workOf(worktree))
  }

  /** Each recorded work that is gone: in no worktree now, and no commit of its branch has its tree. */
  lost(repo: string): Array<string> {
    this.record(repo)
    const present = new Set(runWorktrees(repo).map((w) => w.path))
    return [...this.seen.values()].flatMap((work) => {
      if (present.has(work.path)) return []
      const what = `${path.relative(repo, work.path)} (${work.uncommitted.join(", ") || "no uncommitted changes"})`
      if (work.branch === null) return [`${what}: removed, and it was on no branch`]
      let trees: Array<string>
      try {
        trees = git(repo, ["log", "--format=%T", work.branch]).split("\n")
      } catch {
        return [`${what}: removed, and its branch ${work.branch} is gone`]
      }
      return trees.includes(work.tree) ? [] : [`${what}: removed, and no commit of ${work.branch} holds its work`]
    })
  }
}
