/**
 * Single-shot runs: an agent fired at one bounded task. It does the task, returns a structured result, and
 * ends. A run is an agent in the same registry (so `list`, `interrupt` and `close` reach it) that takes one
 * turn, optionally in its own git worktree, within bounds (turns, budget, time). Async runs, and async
 * verifies, keep their outcome by name for `runResult`.
 */
import * as CommandExecutor from "@effect/platform/CommandExecutor"
import * as FileSystem from "@effect/platform/FileSystem"
import { Clock, Deferred, Effect, Either, Exit, FiberMap, Option, Schema } from "effect"
import type { Duration } from "effect"
import { randomBytes } from "node:crypto"
import * as path from "node:path"
import type * as Agent from "./Agent.js"
import { ClaudeCli } from "./ClaudeCli.js"
import {
  AgentAlreadyExists,
  HostRestarted,
  InvalidSpec,
  RunErrorSchema,
  RunNotFound,
  TurnPending,
  WorktreeFailed
} from "./Errors.js"
import type {
  AgentClosed,
  AgentNotFound,
  BranchNotFound,
  InvalidName,
  NotAGitRepo,
  SandboxUnavailable,
  SpawnFailed,
  StructuredOutputMissing,
  TurnError
} from "./Errors.js"
import { FleetConfig } from "./FleetConfig.js"
import type * as Permission from "./Permission.js"
import { Registry, validateName } from "./Registry.js"
import { ReportLog } from "./ReportLog.js"
import type { RunQuery } from "./RunList.js"
import { selectRuns, viewOf } from "./RunList.js"
import * as Sandbox from "./Sandbox.js"
import type { Spec } from "./Spec.js"
import { Store } from "./Store.js"
import type { RunRow } from "./Store.js"
import * as Worktrees from "./Worktrees.js"

export interface RunOptions {
  readonly prompt?: string
  readonly cwd?: string
  readonly model?: string
  readonly permission?: Permission.Policy
  readonly systemPrompt?: string
  readonly appendSystemPrompt?: string
  /** `true` isolates the run in `<repo>/.claude/worktrees/<run name>`; a string names the worktree. */
  readonly worktree?: boolean | string
  /** After a successful run, commit what it left and remove its worktree (the branch stays). */
  readonly cleanup?: boolean
  /** Unique among live runs and agents; generated when absent. */
  readonly name?: string
  /** A JSON Schema: the result's `structuredOutput` then conforms to it. */
  readonly jsonSchema?: Record<string, unknown>
  readonly maxTurns?: number
  readonly maxBudgetUsd?: number
  /** The run is interrupted when it expires (TurnTimeout). */
  readonly timeout?: Duration.DurationInput
  readonly env?: Readonly<Record<string, string>>
  /** A `run` entry of the declarative fleet; the call's own options override its fields. */
  readonly template?: string
  /** Told what the run is doing as it streams (for progress displays). */
  readonly onActivity?: Agent.AgentOptions["onActivity"]
  /**
   * Run its Bash tool in the CLI's OS sandbox: `true` writes only in its cwd (its worktree, with `worktree`) and
   * reaches no network; `{ network: { allow: [hosts] }, writable: [paths] }` adds hosts and paths (relative ones
   * from `cwd`). It never starts unsandboxed (`SandboxUnavailable`).
   */
  readonly sandbox?: Sandbox.SandboxData
}

export interface RunWorktree {
  readonly path: string
  readonly branch: string
  /** The branch's head after the run (with `cleanup`, what the run left is committed first). */
  readonly commit?: string
  /** Whether `cleanup` removed the worktree. */
  readonly removed: boolean
}

export interface RunResult {
  readonly kind: "run"
  readonly name: string
  readonly text: string
  readonly costUsd: number
  readonly durationMs: number
  readonly modelCalls: number
  /** Resume it later as a session: `spawn(name, { resume: sessionId })`. */
  readonly sessionId: string
  readonly structuredOutput?: unknown
  readonly permissionDenials: Agent.TurnResult["permissionDenials"]
  readonly worktree?: RunWorktree
}

