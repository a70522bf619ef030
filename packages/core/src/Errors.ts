/**
 * Every typed failure a caller of the fleet can see. They are `Schema.TaggedError`s because they leave the
 * process (MCP tool results, CLI output, persisted reports); each carries a message that says what happened.
 */
import { Schema } from "effect"
import { StoreUnavailable } from "./StoreErrors.js"

const NullableNumber = Schema.NullOr(Schema.Number)

export class InvalidName extends Schema.TaggedError<InvalidName>()("InvalidName", {
  name: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `invalid name ${JSON.stringify(this.name)}: ${this.reason}`
  }
}

export class InvalidSpec extends Schema.TaggedError<InvalidSpec>()("InvalidSpec", {
  path: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `invalid spec at ${this.path}: ${this.reason}`
  }
}

export class AgentAlreadyExists extends Schema.TaggedError<AgentAlreadyExists>()("AgentAlreadyExists", {
  name: Schema.String
}) {
  override get message() {
    return `an agent named "${this.name}" already exists: close it first or pick another name`
  }
}

/** When and why an agent was closed. */
const ClosedWhen = Schema.Struct({ reason: Schema.String, at: Schema.optionalWith(Schema.String, { exact: true }) })

/**
 * No live agent has the name. When the store still has one of that name closed, `closed` says why and when: its
 * info and transcript can still be read, and nothing else can be done with it.
 */
export class AgentNotFound extends Schema.TaggedError<AgentNotFound>()("AgentNotFound", {
  name: Schema.String,
  live: Schema.Array(Schema.String),
  closed: Schema.optionalWith(ClosedWhen, { exact: true })
}) {
  override get message() {
    const live = this.live.length === 0 ? "no agents are live" : `live agents: ${this.live.join(", ")}`
    if (this.closed === undefined) return `no agent named "${this.name}" (${live})`
    const at = this.closed.at === undefined ? "" : ` at ${this.closed.at}`
    return `agent "${this.name}" was closed${at} (${this.closed.reason}): only its info and transcript can still ` +
      `be read (${live})`
  }
}

export class SpawnFailed extends Schema.TaggedError<SpawnFailed>()("SpawnFailed", {
  name: Schema.String,
  reason: Schema.String,
  exitCode: NullableNumber,
  stderr: Schema.String
}) {
  override get message() {
    const code = this.exitCode === null ? "" : ` (exit code ${this.exitCode})`
    const tail = this.stderr.length === 0 ? "" : `\nstderr:\n${this.stderr}`
    return `agent "${this.name}" failed to start${code}: ${this.reason}${tail}`
  }
}

export class TurnTimeout extends Schema.TaggedError<TurnTimeout>()("TurnTimeout", {
  name: Schema.String,
  turnId: Schema.String,
  timeoutMs: Schema.Number,
  /** What the interrupted turn had spent, when its result arrived. */
  costUsd: Schema.optional(Schema.Number),
  turns: Schema.optional(Schema.Number),
  sessionId: Schema.optional(Schema.String)
}) {
  override get message() {
    return `turn ${this.turnId} of "${this.name}" timed out after ${this.timeoutMs} ms and was interrupted`
  }
}

export class TurnInterrupted extends Schema.TaggedError<TurnInterrupted>()("TurnInterrupted", {
  name: Schema.String,
  turnId: Schema.String,
  /** What the interrupted turn had spent, and its session, when its result arrived. */
  costUsd: Schema.optional(Schema.Number),
  sessionId: Schema.optional(Schema.String)
}) {
  override get message() {
    return `turn ${this.turnId} of "${this.name}" was interrupted`
  }
}

export class TurnFailed extends Schema.TaggedError<TurnFailed>()("TurnFailed", {
  name: Schema.String,
  turnId: Schema.String,
  status: NullableNumber,
  subtype: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    const status = this.status === null ? "" : ` (HTTP ${this.status})`
    return `turn ${this.turnId} of "${this.name}" failed${status}: ${this.reason}`
  }
}

export class AgentCrashed extends Schema.TaggedError<AgentCrashed>()("AgentCrashed", {
  name: Schema.String,
  turnId: Schema.NullOr(Schema.String),
  exitCode: NullableNumber,
  reason: Schema.String,
  stderr: Schema.String
}) {
  override get message() {
    const code = this.exitCode === null ? "" : ` (exit code ${this.exitCode})`
    const tail = this.stderr.length === 0 ? "" : `\nstderr:\n${this.stderr}`
    return `agent "${this.name}" crashed${code}: ${this.reason}${tail}`
  }
}

export class AgentClosed extends Schema.TaggedError<AgentClosed>()("AgentClosed", {
  name: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `agent "${this.name}" is closed: ${this.reason}`
  }
}

