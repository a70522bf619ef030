/**
 * What a run (or a verify) ends with, as Schemas: its result (`RunResult`, `VerifyReport`) and the typed errors
 * it can fail with. And how an async run's outcome is kept in the store by name (`track`), then read back
 * (`outcomeOf`) for `runResult` after the run is gone, or after a restart of the host. And what a run's one
 * `run_finished` report entry says (`finished`, posted by `reportingEnd` or after `track`).
 */
import { Cause, Clock, DateTime, Effect, Exit, Option, Schema } from "effect"
import * as path from "node:path"
import type { Labels } from "./AgentOptions.js"
import { PermissionDenial } from "./ClaudeProtocol.js"
import { exact } from "./Decode.js"
import { RunErrorSchema, RunNotFound, TurnPending } from "./Errors.js"
import type {
  AgentAlreadyExists,
  AgentClosed,
  AgentNotFound,
  BranchNotFound,
  InvalidName,
  InvalidSpec,
  NoAttemptPassed,
  NotAGitRepo,
  SandboxUnavailable,
  SpawnFailed,
  StoreUnavailable,
  StructuredOutputMissing,
  TurnError,
  WorktreeFailed
} from "./Errors.js"
import type { RunRow, StoreShape } from "./Store.js"
import { CheckResult, VerifyResult } from "./Worktrees.js"

export const RunWorktree = Schema.Struct({
  path: Schema.String,
  branch: Schema.String,
  /** The branch's head after the run (with `cleanup`, what the run left is committed first). */
  commit: exact(Schema.String),
  /** Whether `cleanup` removed the worktree. */
  removed: Schema.Boolean
})
export type RunWorktree = typeof RunWorktree.Type

/** One attempt of a best-of-N run (or of a verified run), as its outcome keeps it. */
export const AttemptReport = Schema.Struct({
  attempt: Schema.Number,
  /** The attempt's own run name (`<run>-a<attempt>`): its report entries and transcript are under it. */
  name: Schema.String,
  /** `passed`: its turn succeeded and its checks passed; `interrupted`: another attempt won first. */
  status: Schema.Literal("passed", "failed", "interrupted"),
  costUsd: Schema.Number,
  sessionId: Schema.NullOr(Schema.String),
  worktree: Schema.NullOr(RunWorktree),
  /** Its checks, run in its worktree once its turn succeeded. */
  checks: Schema.NullOr(Schema.Array(CheckResult)),
  error: Schema.NullOr(Schema.Struct({ _tag: Schema.String, message: Schema.String }))
})
export type AttemptReport = typeof AttemptReport.Type

export const RunResult = Schema.Struct({
  kind: Schema.Literal("run"),
  name: Schema.String,
  text: Schema.String,
  costUsd: Schema.Number,
  durationMs: Schema.Number,
  modelCalls: Schema.Number,
  /** Resume it later as a session: `spawn(name, { resume: sessionId })`. */
  sessionId: Schema.String,
  structuredOutput: exact(Schema.Unknown),
  permissionDenials: Schema.Array(PermissionDenial),
  worktree: exact(RunWorktree),
  /** A best-of-N run (or a verified one): the winning attempt's number (its fields above are the winner's). */
  attempt: exact(Schema.Number),
  /** Every attempt, the winner's included, in order. */
  attempts: exact(Schema.Array(AttemptReport)),
  /** What every attempt cost together. */
  totalCostUsd: exact(Schema.Number)
})
export type RunResult = typeof RunResult.Type

export const VerifyReport = Schema.Struct({
  kind: Schema.Literal("verify"),
  name: Schema.String,
  ...VerifyResult.fields
})
export type VerifyReport = typeof VerifyReport.Type

/** A finished run's or verify's result, as the store keeps it. */
export const Outcome = Schema.Union(RunResult, VerifyReport)
export type Outcome = typeof Outcome.Type

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
  | NoAttemptPassed
  | StoreUnavailable

export type VerifyError = InvalidName | InvalidSpec | AgentAlreadyExists | NotAGitRepo | BranchNotFound | WorktreeFailed

const encodeError = Schema.encodeSync(RunErrorSchema)
const decodeError = Schema.decodeUnknownOption(RunErrorSchema)
const decodeOutcome = Schema.decodeUnknownOption(Outcome)

/** A typed error as the store keeps it (see `RunErrorSchema`). */
export const storedError = (error: RunError | VerifyError): unknown => encodeError(error)

/** A finished run's outcome as the store keeps it. A result that no longer decodes is a defect, named. */
export const outcomeOf = (row: RunRow): Exit.Exit<Outcome, RunError | VerifyError> => {
  if (row.status === "succeeded") {
    return Option.match(decodeOutcome(row.result), {
      onNone: () => Exit.die(new Error(`run ${row.name} succeeded, but its stored result cannot be read`)),
      onSome: Exit.succeed
    })
  }
  return Option.match(decodeError(row.error), {
    onNone: () => Exit.die(new Error(`run ${row.name} failed: ${row.errorMessage ?? "unknown"}`)),
    onSome: Exit.fail
  })
}

/** A run's (or verify's) outcome as `store` keeps it: RunNotFound when it has none, TurnPending while it runs. */
export const storedOutcome = Effect.fnUntraced(function*(store: StoreShape, name: string) {
  const row = yield* store.run(name)
  if (Option.isNone(row)) return yield* new RunNotFound({ name })
  if (row.value.status === "running") return yield* new TurnPending({ name, turnId: name, status: "running" })
  return yield* outcomeOf(row.value)
})

