/**
 * Best-of-N runs: one task tried N times at once, each attempt a run of its own (`<run>-a<i>`) in its own
 * worktree, admitted like any start, told which attempt it is (`FLOTTA_ATTEMPT`, `{{attempt}}` in its prompt),
 * and verified by the run's checks in its worktree once its turn succeeds. `first` takes the first attempt to
 * pass and interrupts the rest; `cheapest` lets every attempt finish and takes the cheapest that passed. The
 * outcome is the winner's result with every attempt's report; when none passes, `NoAttemptPassed` names why each
 * failed. The losers' worktrees are removed (their work committed to their branches first) unless `keepAll`.
 */
import { Deferred, Duration, Effect, Either, Fiber, Option } from "effect"
import * as path from "node:path"
import { errorView } from "./AgentView.js"
import { NoAttemptPassed } from "./Errors.js"
import type { AttemptFailure } from "./Errors.js"
import type { GitShape } from "./Git.js"
import type { Registry } from "./Registry.js"
import type { ReportLog } from "./ReportLog.js"
import type { RunOptions } from "./RunOptions.js"
import type { AttemptReport, RunError, RunResult, RunWorktree } from "./RunOutcome.js"

/** What attempts need of the `Runs` service they live in. */
export interface AttemptDeps {
  /** One run, to its end (its worktree's path told as soon as it is known). */
  readonly execute: (
    name: string,
    options: RunOptions,
    onWorktree: (path: string) => void
  ) => Effect.Effect<RunResult, RunError>
  readonly registry: Registry
  readonly reports: ReportLog
  readonly git: GitShape
  /** How long an interrupted attempt may take to end on its own (its spend reported) before it is stopped. */
  readonly interruptGrace: Duration.Duration
}

/** The name of attempt `i` of run `name`. */
export const attemptName = (name: string, i: number) => `${name}-a${i}`

/** Whether `agent` is run `name`'s own agent or one of its attempts (`attemptName`). */
export const isOwnAgent = (name: string, agent: string) =>
  agent === name || (agent.startsWith(`${name}-a`) && /^[1-9][0-9]*$/.test(agent.slice(name.length + 2)))

/** An attempt's prompt: `{{attempt}}` becomes its number. */
export const render = (prompt: string, attempt: number) => prompt.replaceAll("{{attempt}}", String(attempt))

/** What an attempt that failed had spent, when its error says. */
const spentOf = (error: RunError): number => "costUsd" in error && typeof error.costUsd === "number" ? error.costUsd : 0

const sessionOf = (error: RunError): string | null =>
  "sessionId" in error && typeof error.sessionId === "string" ? error.sessionId : null