export class TurnPending extends Schema.TaggedError<TurnPending>()("TurnPending", {
  name: Schema.String,
  turnId: Schema.String,
  status: Schema.Literal("queued", "running")
}) {
  override get message() {
    return `turn ${this.turnId} of "${this.name}" is still ${this.status}: ask again later`
  }
}

export class NoResult extends Schema.TaggedError<NoResult>()("NoResult", {
  name: Schema.String,
  turnId: Schema.String
}) {
  override get message() {
    return this.turnId === "latest"
      ? `"${this.name}" has no finished turn yet`
      : `"${this.name}" has no turn ${this.turnId}`
  }
}

export class BudgetExceeded extends Schema.TaggedError<BudgetExceeded>()("BudgetExceeded", {
  name: Schema.String,
  costUsd: Schema.Number,
  turns: Schema.Number,
  sessionId: Schema.String,
  budgetUsd: Schema.optionalWith(Schema.Number, { exact: true }), // a session's own (`maxBudgetUsd`): no new turn
  per: Schema.optionalWith(Schema.Literal("day", "life"), { exact: true })
}) {
  override get message() {
    const per = this.per === "day" ? "today" : "for its life"
    if (this.budgetUsd !== undefined) return `"${this.name}" spent $${this.costUsd} of its $${this.budgetUsd} ${per}`
    return `"${this.name}" stopped at its budget after $${this.costUsd.toFixed(4)} and ${this.turns} model calls`
  }
}

export class MaxTurnsReached extends Schema.TaggedError<MaxTurnsReached>()("MaxTurnsReached", {
  name: Schema.String,
  costUsd: Schema.Number,
  turns: Schema.Number,
  sessionId: Schema.String
}) {
  override get message() {
    return `"${this.name}" stopped at its turn limit after ${this.turns} model calls ($${this.costUsd.toFixed(4)})`
  }
}

export class NotAGitRepo extends Schema.TaggedError<NotAGitRepo>()("NotAGitRepo", {
  cwd: Schema.String
}) {
  override get message() {
    return `${this.cwd} is not inside a git repository`
  }
}

export class RunNotFound extends Schema.TaggedError<RunNotFound>()("RunNotFound", {
  name: Schema.String
}) {
  override get message() {
    return `no run named "${this.name}"`
  }
}

export class WorktreeFailed extends Schema.TaggedError<WorktreeFailed>()("WorktreeFailed", {
  path: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `git worktree at ${this.path}: ${this.reason}`
  }
}

export class BranchNotFound extends Schema.TaggedError<BranchNotFound>()("BranchNotFound", {
  cwd: Schema.String,
  branch: Schema.String
}) {
  override get message() {
    return `no branch or commit named "${this.branch}" in the repository at ${this.cwd}`
  }
}

export class StructuredOutputMissing extends Schema.TaggedError<StructuredOutputMissing>()("StructuredOutputMissing", {
  name: Schema.String,
  sessionId: Schema.String,
  text: Schema.String
}) {
  override get message() {
    return `run "${this.name}" was given a JSON schema but its result has no structured output ` +
      `(the model answered in text: ${JSON.stringify(this.text.slice(0, 200))})`
  }
}

export class HostRestarted extends Schema.TaggedError<HostRestarted>()("HostRestarted", {
  name: Schema.String,
  turnId: Schema.String,
  worktree: Schema.optional(Schema.String)
}) {
  override get message() {
    const kept = this.worktree === undefined ? "" : ` (its worktree is kept: ${this.worktree})`
    return `"${this.name}" was running ${this.turnId} when the host stopped; it was not sent again, because the ` +
      `model may already have acted${kept}`
  }
}

// Why a store cannot be used: a concept of its own, kept here under the names every caller knows.
export { HostLost, HostUnavailable } from "./HostErrors.js"
export { StoreLocked, StoreSchemaTooNew, StoreUnavailable } from "./StoreErrors.js"
export type { StoreError } from "./StoreErrors.js"

export class ApprovalNotFound extends Schema.TaggedError<ApprovalNotFound>()("ApprovalNotFound", {
  id: Schema.String,
  pending: Schema.Array(Schema.String)
}) {
  override get message() {
    const pending = this.pending.length === 0 ? "no approval is pending" : `pending: ${this.pending.join(", ")}`
    return `no approval has the id ${JSON.stringify(this.id)} (${pending})`
  }
}

/** A decision came for an approval that is no longer pending: it expired, or was decided already. */
export class ApprovalExpired extends Schema.TaggedError<ApprovalExpired>()("ApprovalExpired", {
  id: Schema.String,
  agent: Schema.String,
  tool: Schema.String,
  status: Schema.Literal("allowed", "denied", "expired"),
  reason: Schema.String
}) {
  override get message() {
    return `approval ${this.id} (${this.tool} for ${this.agent}) is no longer pending: ${this.reason}`
  }
}

