/**
 * The tools' results, as Effect Schemas: what the engine returns, with the descriptions a client reads; they
 * tolerate fields added later. And the field helpers the arguments use too (`req`, `opt`). `Schemas` re-exports it.
 */
import * as Options from "@flotta/core/AgentOptions"
import * as View from "@flotta/core/AgentView"
import { exact } from "@flotta/core/Decode"
import * as Outcome from "@flotta/core/RunOutcome"
import { SandboxData } from "@flotta/core/Sandbox"
import { Schema } from "effect"

/** Any JSON value, said so explicitly (an empty schema reads as "no contract" to schema linters). */
export const JsonValue = Schema.Unknown.annotations({
  jsonSchema: { anyOf: ["object", "array", "string", "number", "boolean", "null"].map((type) => ({ type })) }
})

/** A required field, described for the client (the description goes on the field, not into error messages). */
export const req = <S extends Schema.Schema.All>(schema: S, description: string) =>
  Schema.propertySignature(schema).annotations({ description })

/** An optional field that is absent, never `undefined` (what `exactOptionalPropertyTypes` expects). */
export const opt = <A, I, R>(schema: Schema.Schema<A, I, R>, description?: string) =>
  exact(schema).annotations(description === undefined ? {} : { description })

const describe = <S extends Schema.Schema.Any>(schema: S, description: string) =>
  schema.annotations({ description }) as S

const NullableString = Schema.NullOr(Schema.String)
const NullableNumber = Schema.NullOr(Schema.Number)

export const ErrorView = View.ErrorView

const PARKED_UNTIL_DESCRIPTION = "While parked at a usage limit: when it resumes (ISO 8601); null when it is not parked"
export const CONTEXT_DESCRIPTION = "How full its context window is after its last turn: tokens, the window " +
  "(null when the CLI did not say) and the percentage used"

const STATUS_DESCRIPTION =
  "starting, idle, working, waiting_approval, parked, restarting, hibernated (no process; a prompt wakes it) or closed"

// The engine's views (`@flotta/core/AgentView`), with the descriptions a client reads.

export const AgentInfo = Schema.Struct({
  ...View.AgentInfo.fields,
  status: describe(View.AgentStatus, STATUS_DESCRIPTION),
  current: describe(NullableString, "The turn in flight"),
  parkedUntil: describe(NullableString, PARKED_UNTIL_DESCRIPTION),
  closedAt: opt(
    Schema.String,
    "When it closed (ISO 8601): a closed agent is read back from the store until retention removes it"
  ),
  host: opt(Schema.String, "In a cluster: the host that runs it"),
  sandbox: opt(SandboxData, "Its sandbox, when it has one (paths absolute)"),
  context: opt(View.ContextUse, CONTEXT_DESCRIPTION),
  sessionWritesLost: opt(
    View.WritesLost,
    "The claude CLI could not write its session file (a full disk: ENOSPC, a quota: EDQUOT): part of its memory " +
      "cannot be resumed"
  )
})

/** A transcript's mark that its agent is closed: why, and when. */
export const Closed = Schema.Struct({
  reason: Schema.String,
  at: opt(Schema.String, "When it closed (ISO 8601)")
})

export const StatusView = Schema.Struct({
  ...View.AgentStatusView.fields,
  status: describe(View.AgentStatus, STATUS_DESCRIPTION),
  current: describe(NullableString, "The turn in flight"),
  currentStartedAt: describe(NullableString, "When the turn in flight started (ISO 8601)"),
  queued: describe(Schema.Number, "Turns waiting behind it"),
  turns: describe(Schema.Number, "Finished turns"),
  parkedUntil: describe(NullableString, PARKED_UNTIL_DESCRIPTION),
  context: opt(View.ContextUse, CONTEXT_DESCRIPTION)
})

export const TurnResult = Schema.Struct({
  ...View.TurnResult.fields,
  usage: describe(View.TurnResult.fields.usage, "Token usage, as the API reported it"),
  structuredOutput: opt(JsonValue)
})

export const TurnRecord = Schema.Struct({
  ...View.TurnRecord.fields,
  status: describe(View.TurnStatus, "queued, running, succeeded or failed"),
  toolCalls: Schema.Array(Schema.Struct({ ...View.ToolCall.fields, input: JsonValue }))
})

export const RunResult = Schema.Struct({ ...Outcome.RunResult.fields, structuredOutput: opt(JsonValue) })

export const VerifyReport = Outcome.VerifyReport

export const RunView = Schema.Struct({
  name: Schema.String,
  kind: Schema.Literal("run", "verify"),
  state: describe(Schema.Literal("running", "succeeded", "failed"), "Where it stands"),
  startedAt: Schema.String,
  finishedAt: NullableString,
  costUsd: describe(NullableNumber, "A run's spend in USD: so far while it runs, its total once it ends"),
  worktree: describe(NullableString, "The run's git worktree, if it has one"),
  branch: describe(NullableString, "The worktree's branch; for a verify, the branch it checked"),
  passed: describe(Schema.NullOr(Schema.Boolean), "A finished verify's verdict: every check passed"),
  error: describe(NullableString, "The failure's tag when it failed (the whole error: flotta_run_result)"),
  host: opt(Schema.String, "In a cluster: the host that runs it"),
  labels: opt(Options.Labels, "Its labels")
})

export const ReportEntry = Schema.Struct({
  ...View.ReportEntry.fields,
  data: JsonValue,
  host: opt(Schema.String, "In a cluster: the host that wrote it")
})

export const Started = Schema.Struct({
  name: Schema.String,
  kind: Schema.Literal("run", "verify"),
  status: Schema.Literal("running"),
  next: describe(Schema.String, "What to call to get the outcome")
})

export const WaitResult = Schema.Struct({
  done: describe(Schema.Boolean, "false: still going when the wait ended; call flotta_wait again"),
  name: Schema.String,
  kind: Schema.Literal("turn", "run"),
  turnId: Schema.optional(Schema.String),
  waitedMs: Schema.Number,
  result: Schema.optional(Schema.Union(TurnResult, RunResult, VerifyReport)),
  status: Schema.optional(StatusView),
  message: describe(Schema.String, "What happened, in words")
})

export const BroadcastResult = Schema.Struct({
  agents: Schema.Array(Schema.Struct({
    name: Schema.String,
    done: describe(Schema.Boolean, "false: the agent is still on it; flotta_wait with its turnId"),
    ok: Schema.Boolean,
    turnId: Schema.optional(Schema.String),
    text: Schema.optional(Schema.String),
    costUsd: Schema.optional(Schema.Number),
    error: Schema.optional(ErrorView)
  }))
})

export const WorktreeInfo = Schema.Struct({
  path: Schema.String,
  branch: Schema.String,
  clean: Schema.Boolean,
  locked: Schema.Boolean,
  ageMs: Schema.Number
})

export const ParkedGroup = Schema.Struct({
  credentials: describe(Schema.String, "A label for the credentials (never the secret)"),
  reason: describe(Schema.String, "usage_limit, or rate_limited (a 429 with no reset time: the fleet's own backoff)"),
  rateLimitType: describe(NullableString, "five_hour, seven_day, ..."),
  message: describe(Schema.String, "What the claude CLI said"),
  since: Schema.String,
  until: describe(Schema.String, "When its agents start to resume (ISO 8601)"),
  agents: describe(Schema.Array(Schema.String), "Its agents still parked")
})
