/**
 * `flotta worktrees`, `flotta gc` and `flotta verify`: git operations on a repository on this machine, run here on
 * the Worktrees module (no serve needed): the run worktrees of `--cwd`'s repository, removing the finished ones, and
 * shell checks against a branch in a throwaway worktree. Each prints a view for a person, or with `--json` the
 * structured answer.
 *
 * `gc` leaves a locked worktree alone: a run locks its worktree while it goes on, whichever process runs it (a
 * `flotta serve`, a `flotta run --worktree` in another shell), and unlocks it when it ends. `gc --force` commits a
 * worktree's uncommitted work to its branch before removing it, so nothing is lost; only `--force --discard` drops
 * it, and says which files. `verify` exits 0 when
 * every check passed, else with ChecksFailed (exit code 14) after printing the checks.
 */
import { Args, Command, Options } from "@effect/cli"
import * as WorktreeGc from "@flotta/core/WorktreeGc"
import * as Worktrees from "@flotta/core/Worktrees"
import { Effect, Option, Schema } from "effect"
import * as path from "node:path"
import * as Flags from "./Flags.js"
import * as Output from "./Output.js"
import * as RunViews from "./RunViews.js"
import * as Shared from "./SharedOptions.js"

/** A verify ran, and some check failed (or timed out). */
export class ChecksFailed extends Schema.TaggedError<ChecksFailed>()("ChecksFailed", {
  branch: Schema.String,
  failed: Schema.Array(Schema.String),
  total: Schema.Number
}) {
  override get message() {
    return `${this.failed.length} of ${this.total} checks failed on ${this.branch}: ${this.failed.join("; ")}`
  }
}

const cwd = Flags.directory("cwd").pipe(
  Flags.optional("A directory inside the git repository (default: the current one).")
)

const dirOf = (flag: Option.Option<string>) => path.resolve(Option.getOrElse(flag, () => "."))

/** Prints the value as JSON, or its view for a person. */
const print = <A>(json: boolean, value: A, render: (value: A) => string) =>
  Output.stdout(json ? JSON.stringify(value, null, 2) : render(value))

/** The git repository `--cwd` is in, and its run worktrees. */
const repoWorktrees = Effect.fn("WorktreeCommands.repoWorktrees")(function*(cwd: Option.Option<string>) {
  const repo = yield* Worktrees.repoRoot(dirOf(cwd))
  return { repo, worktrees: yield* Worktrees.list(repo) }
})

const worktrees = Command.make("worktrees", { cwd, json: Shared.json }, (flags) =>
  Effect.flatMap(
    repoWorktrees(flags.cwd),
    (found) => print(flags.json, found, (v) => RunViews.renderWorktrees(v.worktrees, v.repo))
  )).pipe(
    Command.withDescription(
      "List the run worktrees of the git repository here (or --cwd's): path, branch, uncommitted changes or " +
        "not, locked by a run or not, and age. Runs on this machine; no serve is needed."
    )
  )

const gc = Command.make(
  "gc",
  {
    cwd,
    force: Options.boolean("force").pipe(
      Options.withDescription(
        "Also remove worktrees with uncommitted changes: their work is committed to their branch first, and " +
          "named (a locked one is always kept)."
      )
    ),
    discard: Options.boolean("discard").pipe(
      Options.withDescription(
        "With --force: remove them without committing, throwing their uncommitted changes away (each file named)."
      )
    ),
    json: Shared.json
  },
  (flags) =>
    Effect.gen(function*() {
      if (flags.discard && !flags.force) {
        return yield* Shared.invalid("--discard", "throws uncommitted work away, so it needs --force as well")
      }
      const repo = yield* Worktrees.repoRoot(dirOf(flags.cwd))
      // A run here locks its worktree, whichever process runs it, and gc never touches a locked one.
      const result = yield* WorktreeGc.gc(repo, {
        busy: new Set(),
        ...(flags.force ? { force: true } : {}),
        ...(flags.discard ? { discard: true } : {})
      })
      // The engine's reasons name its options; here they are flags.
      const kept = result.kept.map((k) => ({
        ...k,
        reason: k.reason.replace("force with discard", "--force --discard").replace("use force", "use --force")
      }))
      yield* print(flags.json, { repo, ...result, kept }, (v) => RunViews.renderGc(v, repo))
    })
).pipe(
  Command.withDescription(
    "Remove the run worktrees whose run has ended from the git repository here (or --cwd's): the clean ones, and " +
      "with --force the ones with uncommitted changes too, after committing their work to their branch (--force " +
      "--discard drops it instead, naming each file). Branches stay, and so does a worktree a run has locked."
  )
)

const verify = Command.make(
  "verify",
  {
    cwd,
    timeout: Flags.duration("timeout").pipe(
      Flags.optional("Each check's time limit: 90, 90s, 500ms, 5m or 1h (default 10 minutes).")
    ),
    json: Shared.json,
    branch: Flags.argument(
      "branch",
      "The branch (or commit) to check out in a throwaway worktree.",
      Schema.String.pipe(Schema.pattern(/^[^\s-][^\s]*$/)),
      "is not a branch or commit name"
    ),
    checks: Flags.textArgument("check", "A shell command that must exit 0, such as \"npm test\" (one or more).").pipe(
      Args.atLeast(1)
    )
  },
  (flags) =>
    Effect.gen(function*() {
      const result = yield* Worktrees.verify(dirOf(flags.cwd), {
        branch: flags.branch,
        checks: flags.checks,
        ...Shared.ifSome("timeout", flags.timeout)
      })
      yield* print(flags.json, result, RunViews.renderVerify)
      if (!result.passed) {
        const failed = result.checks.filter((c) => !c.ok).map((c) => c.command)
        return yield* new ChecksFailed({ branch: result.branch, failed, total: result.checks.length })
      }
    })
).pipe(
  Command.withDescription(
    "Run shell checks against a branch of the git repository here (or --cwd's) in a throwaway worktree, removed " +
      "afterwards, and print each check's outcome. Exits 0 when every check passed, else 14."
  )
)

export const commands = [worktrees, gc, verify] as const
