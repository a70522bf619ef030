/**
 * Single-shot runs: an agent fired at one bounded task. It does the task, returns a structured result, and
 * ends. A run is an agent in the same registry (so `list`, `interrupt` and `close` reach it) that takes one
 * turn, optionally in its own git worktree, within bounds (turns, budget, time). Async runs, and async
 * verifies, keep their outcome by name for `runResult`.
 */
import { DateTime, Deferred, Effect, Either, Exit, FiberMap, Option } from "effect"
import { randomBytes } from "node:crypto"
import * as path from "node:path"
import type * as Agent from "./Agent.js"
import type { Labels } from "./AgentOptions.js"
import { ClaudeCli } from "./ClaudeCli.js"
import { AgentAlreadyExists, HostRestarted, InvalidSpec, RunNotFound, TurnPending } from "./Errors.js"
import { definedFields } from "./Fields.js"
import { FleetConfig } from "./FleetConfig.js"
import { Git } from "./Git.js"
import * as RunDiffs from "./internal/runDiffs.js"
import { Registry, validateName } from "./Registry.js"
import { ReportLog } from "./ReportLog.js"
import * as RunAttempts from "./RunAttempts.js"
import type { RunQuery } from "./RunList.js"
import { selectRuns, viewOf } from "./RunList.js"
import { boundFlags, checkOptions, invalid } from "./RunOptions.js"
import type { RunOptions } from "./RunOptions.js"
import * as RunOutcome from "./RunOutcome.js"
import type { Outcome, RunError, RunResult, RunWorktree, VerifyError } from "./RunOutcome.js"
import * as RunVerify from "./RunVerify.js"
import * as Sandbox from "./Sandbox.js"
import * as Spec from "./Spec.js"
import { Store } from "./Store.js"
import type { RunRow } from "./Store.js"
import * as WorktreeGc from "./WorktreeGc.js"
import * as Worktrees from "./Worktrees.js"

export { boundFlags } from "./RunOptions.js"
export type { RunOptions } from "./RunOptions.js"
export { Outcome, RunResult, RunWorktree, VerifyReport } from "./RunOutcome.js"
export type { RunError, VerifyError } from "./RunOutcome.js"

const newName = (prefix: string) => `${prefix}-${randomBytes(4).toString("hex")}`

type Pending = Deferred.Deferred<Outcome, RunError | VerifyError>