export interface VerifyReport extends Worktrees.VerifyResult {
  readonly kind: "verify"
  readonly name: string
}

export type RunError =
  | TurnError
  | InvalidName
  | InvalidSpec
  | AgentAlreadyExists
  | AgentNotFound
  | AgentClosed
  | SpawnFailed
  | SandboxUnavailable
  | NotAGitRepo
  | WorktreeFailed
  | StructuredOutputMissing

export type VerifyError = InvalidName | InvalidSpec | AgentAlreadyExists | NotAGitRepo | BranchNotFound | WorktreeFailed

const newName = (prefix: string) => `${prefix}-${randomBytes(4).toString("hex")}`

/** A template's fields as run options. */
const fromTemplate = (spec: Spec): RunOptions => ({
  cwd: spec.cwd,
  model: spec.model,
  permission: spec.permission,
  timeout: spec.timeout,
  ...(spec.prompt === undefined ? {} : { prompt: spec.prompt }),
  ...(spec.systemPrompt === undefined ? {} : { systemPrompt: spec.systemPrompt }),
  ...(spec.appendSystemPrompt === undefined ? {} : { appendSystemPrompt: spec.appendSystemPrompt }),
  ...(spec.worktree === undefined ? {} : { worktree: spec.worktree }),
  ...(spec.cleanup === undefined ? {} : { cleanup: spec.cleanup }),
  ...(spec.jsonSchema === undefined ? {} : { jsonSchema: spec.jsonSchema }),
  ...(spec.maxTurns === undefined ? {} : { maxTurns: spec.maxTurns }),
  ...(spec.maxBudgetUsd === undefined ? {} : { maxBudgetUsd: spec.maxBudgetUsd }),
  ...(spec.env === undefined ? {} : { env: spec.env }),
  ...(spec.sandbox === undefined ? {} : { sandbox: spec.sandbox })
})

/** The CLI flags for a run's bounds and schema. */
export const boundFlags = (options: RunOptions): ReadonlyArray<string> => [
  ...(options.maxTurns === undefined ? [] : ["--max-turns", String(options.maxTurns)]),
  ...(options.maxBudgetUsd === undefined ? [] : ["--max-budget-usd", String(options.maxBudgetUsd)]),
  ...(options.jsonSchema === undefined ? [] : ["--json-schema", JSON.stringify(options.jsonSchema)])
]

const cwdOf = (options: RunOptions) => path.resolve(options.cwd ?? ".")

const invalid = (field: string, reason: string) => new InvalidSpec({ path: field, reason })

const checkOptions = (options: RunOptions): Effect.Effect<void, InvalidSpec> => {
  if (typeof options.prompt !== "string" || options.prompt.trim().length === 0) {
    return invalid("prompt", "a run needs a non-empty prompt")
  }
  if (options.maxTurns !== undefined && !(Number.isInteger(options.maxTurns) && options.maxTurns > 0)) {
    return invalid("maxTurns", "must be a positive integer")
  }
  if (options.maxBudgetUsd !== undefined && !(options.maxBudgetUsd > 0)) {
    return invalid("maxBudgetUsd", "must be a positive number of dollars")
  }
  if (options.jsonSchema !== undefined && (typeof options.jsonSchema !== "object" || options.jsonSchema === null)) {
    return invalid("jsonSchema", "must be a JSON Schema object")
  }
  if (options.cleanup === true && (options.worktree === undefined || options.worktree === false)) {
    return invalid("cleanup", "cleanup removes a run's worktree: set worktree too")
  }
  return Effect.void
}

type Outcome = Deferred.Deferred<RunResult | VerifyReport, RunError | VerifyError>

const encodeError = Schema.encodeSync(RunErrorSchema)
const decodeError = Schema.decodeUnknownOption(RunErrorSchema)

/** A finished run's outcome as the store keeps it. */
const outcomeOf = (row: RunRow): Exit.Exit<RunResult | VerifyReport, RunError | VerifyError> => {
  if (row.status === "succeeded") return Exit.succeed(row.result as RunResult | VerifyReport)
  const error = decodeError(row.error)
  return Option.isSome(error)
    ? Exit.fail(error.value as RunError | VerifyError)
    : Exit.die(new Error(`run ${row.name} failed: ${row.errorMessage ?? "unknown"}`))
}

