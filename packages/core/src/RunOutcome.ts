/**
 * What a run (or a verify) ends with, as Schemas: its result (`RunResult`, `VerifyReport`) and the typed errors
 * it can fail with. And how an async run's outcome is kept in the store by name (`track`), then read back
 * (`outcomeOf`) for `runResult` after the run is gone, or after a restart of the host.
 */
import { Clock, DateTime, Effect, Exit, Option, Schema } from "effect"
import { PermissionDenial } from "./ClaudeProtocol.js"
import { exact } from "./Decode.js"
import { RunErrorSchema } from "./Errors.js"
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

/**
 * Keeps an async run in the store: running (with its worktree once it has one), then its outcome. Nothing is
 * written once `closing` says the fleet shuts down: a run it interrupts is restored as interrupted by the restart.
 */
export const track = (store: StoreShape, closing: () => boolean) => (name: string, kind: RunRow["kind"]) =>
  Effect.gen(function*() {
    const startedAt = DateTime.formatIso(yield* DateTime.now)
    let worktree: string | null = null
    const save = (fields: Partial<RunRow>) => {
      if (closing()) return
      store.saveRun({ name, kind, status: "running", startedAt, finishedAt: null, worktree, ...fields })
    }
    save({})
    return {
      worktree: (path: string) => {
        worktree = path
        save({})
      },
      done: (exit: Exit.Exit<Outcome, RunError | VerifyError>) =>
        Clock.currentTimeMillis.pipe(Effect.map((now) => {
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
        }))
    }
  })