export class Runs extends Effect.Service<Runs>()("@flotta/core/Runs", {
  scoped: Effect.gen(function*() {
    const registry = yield* Registry
    const reports = yield* ReportLog
    const settings = yield* FleetConfig
    const git = yield* Git
    const store = yield* Store
    const cli = yield* ClaudeCli
    const background = yield* FiberMap.make<string>()
    /** Async runs in progress, by name; a finished one's outcome is in the store. */
    const outcomes = new Map<string, Pending>()
    /** Set when the fleet shuts down: runs it interrupts are restored as interrupted by the restart. */
    let closing = false
    /** Names of runs and verifies in progress (sync and async). */
    const live = new Set<string>()
    /** Worktrees whose run is still going: gc leaves them alone. */
    const busyWorktrees = new Set<string>()
    /** `run` entries of the declarative fleet, by name. */
    const templates = new Map<string, Spec.Spec>()

    /** Applies the template, checks the options, and reserves the name. */
    const prepare = (input: RunOptions) =>
      Effect.gen(function*() {
        let options = input
        if (input.template !== undefined) {
          const template = templates.get(input.template)
          if (template === undefined) return yield* invalid("template", `no run template named "${input.template}"`)
          const base = Spec.runOptions(template)
          // Labels add up: the run's own win over its template's for the same key.
          const labels = { ...base.labels, ...input.labels }
          options = { ...base, ...input, ...(Object.keys(labels).length === 0 ? {} : { labels }) }
        }
        yield* checkOptions(options)
        // Its sandbox checked, and its writable paths made absolute from the cwd it was given (not its worktree).
        options = yield* Either.mapLeft(Sandbox.withOptions(options), (bad) => new InvalidSpec(bad))
        const name = yield* validateName(options.name ?? newName(input.template ?? "run"))
        if (typeof options.worktree === "string") yield* validateName(options.worktree)
        // A run with attempts (or checks) reserves each attempt's name too: `<name>-a<i>`.
        const attempts = options.attempts !== undefined || options.verify !== undefined
          ? Array.from({ length: options.attempts ?? 1 }, (_, i) => RunAttempts.attemptName(name, i + 1))
          : []
        for (const attempt of attempts) yield* validateName(attempt)
        if (typeof options.worktree === "string" && attempts.length > 0) {
          yield* validateName(RunAttempts.attemptName(options.worktree, attempts.length))
        }
        const taken = yield* registry.liveNames
        for (const wanted of [name, ...attempts]) {
          if (live.has(wanted) || taken.includes(wanted)) return yield* new AgentAlreadyExists({ name: wanted })
        }
        for (const wanted of [name, ...attempts]) live.add(wanted)
        return { name, options, attempts: attempts.length > 0 }
      })

    /** Posts a run's one `run_finished` entry when it ends. */
    const finishing = (name: string) => (entry: RunOutcome.RunFinished) => reports.post(name, "run_finished", entry)

    const track = RunOutcome.track(store, () => closing, finishing)

    const diffs = RunDiffs.make({
      store,
      git,
      known: (name) =>
        live.has(name) ? Effect.succeed(true) : Effect.zipWith(
          store.run(name),
          store.agents,
          (row, agents) => Option.isSome(row) || agents.some((a) => a.name === name && a.lifecycle === "run")
        )
    })

    /** Runs `effect` under supervision, keeping its outcome for `runResult` (in memory, then in the store). */
    const startAsync = (
      name: string,
      kind: RunRow["kind"],
      effect: (onWorktree: (path: string) => void) => Effect.Effect<Outcome, RunError | VerifyError>,
      labels?: Labels
    ) =>
      Effect.gen(function*() {
        const outcome: Pending = yield* Deferred.make<Outcome, RunError | VerifyError>()
        outcomes.set(name, outcome)
        const tracked = yield* track(name, kind, labels)
        yield* FiberMap.run(
          background,
          name,
          effect(tracked.worktree).pipe(
            Effect.exit,
            Effect.tap(tracked.done),
            Effect.flatMap((exit) => Deferred.done(outcome, exit)),
            Effect.ensuring(Effect.sync(() => outcomes.delete(name)))
          )
        )
        return name
      })

    const execute = (
      name: string,
      options: RunOptions,
      onWorktree: (path: string) => void = () => undefined
    ): Effect.Effect<RunResult, RunError> =>
      Effect.gen(function*() {
        const cwd = path.resolve(options.cwd ?? ".")
        // A sandboxed run that could not start leaves no worktree behind.
        if (options.sandbox !== undefined) yield* cli.checkSandbox(name, { ...settings.env, ...options.env })
        let worktree: Worktrees.Worktree | undefined
        let runCwd = cwd
        if (options.worktree !== undefined && options.worktree !== false) {
          const repo = yield* git.repoRoot(cwd)
          const worktreeName = typeof options.worktree === "string" ? options.worktree : name
          // Kept before it exists: a host that dies while git makes it still leaves the path behind.
          onWorktree(Worktrees.pathOf(repo, worktreeName))
          const created = yield* git.create(repo, worktreeName)
          worktree = { path: created.path, branch: created.branch }
          yield* diffs.started(name, worktree, created.base)
          busyWorktrees.add(worktree.path)
          runCwd = path.join(worktree.path, path.relative(repo, cwd))
        }
        const held = worktree
        const agentOptions: Agent.AgentOptions = {
          cwd: runCwd,
          lifecycle: "run",
          extraArgs: boundFlags(options),
          expectStructuredOutput: options.jsonSchema !== undefined,
          ...definedFields(options, [
            "model",
            "permission",
            "systemPrompt",
            "appendSystemPrompt",
            "env",
            "onActivity",
            "sandbox",
            "labels"
          ])
        }
        const turn = yield* registry.spawn(name, agentOptions).pipe(
          Effect.flatMap((agent) =>
            agent.prompt(options.prompt!, { timeout: options.timeout ?? settings.turnTimeout }).pipe(
              Effect.flatMap(agent.await)
            )
          ),
          // The answer is in: the child's exit need not hold it up (the fleet's scope still owns it), unless its
          // worktree is about to be committed and removed under it.
          Effect.ensuring(registry.close(name, "the run ended", { wait: held !== undefined }).pipe(Effect.ignore)),
          // What the run changed, recorded however it ended, before cleanup commits and removes its worktree.
          Effect.ensuring(diffs.ended(name)),
          Effect.ensuring(
            held === undefined
              ? Effect.void
              : Effect.sync(() => busyWorktrees.delete(held.path)).pipe(
                // An unfinished run's worktree stays for inspection, unlocked so gc may collect it.
                Effect.zipRight(git.unlock(held.path))
              )
          ),
          Effect.catchTag("NoResult", () => Effect.dieMessage("a run's own turn vanished"))
        )
        let runWorktree: RunWorktree | undefined
        if (held !== undefined) {
          if (options.cleanup === true) {
            const commit = yield* git.commitAll(held, `flotta run ${name}`)
            const repo = yield* git.repoRoot(cwd)
            yield* git.remove(repo, held.path)
            runWorktree = { ...held, commit, removed: true }
          } else {
            runWorktree = { ...held, removed: false }
          }
        }
        return {
          kind: "run",
          name,
          text: turn.text,
          costUsd: turn.costUsd,
          durationMs: turn.durationMs,
          modelCalls: turn.modelCalls,
          sessionId: turn.sessionId,
          permissionDenials: turn.permissionDenials,
          ...(turn.structuredOutput === undefined ? {} : { structuredOutput: turn.structuredOutput }),
          ...(runWorktree === undefined ? {} : { worktree: runWorktree })
        } satisfies RunResult
      }).pipe(
        Effect.tapError((error) =>
          // Failures before the agent existed (a bad worktree, say) still reach the report log.
          error._tag === "NotAGitRepo" || error._tag === "WorktreeFailed" || error._tag === "SandboxUnavailable"
            ? reports.post(name, "error", { error: { _tag: error._tag, message: error.message } })
            : Effect.void
        ),
        Effect.ensuring(Effect.sync(() => live.delete(name))),
        Effect.withSpan("flotta.run", { attributes: { "flotta.run": name } })
      )

    const attempting: RunAttempts.AttemptDeps = {
      // Each attempt is a run of its own, and says when it finished.
      execute: (name, options, onWorktree) =>
        RunOutcome.reportingEnd(finishing(name), (given) => execute(name, options, given), onWorktree),
      registry,
      reports,
      git,
      interruptGrace: settings.interruptGrace
    }

    /** A prepared run: one turn, or its attempts (each a run of its own) and the winner. */
    const perform = (
      prepared: { readonly name: string; readonly options: RunOptions; readonly attempts: boolean },
      onWorktree: (path: string) => void = () => undefined
    ): Effect.Effect<RunResult, RunError> =>
      prepared.attempts
        ? RunAttempts.run(attempting, prepared.name, prepared.options).pipe(
          // The run's diff is its winner's: `diff(name)` answers for the run, each attempt under its own name.
          Effect.tap((result) =>
            result.attempt === undefined
              ? Effect.void
              : diffs.alias(prepared.name, RunAttempts.attemptName(prepared.name, result.attempt))
          ),
          Effect.ensuring(Effect.sync(() => live.delete(prepared.name)))
        )
        : execute(prepared.name, prepared.options, onWorktree)

    /** Runs synchronously: the result, or the run's typed failure. */
    const run = Effect.fn("Runs.run")(function*(options: RunOptions) {
      const prepared = yield* prepare(options).pipe(Effect.mapError((e) => e as RunError))
      return yield* RunOutcome.reportingEnd(finishing(prepared.name), (given) => perform(prepared, given))
    })

    /** Starts a run under supervision and returns its name at once. */
    const runAsync = Effect.fn("Runs.runAsync")(function*(options: RunOptions) {
      const prepared = yield* prepare(options)
      return yield* startAsync(
        prepared.name,
        "run",
        (onWorktree) => perform(prepared, onWorktree),
        prepared.options.labels
      )
    })

    const verifying: RunVerify.VerifyDeps = { reports, live, newName, git }

    /** Runs shell checks against a branch in a throwaway worktree. */
    const verify = Effect.fn("Runs.verify")(function*(cwd: string, options: RunVerify.VerifyRequest) {
      const name = yield* RunVerify.prepare(verifying, options)
      return yield* RunVerify.run(verifying, name, cwd, options)
    })

    const verifyAsync = Effect.fn("Runs.verifyAsync")(function*(cwd: string, options: RunVerify.VerifyRequest) {
      const name = yield* RunVerify.prepare(verifying, options)
      return yield* startAsync(name, "verify", () => RunVerify.run(verifying, name, cwd, options))
    })

    /** An async run's (or verify's) outcome: the result, TurnPending while it runs, or its typed failure. */
    const runResult = (name: string) =>
      Effect.gen(function*() {
        const outcome = outcomes.get(name)
        if (outcome !== undefined) {
          const done = yield* Deferred.poll(outcome)
          if (Option.isNone(done)) return yield* new TurnPending({ name, turnId: name, status: "running" })
          return yield* done.value
        }
        return yield* RunOutcome.storedOutcome(store, name)
      })

    /** Waits for an async run (or verify) to finish. */
    const awaitRun = (name: string) =>
      Effect.suspend((): Effect.Effect<Outcome, RunError | VerifyError | RunNotFound> => {
        const outcome = outcomes.get(name)
        if (outcome !== undefined) return Deferred.await(outcome)
        return Effect.flatMap(
          store.run(name),
          (row): Effect.Effect<Outcome, RunError | VerifyError | RunNotFound> =>
            Option.isNone(row) || row.value.status === "running"
              ? new RunNotFound({ name })
              : RunOutcome.outcomeOf(row.value)
        )
      })

    /**
     * After a restart of the host: the async runs that were in flight end as `HostRestarted`. Their worktrees
     * stay (unlocked, so `gcWorktrees` may collect them once someone has looked).
     */
    const restore = Effect.gen(function*() {
      const now = DateTime.formatIso(yield* DateTime.now)
      const interrupted: Array<string> = []
      for (const row of yield* store.runs) {
        if (row.status !== "running") continue
        const error = new HostRestarted({
          name: row.name,
          turnId: row.name,
          ...(row.worktree === null ? {} : { worktree: row.worktree })
        })
        store.saveRun({
          ...row,
          status: "failed",
          finishedAt: now,
          error: RunOutcome.storedError(error),
          errorMessage: error.message
        })
        yield* reports.post(row.name, "error", { error: { _tag: error._tag, message: error.message } })
        const ended = RunOutcome.finished(Exit.fail(error), { worktree: row.worktree })
        if (row.kind === "run") yield* reports.post(row.name, "run_finished", ended)
        if (row.worktree !== null) {
          yield* git.unlock(row.worktree)
        }
        interrupted.push(row.name)
      }
      return interrupted
    })

    /** The async runs and verifies the store knows (running and finished), newest first. */
    const runs = Effect.fn("Runs.runs")(function*(query: RunQuery = {}) {
      const rows = yield* store.runs
      const views = yield* Effect.forEach(rows, (row) =>
        row.status === "running" && row.kind === "run"
          ? registry.get(row.name).pipe(
            Effect.flatMap((agent) => agent.info),
            Effect.map((info) => viewOf(row, info.totals.costUsd)),
            Effect.orElseSucceed(() => viewOf(row))
          )
          : Effect.succeed(viewOf(row)))
      return selectRuns(views, query)
    })

    const worktrees = (cwd: string) => git.list(path.resolve(cwd))

    /** What a run in a worktree changed: as recorded when it ended (also after gc), or so far while it goes on. */
    const diff = diffs.diff

    /** Removes the run worktrees no run uses (`force`: the dirty ones too, their work committed first). */
    const gcWorktrees = (cwd: string, options: WorktreeGc.GcOptions = {}) =>
      Effect.zipRight(WorktreeGc.checkOptions(options), git.gc(path.resolve(cwd), { busy: busyWorktrees, ...options }))

    const addTemplates = (specs: ReadonlyArray<Spec.Spec>) =>
      Effect.sync(() => {
        for (const spec of specs) templates.set(spec.name, spec)
      })

    const template = (name: string) => Effect.sync(() => templates.get(name))

    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        closing = true
        return FiberMap.clear(background)
      })
    )

    return {
      run,
      runAsync,
      runResult,
      awaitRun,
      runs,
      verify,
      verifyAsync,
      worktrees,
      gcWorktrees,
      diff,
      addTemplates,
      template,
      restore
    } as const
  })
}) {}