export class Runs extends Effect.Service<Runs>()("@flotta/core/Runs", {
  scoped: Effect.gen(function*() {
    const registry = yield* Registry
    const reports = yield* ReportLog
    const settings = yield* FleetConfig
    const executor = yield* CommandExecutor.CommandExecutor
    const fileSystem = yield* FileSystem.FileSystem
    const store = yield* Store
    const cli = yield* ClaudeCli
    const background = yield* FiberMap.make<string>()
    /** Async runs in progress, by name; a finished one's outcome is in the store. */
    const outcomes = new Map<string, Outcome>()
    /** Set when the fleet shuts down: runs it interrupts are restored as interrupted by the restart. */
    let closing = false
    /** Names of runs and verifies in progress (sync and async). */
    const live = new Set<string>()
    /** Worktrees whose run is still going: gc leaves them alone. */
    const busyWorktrees = new Set<string>()
    /** `run` entries of the declarative fleet, by name. */
    const templates = new Map<string, Spec>()

    const provide = <A, E>(effect: Effect.Effect<A, E, CommandExecutor.CommandExecutor | FileSystem.FileSystem>) =>
      effect.pipe(
        Effect.provideService(CommandExecutor.CommandExecutor, executor),
        Effect.provideService(FileSystem.FileSystem, fileSystem)
      )

    /** Applies the template, checks the options, and reserves the name. */
    const prepare = (input: RunOptions) =>
      Effect.gen(function*() {
        let options = input
        if (input.template !== undefined) {
          const template = templates.get(input.template)
          if (template === undefined) return yield* invalid("template", `no run template named "${input.template}"`)
          options = { ...fromTemplate(template), ...input }
        }
        yield* checkOptions(options)
        // Its sandbox checked, and its writable paths made absolute from the cwd it was given (not its worktree).
        options = yield* Either.mapLeft(Sandbox.withOptions(options), (bad) => new InvalidSpec(bad))
        const name = yield* validateName(options.name ?? newName(input.template ?? "run"))
        if (typeof options.worktree === "string") yield* validateName(options.worktree)
        if (live.has(name) || (yield* registry.liveNames).includes(name)) {
          return yield* new AgentAlreadyExists({ name })
        }
        live.add(name)
        return { name, options }
      })

    /** Keeps an async run in the store: running (with its worktree once it has one), then its outcome. */
    const track = (name: string, kind: RunRow["kind"]) =>
      Effect.gen(function*() {
        const startedAt = new Date(yield* Clock.currentTimeMillis).toISOString()
        let worktree: string | null = null
        const save = (fields: Partial<RunRow>) => {
          if (closing) return
          store.saveRun({ name, kind, status: "running", startedAt, finishedAt: null, worktree, ...fields })
        }
        save({})
        return {
          worktree: (path: string) => {
            worktree = path
            save({})
          },
          done: (exit: Exit.Exit<RunResult | VerifyReport, RunError | VerifyError>) =>
            Clock.currentTimeMillis.pipe(Effect.map((now) => {
              const finishedAt = new Date(now).toISOString()
              if (Exit.isSuccess(exit)) save({ status: "succeeded", finishedAt, result: exit.value })
              else {
                const failure = exit.cause._tag === "Fail" ? exit.cause.error : undefined
                save({
                  status: "failed",
                  finishedAt,
                  errorMessage: failure?.message ?? "the run died",
                  ...(failure === undefined ? {} : { error: encodeError(failure) })
                })
              }
            }))
        }
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
          const repo = yield* provide(Worktrees.repoRoot(cwd))
          const worktreeName = typeof options.worktree === "string" ? options.worktree : name
          // Kept before it exists: a host that dies while git makes it still leaves the path behind.
          onWorktree(Worktrees.pathOf(repo, worktreeName))
          worktree = yield* provide(Worktrees.create(repo, worktreeName))
          busyWorktrees.add(worktree.path)
          runCwd = path.join(worktree.path, path.relative(repo, cwd))
        }
        const held = worktree
        const agentOptions: Agent.AgentOptions = {
          cwd: runCwd,
          lifecycle: "run",
          extraArgs: boundFlags(options),
          expectStructuredOutput: options.jsonSchema !== undefined,
          ...(options.model === undefined ? {} : { model: options.model }),
          ...(options.permission === undefined ? {} : { permission: options.permission }),
          ...(options.systemPrompt === undefined ? {} : { systemPrompt: options.systemPrompt }),
          ...(options.appendSystemPrompt === undefined ? {} : { appendSystemPrompt: options.appendSystemPrompt }),
          ...(options.env === undefined ? {} : { env: options.env }),
          ...(options.onActivity === undefined ? {} : { onActivity: options.onActivity }),
          ...(options.sandbox === undefined ? {} : { sandbox: options.sandbox })
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
          Effect.ensuring(
            held === undefined
              ? Effect.void
              : Effect.sync(() => busyWorktrees.delete(held.path)).pipe(
                // An unfinished run's worktree stays for inspection, unlocked so gc may collect it.
                Effect.zipRight(provide(Worktrees.git(held.path, "worktree", "unlock", held.path)).pipe(Effect.ignore))
              )
          ),
          Effect.catchTag("NoResult", () => Effect.dieMessage("a run's own turn vanished"))
        )
        let runWorktree: RunWorktree | undefined
        if (held !== undefined) {
          if (options.cleanup === true) {
            const commit = yield* provide(Worktrees.commitAll(held, `flotta run ${name}`))
            const repo = yield* provide(Worktrees.repoRoot(cwd))
            yield* provide(Worktrees.remove(repo, held.path))
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
        // git failing (a hook, a full disk, a lock) is the user's to see and fix, not a defect.
        Effect.catchTag("CommandFailed", (e) => new WorktreeFailed({ path: cwdOf(options), reason: e.reason })),
        Effect.tapError((error) =>
          // Failures before the agent existed (a bad worktree, say) still reach the report log.
          error._tag === "NotAGitRepo" || error._tag === "WorktreeFailed" || error._tag === "SandboxUnavailable"
            ? reports.post(name, "error", { error: { _tag: error._tag, message: error.message } })
            : Effect.void
        ),
        Effect.ensuring(Effect.sync(() => live.delete(name))),
        Effect.withSpan("flotta.run", { attributes: { "flotta.run": name } })
      )

    /** Runs synchronously: the result, or the run's typed failure. */
    const run = Effect.fn("Runs.run")(function*(options: RunOptions) {
      const prepared = yield* prepare(options).pipe(Effect.mapError((e) => e as RunError))
      return yield* execute(prepared.name, prepared.options)
    })

    /** Starts a run under supervision and returns its name at once. */
    const runAsync = Effect.fn("Runs.runAsync")(function*(options: RunOptions) {
      const prepared = yield* prepare(options)
      const outcome: Outcome = yield* Deferred.make<RunResult | VerifyReport, RunError | VerifyError>()
      outcomes.set(prepared.name, outcome)
      const tracked = yield* track(prepared.name, "run")
      yield* FiberMap.run(
        background,
        prepared.name,
        execute(prepared.name, prepared.options, tracked.worktree).pipe(
          Effect.exit,
          Effect.tap(tracked.done),
          Effect.flatMap((exit) => Deferred.done(outcome, exit)),
          Effect.ensuring(Effect.sync(() => outcomes.delete(prepared.name)))
        )
      )
      return prepared.name
    })

    const verifyNamed = (name: string, cwd: string, options: Worktrees.VerifyOptions) =>
      Effect.gen(function*() {
        yield* reports.post(name, "spawned", { kind: "verify", branch: options.branch, checks: options.checks })
        const result = yield* provide(Worktrees.verify(path.resolve(cwd), options))
        const report: VerifyReport = { kind: "verify", name, ...result }
        yield* reports.post(name, "result", {
          passed: result.passed,
          commit: result.commit,
          checks: result.checks.map(({ command, exitCode, ok, timedOut }) => ({ command, ok, exitCode, timedOut }))
        })
        return report
      }).pipe(
        Effect.tapError((error) =>
          reports.post(name, "error", { error: { _tag: error._tag, message: error.message } })
        ),
        Effect.ensuring(reports.post(name, "closed", {}).pipe(Effect.zipRight(Effect.sync(() => live.delete(name)))))
      )

    const prepareVerify = (options: Worktrees.VerifyOptions & { readonly name?: string }) =>
      Effect.gen(function*() {
        if (typeof options.branch !== "string" || options.branch.length === 0) {
          return yield* invalid("branch", "name the branch (or commit) to verify")
        }
        if (!Array.isArray(options.checks) || options.checks.length === 0) {
          return yield* invalid("checks", "give at least one shell command to run")
        }
        if (options.checks.some((c) => typeof c !== "string" || c.trim().length === 0)) {
          return yield* invalid("checks", "every check must be a non-empty shell command")
        }
        const name = yield* validateName(options.name ?? newName("verify"))
        if (live.has(name)) return yield* new AgentAlreadyExists({ name })
        live.add(name)
        return name
      })

    /** Runs shell checks against a branch in a throwaway worktree. */
    const verify = Effect.fn("Runs.verify")(function*(
      cwd: string,
      options: Worktrees.VerifyOptions & { readonly name?: string }
    ) {
      const name = yield* prepareVerify(options)
      return yield* verifyNamed(name, cwd, options)
    })

    const verifyAsync = Effect.fn("Runs.verifyAsync")(function*(
      cwd: string,
      options: Worktrees.VerifyOptions & { readonly name?: string }
    ) {
      const name = yield* prepareVerify(options)
      const outcome: Outcome = yield* Deferred.make<RunResult | VerifyReport, RunError | VerifyError>()
      outcomes.set(name, outcome)
      const tracked = yield* track(name, "verify")
      yield* FiberMap.run(
        background,
        name,
        verifyNamed(name, cwd, options).pipe(
          Effect.exit,
          Effect.tap(tracked.done),
          Effect.flatMap((exit) => Deferred.done(outcome, exit)),
          Effect.ensuring(Effect.sync(() => outcomes.delete(name)))
        )
      )
      return name
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
        const row = yield* store.run(name)
        if (Option.isNone(row)) return yield* new RunNotFound({ name })
        if (row.value.status === "running") return yield* new TurnPending({ name, turnId: name, status: "running" })
        return yield* outcomeOf(row.value)
      })

    /** Waits for an async run (or verify) to finish. */
    const awaitRun = (name: string) =>
      Effect.suspend((): Effect.Effect<RunResult | VerifyReport, RunError | VerifyError | RunNotFound> => {
        const outcome = outcomes.get(name)
        if (outcome !== undefined) return Deferred.await(outcome)
        return Effect.flatMap(
          store.run(name),
          (row): Effect.Effect<RunResult | VerifyReport, RunError | VerifyError | RunNotFound> =>
            Option.isNone(row) || row.value.status === "running" ? new RunNotFound({ name }) : outcomeOf(row.value)
        )
      })

    /**
     * After a restart of the host: the async runs that were in flight end as `HostRestarted`. Their worktrees
     * stay (unlocked, so `gcWorktrees` may collect them once someone has looked).
     */
    const restore = Effect.gen(function*() {
      const now = new Date(yield* Clock.currentTimeMillis).toISOString()
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
          error: encodeError(error),
          errorMessage: error.message
        })
        yield* reports.post(row.name, "error", { error: { _tag: error._tag, message: error.message } })
        if (row.worktree !== null) {
          yield* provide(Worktrees.git(row.worktree, "worktree", "unlock", row.worktree)).pipe(Effect.ignore)
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

    const worktrees = (cwd: string) => provide(Worktrees.list(path.resolve(cwd)))

    const gcWorktrees = (cwd: string, options: { readonly force?: boolean } = {}) =>
      provide(Worktrees.gc(path.resolve(cwd), { busy: busyWorktrees, ...options }))

    const addTemplates = (specs: ReadonlyArray<Spec>) =>
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
      addTemplates,
      template,
      restore
    } as const
  })
}) {}
