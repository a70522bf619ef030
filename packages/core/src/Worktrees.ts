/**
 * Git worktrees for runs: created under `<repo>/.claude/worktrees/<name>` on branch `worktree-<name>`, listed,
 * garbage-collected; and `verify`, which runs shell checks against a branch in a throwaway worktree. The
 * user's working tree is never touched: the worktrees directory is excluded through `.git/info/exclude`.
 */
import * as Command from "@effect/platform/Command"
import * as CommandExecutor from "@effect/platform/CommandExecutor"
import * as FileSystem from "@effect/platform/FileSystem"
import { Clock, Duration, Effect, Option, Schema, Stream } from "effect"
import { randomBytes } from "node:crypto"
import * as os from "node:os"
import * as path from "node:path"
import { BranchNotFound, NotAGitRepo, WorktreeFailed } from "./Errors.js"
import * as Proc from "./internal/process.js"
import * as RunDiff from "./RunDiff.js"

export const WORKTREES_DIR = path.join(".claude", "worktrees")

export interface Worktree {
  readonly path: string
  readonly branch: string
}

/** A worktree just made for a run, and the commit it starts from (what its diff is taken against). */
export interface NewWorktree extends Worktree {
  readonly base: string
}

export interface WorktreeInfo extends Worktree {
  /** No uncommitted changes. */
  readonly clean: boolean
  readonly locked: boolean
  readonly ageMs: number
}

export const CheckResult = Schema.Struct({
  command: Schema.String,
  ok: Schema.Boolean,
  exitCode: Schema.NullOr(Schema.Number),
  timedOut: Schema.Boolean,
  durationMs: Schema.Number,
  /** The tail of stdout and stderr together. */
  output: Schema.String
})
export type CheckResult = typeof CheckResult.Type

export const VerifyResult = Schema.Struct({
  passed: Schema.Boolean,
  branch: Schema.String,
  commit: Schema.String,
  checks: Schema.Array(CheckResult)
})
export type VerifyResult = typeof VerifyResult.Type

export interface VerifyOptions {
  readonly branch: string
  readonly checks: ReadonlyArray<string>
  /** Per check (default 10 minutes). */
  readonly timeout?: Duration.DurationInput
}

/** Runs git; a non-zero exit is a failure carrying git's own message. */
export const git = Effect.fnUntraced(function*(cwd: string, ...args: ReadonlyArray<string>) {
  return yield* Proc.run("git", args, { cwd, timeout: "60 seconds" }).pipe(
    Effect.flatMap((outcome) =>
      outcome.exitCode === 0
        ? Effect.succeed(outcome.output.trim())
        : Effect.fail(new Proc.CommandFailed({ command: `git ${args.join(" ")}`, reason: outcome.output.trim() }))
    )
  )
})

/** The top of the repository that contains `cwd`. */
export const repoRoot = Effect.fnUntraced(function*(cwd: string) {
  const fs = yield* FileSystem.FileSystem
  const exists = yield* fs.exists(cwd).pipe(Effect.orElseSucceed(() => false))
  if (!exists) return yield* new NotAGitRepo({ cwd })
  return yield* git(cwd, "rev-parse", "--show-toplevel").pipe(Effect.mapError(() => new NotAGitRepo({ cwd })))
})

/** Keeps run worktrees out of the user's `git status`, without touching a tracked file. */
const excludeWorktreesDir = (repo: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const common = yield* git(repo, "rev-parse", "--git-common-dir")
    const exclude = path.resolve(repo, common, "info", "exclude")
    const line = "/.claude/worktrees/"
    const current = yield* fs.readFileString(exclude).pipe(Effect.orElseSucceed(() => ""))
    if (current.split("\n").includes(line)) return
    yield* fs.makeDirectory(path.dirname(exclude), { recursive: true }).pipe(Effect.ignore)
    yield* fs.writeFileString(
      exclude,
      (current.length === 0 || current.endsWith("\n") ? current : current + "\n") + line + "\n"
    )
  })

/** A new worktree for a run, from HEAD, locked while the run goes on. */
/** Where the worktree of a run named `name` goes. */
export const pathOf = (repo: string, name: string) => path.join(repo, WORKTREES_DIR, name)

