/**
 * Verifies, as the fleet runs them: shell checks against a branch in a throwaway worktree (`Worktrees.verify`),
 * under a name like a run's, reported to the log (`spawned`, `result` or `error`, `closed`), sync or async.
 */
import { Effect } from "effect"
import * as path from "node:path"
import { AgentAlreadyExists, InvalidSpec } from "./Errors.js"
import type { GitShape } from "./Git.js"
import { validateName } from "./Registry.js"
import type { ReportLog } from "./ReportLog.js"
import type { VerifyReport } from "./RunOutcome.js"
import * as Worktrees from "./Worktrees.js"

export type VerifyRequest = Worktrees.VerifyOptions & { readonly name?: string }

/** What verifies need of the `Runs` service they live in. */
export interface VerifyDeps {
  readonly reports: ReportLog
  /** Names of runs and verifies in progress: a verify's name is free among them. */
  readonly live: Set<string>
  readonly newName: (prefix: string) => string
  readonly git: GitShape
}

const invalid = (field: string, reason: string) => new InvalidSpec({ path: field, reason })

/** Checks a verify's options and reserves its name. */
export const prepare = Effect.fnUntraced(function*(deps: VerifyDeps, options: VerifyRequest) {
  if (typeof options.branch !== "string" || options.branch.length === 0) {
    return yield* invalid("branch", "name the branch (or commit) to verify")
  }
  if (!Array.isArray(options.checks) || options.checks.length === 0) {
    return yield* invalid("checks", "give at least one shell command to run")
  }
  if (options.checks.some((c) => typeof c !== "string" || c.trim().length === 0)) {
    return yield* invalid("checks", "every check must be a non-empty shell command")
  }
  const name = yield* validateName(options.name ?? deps.newName("verify"))
  if (deps.live.has(name)) return yield* new AgentAlreadyExists({ name })
  deps.live.add(name)
  return name
})

/** Runs the checks of a prepared verify, reporting as it goes; its name is freed at the end. */
export const run = Effect.fnUntraced(
  function*(deps: VerifyDeps, name: string, cwd: string, options: Worktrees.VerifyOptions) {
    return yield* Effect.gen(function*() {
      const { reports } = deps
      yield* reports.post(name, "spawned", { kind: "verify", branch: options.branch, checks: options.checks })
      const result = yield* deps.git.verify(path.resolve(cwd), options)
      const report: VerifyReport = { kind: "verify", name, ...result }
      yield* reports.post(name, "result", {
        passed: result.passed,
        commit: result.commit,
        checks: result.checks.map(({ command, exitCode, ok, timedOut }) => ({ command, ok, exitCode, timedOut }))
      })
      return report
    }).pipe(
      Effect.tapError((error) =>
        deps.reports.post(name, "error", { error: { _tag: error._tag, message: error.message } })
      ),
      Effect.ensuring(
        deps.reports.post(name, "closed", {}).pipe(Effect.zipRight(Effect.sync(() => deps.live.delete(name))))
      )
    )
  }
)