/**
 * Keeps an async run in the store: running (with its worktree once it has one), then its outcome, and then posts
 * a run's `run_finished` entry (with `finishing`, under its name). Nothing is written once `closing` says the fleet
 * shuts down: a run it interrupts is restored as interrupted by the restart (which posts the entry then).
 */
export const track = (
  store: StoreShape,
  closing: () => boolean,
  finishing: (name: string) => (entry: RunFinished) => Effect.Effect<unknown>
) =>
(name: string, kind: RunRow["kind"], labels?: Labels) =>
  Effect.gen(function*() {
    const started = yield* Clock.currentTimeMillis
    const startedAt = DateTime.formatIso(DateTime.unsafeMake(started))
    let worktree: string | null = null
    const save = (fields: Partial<RunRow>) => {
      if (closing()) return
      store.saveRun({
        name,
        kind,
        status: "running",
        startedAt,
        finishedAt: null,
        worktree,
        ...(labels === undefined || Object.keys(labels).length === 0 ? {} : { labels }),
        ...fields
      })
    }
    save({})
    return {
      worktree: (path: string) => {
        worktree = path
        save({})
      },
      /** Keeps the outcome and, for a run (a verify is not one), says that it finished. */
      done: (exit: Exit.Exit<Outcome, RunError | VerifyError>) =>
        Effect.flatMap(Clock.currentTimeMillis, (now): Effect.Effect<unknown> => {
          if (closing()) return Effect.void
          const finishedAt = DateTime.formatIso(DateTime.unsafeMake(now))
          if (Exit.isSuccess(exit)) save({ status: "succeeded", finishedAt, result: exit.value })
          else {
            const failure = exit.cause._tag === "Fail" ? exit.cause.error : undefined
            save({
              status: "failed",
              finishedAt,
              errorMessage: failure?.message ?? "the run died",
              ...(failure === undefined ? {} : { error: storedError(failure) })
            })
          }
          return kind === "run" ? finishing(name)(finished(exit, { durationMs: now - started, worktree })) : Effect.void
        })
    }
  })

/** What a run's one `run_finished` report entry says: how it ended, what it spent, where its work is. */
export interface RunFinished {
  readonly ok: boolean
  /** What the run spent (a best-of-N run: every attempt together). */
  readonly costUsd: number
  /** From its start to its end, on this host (not known after a restart). */
  readonly durationMs?: number
  readonly branch?: string
  /** Its worktree, while it exists. */
  readonly worktree?: string
  /** A best-of-N run: the winning attempt (its branch and worktree are the winner's). */
  readonly attempt?: number
  readonly error?: { readonly _tag: string; readonly message: string }
}

/** The `run_finished` entry of a run that ended with `exit`, given how long it took and the worktree it was given. */
export const finished = (
  exit: Exit.Exit<Outcome, { readonly _tag: string; readonly message: string }>,
  known: { readonly durationMs?: number | undefined; readonly worktree?: string | null | undefined }
): RunFinished => {
  const timed = known.durationMs === undefined ? {} : { durationMs: known.durationMs }
  if (Exit.isSuccess(exit)) {
    const result = exit.value
    if (result.kind === "verify") return { ok: true, costUsd: 0, ...timed }
    const tree = result.worktree
    return {
      ok: true,
      costUsd: result.totalCostUsd ?? result.costUsd,
      ...timed,
      ...(tree === undefined ? {} : { branch: tree.branch, ...(tree.removed ? {} : { worktree: tree.path }) }),
      ...(result.attempt === undefined ? {} : { attempt: result.attempt })
    }
  }
  const failure = Option.getOrUndefined(Cause.failureOption(exit.cause))
  const error = failure !== undefined
    ? { _tag: failure._tag, message: failure.message }
    : Cause.isInterruptedOnly(exit.cause)
    ? { _tag: "RunInterrupted", message: "the run was interrupted" }
    : { _tag: "Defect", message: Cause.pretty(exit.cause) }
  const spent = failure !== undefined && "costUsd" in failure && typeof failure.costUsd === "number"
    ? failure.costUsd
    : 0
  // A worktree git could not make is no place to look.
  const at = error._tag === "WorktreeFailed" ? undefined : known.worktree ?? undefined
  return {
    ok: false,
    costUsd: spent,
    ...timed,
    ...(at === undefined ? {} : { branch: `worktree-${path.basename(at)}`, worktree: at }),
    error
  }
}

/**
 * Runs a run to its end and then posts its `run_finished` entry (`post`, the report log's under its name), however
 * it ended; the worktree it is given is passed on to `onWorktree`.
 */
export const reportingEnd = Effect.fnUntraced(
  function*<E extends RunError>(
    post: (entry: RunFinished) => Effect.Effect<unknown>,
    run: (onWorktree: (path: string) => void) => Effect.Effect<RunResult, E>,
    onWorktree: (path: string) => void = () => undefined
  ) {
    return yield* Effect.flatMap(Clock.currentTimeMillis, (started) => {
      let worktree: string | undefined
      const given = (at: string) => {
        worktree = at
        onWorktree(at)
      }
      return run(given).pipe(
        Effect.onExit((exit) =>
          Effect.flatMap(
            Clock.currentTimeMillis,
            (now) => post(finished(exit, { durationMs: now - started, worktree }))
          )
        )
      )
    })
  }
)