export const create = Effect.fnUntraced(function*(repo: string, name: string) {
  const worktreePath = pathOf(repo, name)
  const branch = `worktree-${name}`
  return yield* Effect.gen(function*() {
    yield* excludeWorktreesDir(repo)
    yield* git(repo, "worktree", "add", "-b", branch, worktreePath, "HEAD")
    yield* git(repo, "worktree", "lock", "--reason", `flotta run ${name}`, worktreePath)
    const base = yield* git(worktreePath, "rev-parse", "HEAD")
    return { path: worktreePath, branch, base }
  }).pipe(
    Effect.mapError((e) => new WorktreeFailed({ path: worktreePath, reason: "reason" in e ? e.reason : String(e) }))
  )
})

/** The identity flotta commits under when git has none configured (no `user.name` or `user.email`). */
export const DEFAULT_IDENTITY = { name: "flotta", email: "flotta@localhost" } as const

/** `-c` flags that give git flotta's identity, unless git already knows who commits here (config or environment). */
const identityFlags = (cwd: string) =>
  Effect.all([git(cwd, "var", "GIT_AUTHOR_IDENT"), git(cwd, "var", "GIT_COMMITTER_IDENT")]).pipe(
    Effect.as([]),
    Effect.orElseSucceed(
      () => ["-c", `user.name=${DEFAULT_IDENTITY.name}`, "-c", `user.email=${DEFAULT_IDENTITY.email}`]
    )
  )

/**
 * Commits whatever the run left uncommitted (edits, and new files that are not ignored), so removing the worktree
 * loses nothing; returns the branch's head. The author is the one git uses here, else flotta's `DEFAULT_IDENTITY`.
 * It skips the pre-commit and commit-msg hooks (this saves work, it is no commit of the user's); another hook, a
 * signing key or a lock can still refuse it, and then it fails with git's words.
 */
export const commitAll = Effect.fnUntraced(function*(worktree: Worktree, message: string) {
  const status = yield* git(worktree.path, "status", "--porcelain")
  if (status.length > 0) {
    yield* git(worktree.path, "add", "-A")
    const identity = yield* identityFlags(worktree.path)
    yield* git(worktree.path, ...identity, "commit", "-q", "--no-verify", "-m", message)
  }
  return yield* git(worktree.path, "rev-parse", "HEAD")
})

/** git with `env`, its stdout in full (for a numstat: small), stderr only when it fails. */
const gitOut = (cwd: string, env: Record<string, string>, args: ReadonlyArray<string>, max = Infinity) =>
  Effect.scoped(Effect.gen(function*() {
    const executor = yield* CommandExecutor.CommandExecutor
    const proc = yield* executor.start(
      Command.make("git", ...args).pipe(Command.workingDirectory(cwd), Command.env(env), Command.feed(""))
    )
    const chunks: Array<Uint8Array> = []
    let kept = 0
    let total = 0
    let stderr = ""
    const errors = yield* proc.stderr.pipe(
      Stream.decodeText(),
      Stream.runForEach((s) => Effect.sync(() => void (stderr = (stderr + s).slice(-4000)))),
      Effect.fork
    )
    yield* proc.stdout.pipe(Stream.runForEach((chunk) =>
      Effect.sync(() => {
        total += chunk.length
        if (kept < max) {
          const part = chunk.subarray(0, Math.min(chunk.length, max - kept))
          chunks.push(part)
          kept += part.length
        }
      })
    ))
    const exitCode = yield* proc.exitCode
    yield* errors.await
    if (exitCode !== 0) {
      return yield* new Proc.CommandFailed({ command: `git ${args.join(" ")}`, reason: stderr.trim() })
    }
    const bytes = new Uint8Array(kept)
    let at = 0
    for (const chunk of chunks) {
      bytes.set(chunk, at)
      at += chunk.length
    }
    return { bytes, total }
  })).pipe(
    Effect.mapError((e) =>
      e._tag === "CommandFailed" ? e : new Proc.CommandFailed({ command: "git", reason: e.message })
    ),
    Effect.timeoutFail({
      duration: "60 seconds",
      onTimeout: () => new Proc.CommandFailed({ command: `git ${args.join(" ")}`, reason: "timed out" })
    })
  )