/** Runs a prepared run's attempts (options checked, names reserved) and picks the winner. */
export const run = Effect.fnUntraced(function*(deps: AttemptDeps, name: string, options: RunOptions) {
  return yield* Effect.gen(function*() {
    const n = options.attempts ?? 1
    const pick = options.pick ?? "first"
    const { attempts: _n, keepAll, maxBudgetUsd, pick: _pick, verify, ...base } = options
    // The run's budget bounds the whole run: the attempts run at once, so each gets an even share.
    const share = maxBudgetUsd === undefined ? {} : { maxBudgetUsd: maxBudgetUsd / n }
    const repo = yield* deps.git.repoRoot(path.resolve(options.cwd ?? "."))
    yield* deps.reports.post(name, "spawned", { kind: "attempts", attempts: n, pick, checks: verify?.checks ?? [] })
    const numbers = Array.from({ length: n }, (_, i) => i + 1)
    const reports = new Map<number, AttemptReport>()
    const results = new Map<number, RunResult>()
    const worktrees = new Map<number, string>()
    const winner = yield* Deferred.make<number>()
    let firstPassed: number | undefined

    const one = (i: number) =>
      Effect.gen(function*() {
        const own = attemptName(name, i)
        const env = { ...base.env, FLOTTA_ATTEMPT: String(i) }
        const attempt: RunOptions = {
          ...base,
          ...share,
          name: own,
          prompt: render(base.prompt ?? "", i),
          worktree: typeof base.worktree === "string" ? attemptName(base.worktree, i) : true,
          cleanup: false,
          env
        }
        const ran = yield* Effect.either(deps.execute(own, attempt, (at) => worktrees.set(i, at)))
        if (Either.isLeft(ran)) {
          const at = worktrees.get(i)
          reports.set(i, {
            attempt: i,
            name: own,
            status: "failed",
            costUsd: spentOf(ran.left),
            sessionId: sessionOf(ran.left),
            worktree: at === undefined ? null : { path: at, branch: `worktree-${path.basename(at)}`, removed: false },
            checks: null,
            error: errorView(ran.left)
          })
          return
        }
        const result = ran.right
        results.set(i, result)
        const tree = result.worktree
        const checks = verify === undefined || tree === undefined ? null : yield* deps.git.checksIn(
          tree.path,
          verify.checks,
          { env, ...(verify.timeout === undefined ? {} : { timeout: verify.timeout }) }
        )
        const failed = checks?.find((check) => !check.ok)
        if (failed !== undefined) {
          yield* deps.reports.post(own, "verify_failed", {
            attempt: i,
            command: failed.command,
            exitCode: failed.exitCode,
            timedOut: failed.timedOut
          })
        }
        reports.set(i, {
          attempt: i,
          name: own,
          status: failed === undefined ? "passed" : "failed",
          costUsd: result.costUsd,
          sessionId: result.sessionId,
          worktree: tree ?? null,
          checks,
          error: null
        })
        if (failed === undefined && pick === "first" && firstPassed === undefined) {
          firstPassed = i
          yield* Deferred.succeed(winner, i)
        }
      })

    const fibers = yield* Effect.forEach(numbers, (i) => Effect.fork(one(i)))
    if (pick === "first") {
      const first = yield* Effect.raceFirst(
        Effect.as(Fiber.awaitAll(fibers), Option.none<number>()),
        Effect.map(Deferred.await(winner), Option.some)
      )
      if (Option.isSome(first)) {
        // The rest stop: a running one is interrupted and given a moment to end with what it spent, one still
        // waiting to start never starts.
        yield* Effect.forEach(
          numbers,
          (i) =>
            reports.has(i) ? Effect.void : deps.registry.get(attemptName(name, i)).pipe(
              Effect.flatMap((agent) => agent.interrupt),
              Effect.catchTag("AgentNotFound", () => Fiber.interrupt(fibers[i - 1]!))
            ),
          { discard: true }
        )
        yield* Fiber.awaitAll(fibers).pipe(Effect.timeout(deps.interruptGrace), Effect.ignore)
        yield* Fiber.interruptAll(fibers)
      }
    } else {
      yield* Fiber.joinAll(fibers)
    }

    const chosen = pick === "first"
      ? firstPassed
      : [...reports.values()].filter((r) => r.status === "passed")
        .sort((a, b) => a.costUsd - b.costUsd || a.attempt - b.attempt)[0]?.attempt

    // Every attempt has a report: one still going when the winner was picked was interrupted.
    const finalReports = numbers.map((i): AttemptReport => {
      const report = reports.get(i)
      if (report === undefined) {
        const at = worktrees.get(i)
        return {
          attempt: i,
          name: attemptName(name, i),
          status: "interrupted",
          costUsd: 0,
          sessionId: null,
          worktree: at === undefined ? null : { path: at, branch: `worktree-${path.basename(at)}`, removed: false },
          checks: null,
          error: null
        }
      }
      if (report.status === "failed" && report.error?._tag === "TurnInterrupted" && chosen !== undefined) {
        return { ...report, status: "interrupted" }
      }
      return report
    })

    // The losers' worktrees go, what they did kept on their branches; the winner's stays (or goes with cleanup).
    const tidied = yield* Effect.forEach(finalReports, (report) => {
      const tree = report.worktree
      const goes = report.attempt === chosen ? options.cleanup === true : keepAll !== true
      if (tree === null || tree.removed || !goes) return Effect.succeed(report)
      return tidy(deps, repo, tree, `flotta run ${report.name}`).pipe(
        Effect.map((worktree): AttemptReport => ({ ...report, worktree }))
      )
    })
    const totalCostUsd = tidied.reduce((sum, r) => sum + r.costUsd, 0)

    if (chosen === undefined) {
      const error = new NoAttemptPassed({ name, attempts: tidied.map(failureOf), costUsd: totalCostUsd })
      yield* deps.reports.post(name, "error", { error: errorView(error), totalCostUsd })
      return yield* error
    }
    const won = results.get(chosen)!
    const worktree = tidied[chosen - 1]!.worktree
    yield* deps.reports.post(name, "result", {
      attempt: chosen,
      costUsd: won.costUsd,
      totalCostUsd,
      attempts: tidied.map((r) => ({ attempt: r.attempt, status: r.status, costUsd: r.costUsd }))
    })
    return {
      ...won,
      name,
      ...(worktree === null ? {} : { worktree }),
      attempt: chosen,
      attempts: tidied,
      totalCostUsd
    } satisfies RunResult
  }).pipe(
    Effect.ensuring(Effect.ignore(deps.reports.post(name, "closed", {}))),
    Effect.withSpan("flotta.attempts", { attributes: { "flotta.run": name, "flotta.attempts": options.attempts ?? 1 } })
  )
})

/** Commits what an attempt left on its branch and removes its worktree; one that cannot be removed stays. */
const tidy = (deps: AttemptDeps, repo: string, tree: RunWorktree, message: string) =>
  Effect.gen(function*() {
    const commit = yield* deps.git.commitAll(tree, message)
    yield* deps.git.remove(repo, tree.path)
    return { ...tree, commit, removed: true }
  }).pipe(
    Effect.tapError((e) => Effect.logWarning(`attempt worktree ${tree.path} kept: ${e.reason}`)),
    Effect.orElseSucceed(() => tree)
  )

/** An attempt that did not pass, as `NoAttemptPassed` names it. */
const failureOf = (report: AttemptReport): AttemptFailure => {
  const failed = report.checks?.find((check) => !check.ok)
  return {
    attempt: report.attempt,
    name: report.name,
    costUsd: report.costUsd,
    branch: report.worktree?.branch ?? null,
    check: failed === undefined
      ? null
      : { command: failed.command, exitCode: failed.exitCode, timedOut: failed.timedOut },
    error: report.error
  }
}