/**
 * A sandboxed agent cannot start because the sandbox cannot run on this machine (a tool is missing, or the
 * platform has none): it is never started unsandboxed. `install` is the command that installs what is missing.
 */
export class SandboxUnavailable extends Schema.TaggedError<SandboxUnavailable>()("SandboxUnavailable", {
  name: Schema.String,
  reason: Schema.String,
  missing: Schema.Array(Schema.String),
  install: Schema.String
}) {
  override get message() {
    const fix = this.install.length === 0
      ? ""
      : `; install ${this.missing.length === 1 ? "it" : "them"}: ${this.install}`
    return `"${this.name}" is sandboxed, but the sandbox cannot run on this machine: ${this.reason}${fix} ` +
      `(it was not started unsandboxed)`
  }
}

/**
 * A fork the source cannot give: its turn failed (a fork is cut at a turn that succeeded, so its conversation
 * ends with an answer), or it has no conversation yet.
 */
export class CannotFork extends Schema.TaggedError<CannotFork>()("CannotFork", {
  source: Schema.String,
  turnId: Schema.NullOr(Schema.String),
  reason: Schema.String
}) {
  override get message() {
    const at = this.turnId === null ? "" : ` at ${this.turnId}`
    return `"${this.source}" cannot be forked${at}: ${this.reason}`
  }
}

/** A session that cannot hibernate now: it is working (or waiting on someone), starting, or it is a run. */
export class CannotHibernate extends Schema.TaggedError<CannotHibernate>()("CannotHibernate", {
  name: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `"${this.name}" cannot hibernate now: ${this.reason}`
  }
}

/** One attempt of a best-of-N run that did not pass: the check it failed, or the error it ended with. */
export const AttemptFailure = Schema.Struct({
  attempt: Schema.Number,
  /** The attempt's own run name (`<run>-a<attempt>`). */
  name: Schema.String,
  costUsd: Schema.Number,
  /** Its branch, which keeps what it did (committed before its worktree was removed). */
  branch: Schema.NullOr(Schema.String),
  check: Schema.NullOr(Schema.Struct({
    command: Schema.String,
    exitCode: Schema.NullOr(Schema.Number),
    timedOut: Schema.Boolean
  })),
  error: Schema.NullOr(Schema.Struct({ _tag: Schema.String, message: Schema.String }))
})
export type AttemptFailure = typeof AttemptFailure.Type

/** Every attempt of a best-of-N run (or of a verified run) failed its checks or its turn. */
export class NoAttemptPassed extends Schema.TaggedError<NoAttemptPassed>()("NoAttemptPassed", {
  name: Schema.String,
  attempts: Schema.Array(AttemptFailure),
  /** What every attempt spent, together. */
  costUsd: Schema.Number
}) {
  override get message() {
    const why = this.attempts.map((a) => {
      const reason = a.check !== null
        ? `\`${a.check.command}\` ${a.check.timedOut ? "timed out" : `exited ${a.check.exitCode ?? "without a code"}`}`
        : `${a.error?._tag ?? "failed"}${a.error === null ? "" : `: ${a.error.message}`}`
      return `attempt ${a.attempt}: ${reason}`
    })
    return `no attempt of "${this.name}" passed (${why.join("; ")})`
  }
}

/** What a turn can fail with, as seen by `ask` and `result`. */
export type TurnError =
  | TurnTimeout
  | TurnInterrupted
  | TurnFailed
  | AgentCrashed
  | AgentClosed
  | MaxTurnsReached
  | BudgetExceeded
  | StructuredOutputMissing
  | HostRestarted

/** Every `TurnError`, as one Schema: how a finished turn's failure is kept in the store and read back. */
export const TurnErrorSchema = Schema.Union(
  TurnTimeout,
  TurnInterrupted,
  TurnFailed,
  AgentCrashed,
  AgentClosed,
  MaxTurnsReached,
  BudgetExceeded,
  StructuredOutputMissing,
  HostRestarted
)

/** What a run or a verify can fail with, as one Schema: how a finished async run's failure is kept. */
export const RunErrorSchema = Schema.Union(
  TurnErrorSchema,
  InvalidName,
  InvalidSpec,
  AgentAlreadyExists,
  AgentNotFound,
  SpawnFailed,
  SandboxUnavailable,
  NotAGitRepo,
  WorktreeFailed,
  BranchNotFound,
  NoAttemptPassed,
  // A run's agent starts numbering its turns from what the store has: a store that cannot be read fails it.
  StoreUnavailable
)