const MAX_STATUS_BYTES = 1024 * 1024

/**
 * The files a worktree holds uncommitted changes to: tracked edits (staged or not, deletions too) and new files
 * that are not ignored, each by its path from the worktree's top, sorted.
 */
export const changedFiles = Effect.fnUntraced(function*(worktreePath: string) {
  return yield* gitOut(worktreePath, {}, ["status", "--porcelain", "-z", "--untracked-files=all"], MAX_STATUS_BYTES)
    .pipe(
      Effect.map(({ bytes, total }) => {
        const text = new TextDecoder().decode(bytes)
        // Cut short (a tree of many thousands of new files): the last record may be partial.
        return parseStatus(total > bytes.length ? text.slice(0, text.lastIndexOf("\0") + 1) : text)
      })
    )
})

/** `git status --porcelain -z`: `XY path` records, a rename's or copy's followed by its old path. */
export const parseStatus = (text: string): ReadonlyArray<string> => {
  const fields = text.split("\0")
  const files = new Set<string>()
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i]!
    if (field.length < 4) continue
    files.add(field.slice(3))
    if (/[RC]/.test(field.slice(0, 2))) i++
  }
  return [...files].sort()
}

/**
 * What a worktree holds against `base`: what its run committed, what it left uncommitted and its new untracked
 * files (ignored ones left out), read through a throwaway index so the worktree's own is never touched.
 */
export const diff = Effect.fnUntraced(
  function*(worktree: Worktree, base: string, maxPatchBytes: number = RunDiff.MAX_PATCH_BYTES) {
    return yield* Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const gitDir = yield* git(worktree.path, "rev-parse", "--absolute-git-dir")
      const env = { GIT_INDEX_FILE: path.join(gitDir, `flotta-diff-${randomBytes(4).toString("hex")}.index`) }
      const run = (args: ReadonlyArray<string>, max?: number) => gitOut(worktree.path, env, args, max)
      return yield* Effect.gen(function*() {
        yield* run(["read-tree", "HEAD"])
        yield* run(["add", "-A"])
        const flags = ["-c", "core.quotepath=off", "diff", "--cached", "--no-color", "--no-ext-diff", "--no-renames"]
        const numstat = yield* run([...flags, "--numstat", "-z", base])
        const patch = yield* run([...flags, "--binary", base], maxPatchBytes + 1)
        return RunDiff.changesOf(
          RunDiff.parseNumstat(new TextDecoder().decode(numstat.bytes)),
          RunDiff.boundPatch(patch.bytes, patch.total, maxPatchBytes)
        )
      }).pipe(Effect.ensuring(fs.remove(env.GIT_INDEX_FILE).pipe(Effect.ignore)))
    }).pipe(Effect.mapError((e) => new WorktreeFailed({ path: worktree.path, reason: e.reason })))
  }
)

/** Unlocks and removes a worktree; its branch stays. */
export const remove = Effect.fnUntraced(function*(repo: string, worktreePath: string, force = true) {
  yield* git(repo, "worktree", "unlock", worktreePath).pipe(Effect.ignore)
  yield* git(repo, "worktree", "remove", ...(force ? ["--force"] : []), worktreePath)
  yield* git(repo, "worktree", "prune").pipe(Effect.ignore)
})

interface Porcelain {
  readonly path: string
  readonly branch: string | null
  readonly locked: boolean
}

const parsePorcelain = (text: string): ReadonlyArray<Porcelain> =>
  text.split("\n\n").flatMap((block) => {
    const lines = block.split("\n")
    const worktree = lines.find((l) => l.startsWith("worktree "))
    if (worktree === undefined) return []
    const branch = lines.find((l) => l.startsWith("branch "))
    return [{
      path: worktree.slice("worktree ".length),
      branch: branch === undefined ? null : branch.slice("branch ".length).replace(/^refs\/heads\//, ""),
      locked: lines.some((l) => l === "locked" || l.startsWith("locked "))
    }]
  })

/** The run worktrees of the repository that contains `cwd`. */
export const list = Effect.fnUntraced(function*(cwd: string) {
  return yield* Effect.gen(function*() {
    const repo = yield* repoRoot(cwd)
    const fs = yield* FileSystem.FileSystem
    const now = yield* Clock.currentTimeMillis
    const prefix = path.join(repo, WORKTREES_DIR) + path.sep
    const all = parsePorcelain(yield* git(repo, "worktree", "list", "--porcelain"))
    return yield* Effect.forEach(all.filter((w) => w.path.startsWith(prefix)), (w) =>
      Effect.gen(function*() {
        const status = yield* git(w.path, "status", "--porcelain").pipe(Effect.option)
        const info = yield* fs.stat(w.path).pipe(Effect.option)
        const born = Option.flatMap(info, (i) => Option.orElse(i.birthtime, () => i.mtime))
        return {
          path: w.path,
          branch: w.branch ?? "",
          clean: Option.match(status, { onNone: () => false, onSome: (s) => s.length === 0 }),
          locked: w.locked,
          ageMs: Option.match(born, { onNone: () => 0, onSome: (d) => Math.max(0, now - d.getTime()) })
        }
      }))
  }).pipe(Effect.catchTag("CommandFailed", (e) => new WorktreeFailed({ path: cwd, reason: e.reason })))
})

/** Runs each shell check in `dir`, in order, every one whatever the others did (`env` added to theirs). */
export const checksIn = Effect.fnUntraced(
  function*(
    dir: string,
    checks: ReadonlyArray<string>,
    options: { readonly timeout?: Duration.DurationInput; readonly env?: Record<string, string> } = {}
  ) {
    return yield* Effect.forEach(checks, (command) =>
      Proc.run("sh", ["-c", command], {
        cwd: dir,
        timeout: options.timeout ?? Duration.minutes(10),
        maxOutput: 4000,
        ...(options.env === undefined ? {} : { env: options.env })
      }).pipe(
        Effect.map((o): CheckResult => ({
          command,
          ok: o.exitCode === 0 && !o.timedOut,
          exitCode: o.exitCode,
          timedOut: o.timedOut,
          durationMs: o.durationMs,
          output: o.output
        })),
        Effect.catchTag("CommandFailed", (e) =>
          Effect.succeed<CheckResult>({
            command,
            ok: false,
            exitCode: null,
            timedOut: false,
            durationMs: 0,
            output: e.reason
          }))
      ))
  }
)

/** Runs each check in a throwaway worktree of `branch`, removed afterwards whatever happens. */
export const verify = Effect.fnUntraced(function*(cwd: string, options: VerifyOptions) {
  const repo = yield* repoRoot(cwd)
  const commit = yield* git(repo, "rev-parse", "--verify", "--quiet", `${options.branch}^{commit}`).pipe(
    Effect.mapError(() => new BranchNotFound({ cwd: repo, branch: options.branch }))
  )
  const fs = yield* FileSystem.FileSystem
  return yield* Effect.acquireUseRelease(
    Effect.gen(function*() {
      const dir = yield* fs.makeTempDirectory({ directory: os.tmpdir(), prefix: "flotta-verify-" }).pipe(
        Effect.mapError((e) => new WorktreeFailed({ path: os.tmpdir(), reason: e.message }))
      )
      const worktreePath = path.join(dir, "tree")
      yield* git(repo, "worktree", "add", "--detach", worktreePath, commit).pipe(
        Effect.mapError((e) => new WorktreeFailed({ path: worktreePath, reason: e.reason }))
      )
      return { dir, worktreePath }
    }),
    ({ worktreePath }) =>
      checksIn(worktreePath, options.checks, options.timeout === undefined ? {} : { timeout: options.timeout }),
    ({ dir, worktreePath }) =>
      remove(repo, worktreePath).pipe(
        Effect.ignore,
        Effect.zipRight(fs.remove(dir, { recursive: true }).pipe(Effect.ignore))
      )
  ).pipe(
    Effect.map((checks) => ({
      passed: checks.every((c) => c.ok),
      branch: options.branch,
      commit,
      checks
    }))
  )
})
