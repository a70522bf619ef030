/**
 * The engine's data, as Schemas: the agent's name, status and options, what `info`, `status` and `transcript`
 * show, a turn's result, the report log's entries and the store's rows for agents and turns. This is the ground
 * floor: every layer that shows or keeps these (the store, MCP, the scheduler, the cluster) decodes them with
 * these Schemas instead of restating them. It imports only leaf modules (Schemas of their own data).
 */
import { Schema } from "effect"
import { Labels, Lifecycle, Role, StoredOptions } from "./AgentOptions.js"
import * as Protocol from "./ClaudeProtocol.js"
import { exact } from "./Decode.js"
import { Described } from "./Permission.js"
import { SandboxData } from "./Sandbox.js"
import { PermissionRecord, ToolCall } from "./ToolView.js"

export * from "./ToolView.js"

const NullableString = Schema.NullOr(Schema.String)

// ------------------------------------------------------------------------------------------------------- names

/** Agent and run names: lower-case, 1 to 63 characters, usable as a directory and a branch name. */
export const NAME_PATTERN = /^[a-z0-9][a-z0-9._-]{0,62}$/

/** The naming rule, as messages say it. */
export const NAME_RULE = "1 to 63 characters: a-z, 0-9, '.', '_' or '-', starting with a letter or digit"

/**
 * A name that keeps the rule. The views carry names as plain strings (every name in them was checked when its
 * agent started); this is the Schema for a name that comes in from outside.
 */
export const AgentName = Schema.String.pipe(
  Schema.pattern(NAME_PATTERN, { message: () => `a name of ${NAME_RULE}` }),
  Schema.brand("AgentName")
)
export type AgentName = typeof AgentName.Type

// ------------------------------------------------------------------------------------------------------- agent

export const AgentStatus = Schema.Literal(
  "starting",
  "idle",
  "working",
  "waiting_approval",
  "parked",
  "restarting",
  "hibernated",
  "closed"
)
export type AgentStatus = typeof AgentStatus.Type

export { Lifecycle, Role, StoredOptions } from "./AgentOptions.js"

/**
 * Where a fork came from: the source agent, the turn it was cut at (its conversation up to and including that
 * turn), and the source's session at the time. `messageId` is that turn's last assistant message in the CLI's
 * session file, where `--resume-session-at` cuts; without it the fork takes the whole conversation.
 */
export const ForkOrigin = Schema.Struct({
  agent: Schema.String,
  /** The source's turn the fork was cut at; null when it took a conversation that had no turn of the source's. */
  turnId: NullableString,
  sessionId: Schema.String,
  messageId: exact(Schema.String)
})
export type ForkOrigin = typeof ForkOrigin.Type

/**
 * How full an agent's context window is, after its last turn: the tokens its conversation takes, the model's
 * window (when the CLI said it), and the share of it used, in percent.
 */
export const ContextUse = Schema.Struct({
  tokens: Schema.Number,
  window: Schema.NullOr(Schema.Number),
  percent: Schema.NullOr(Schema.Number)
})
export type ContextUse = typeof ContextUse.Type

/** A compaction of the conversation: `manual` (`compact`, `/compact`) or `auto` (the CLI's own), and its tokens. */
export const Compaction = Schema.Struct({
  trigger: Schema.String,
  preTokens: Schema.Number,
  postTokens: Schema.NullOr(Schema.Number)
})
export type Compaction = typeof Compaction.Type

/**
 * The CLI could not write its session file (a full disk, a quota): what it lost cannot be resumed. `errorCode` is
 * `ENOSPC` or `EDQUOT`; `lost` names what went unwritten (`transcript`, `global_config`).
 */
export const WritesLost = Schema.Struct({
  errorCode: Schema.String,
  lost: Schema.Array(Schema.String),
  sessionIds: Schema.Array(Schema.String),
  at: Schema.String
})
export type WritesLost = typeof WritesLost.Type

export const AgentStatusView = Schema.Struct({
  status: AgentStatus,
  /** The turn in flight, if any. */
  current: NullableString,
  /** When the turn in flight started (ISO), if any. */
  currentStartedAt: NullableString,
  queued: Schema.Number,
  /** Finished turns. */
  turns: Schema.Number,
  /** While parked at a usage limit (see `Parking`): when it resumes (ISO). */
  parkedUntil: NullableString,
  /** How full its context is, once a turn has said. */
  context: exact(ContextUse)
})
export type AgentStatusView = typeof AgentStatusView.Type

export const AgentInfo = Schema.Struct({
  name: Schema.String,
  lifecycle: Lifecycle,
  status: AgentStatus,
  pid: Schema.NullOr(Schema.Number),
  sessionId: Schema.String,
  alive: Schema.Boolean,
  cwd: Schema.String,
  model: NullableString,
  permission: Described,
  role: Role,
  current: NullableString,
  queued: Schema.Number,
  totals: Schema.Struct({ turns: Schema.Number, failed: Schema.Number, costUsd: Schema.Number }),
  restarts: Schema.Number,
  startedAt: Schema.String,
  closedReason: NullableString,
  /** When it closed (ISO), once it has: a closed agent is read back from the store until retention removes it. */
  closedAt: exact(Schema.String),
  /** While parked at a usage limit (see `Parking`): when it resumes (ISO). */
  parkedUntil: NullableString,
  /** The host that runs it, in a fleet spread over several hosts (`@flotta/cluster`). */
  host: exact(Schema.String),
  /** Its sandbox, when it has one (writable paths absolute). */
  sandbox: exact(SandboxData),
  /** Where it was forked from, when it is a fork. */
  forkedFrom: exact(ForkOrigin),
  /** How full its context is, once a turn has said. */
  context: exact(ContextUse),
  /** The CLI could not write its session file: part of its memory cannot be resumed. */
  sessionWritesLost: exact(WritesLost),
  /** Its budget (`maxBudgetUsd`), and what counts against it now (today's spend, or its life's). */
  budget: exact(
    Schema.Struct({ budgetUsd: Schema.Number, per: Schema.Literal("day", "life"), spentUsd: Schema.Number })
  ),
  /** Its labels, when it has any (see `relabel`). */
  labels: exact(Labels)
})
export type AgentInfo = typeof AgentInfo.Type

// ------------------------------------------------------------------------------------------------------- turns

/**
 * What happened to the conversation between or during turns, marked on the turn it opens or happens in: the
 * agent was forked from another (its first turn opens with it), its conversation was compacted (by a `compact`
 * turn, or by the CLI itself during a turn), or cleared (a `clear` turn: a new session under the same name).
 */
export const TranscriptMark = Schema.Union(
  Schema.TaggedStruct("Forked", { from: ForkOrigin }),
  Schema.TaggedStruct("Compacted", { compaction: Compaction }),
  Schema.TaggedStruct("Cleared", { previousSessionId: Schema.String, sessionId: Schema.String })
)
export type TranscriptMark = typeof TranscriptMark.Type

export const TurnStatus = Schema.Literal("queued", "running", "succeeded", "failed")
export type TurnStatus = typeof TurnStatus.Type

/** A typed error as views show it: its tag and its message. */
export const ErrorView = Schema.Struct({ _tag: Schema.String, message: Schema.String })
export type ErrorView = typeof ErrorView.Type

/** A typed error's view (an error's other fields stay out of the transcript and the log). */
export const errorView = (error: { readonly _tag: string; readonly message: string }): ErrorView => ({
  _tag: error._tag,
  message: error.message
})

export const TurnRecord = Schema.Struct({
  turnId: Schema.String,
  prompt: Schema.String,
  status: TurnStatus,
  reply: NullableString,
  error: Schema.NullOr(ErrorView),
  toolCalls: Schema.Array(ToolCall),
  permissions: Schema.Array(PermissionRecord),
  costUsd: Schema.Number,
  durationMs: Schema.Number,
  modelCalls: Schema.Number,
  enqueuedAt: Schema.String,
  startedAt: NullableString,
  finishedAt: NullableString,
  /** The turn's last assistant message in the CLI's session file: where a fork at this turn cuts. */
  messageId: exact(Schema.String),
  /** What happened to the conversation before this turn, or during it (see `TranscriptMark`). */
  marks: exact(Schema.Array(TranscriptMark)),
  /** How full the context was when the turn ended. */
  context: exact(ContextUse),
  /** This turn's own cost per model, when the CLI said (its `modelUsage`, less what earlier turns had spent). */
  modelCosts: exact(Schema.Record({ key: Schema.String, value: Schema.Number }))
})
export type TurnRecord = typeof TurnRecord.Type

/** The outcome of one finished turn. */
export const TurnResult = Schema.Struct({
  turnId: Schema.String,
  text: Schema.String,
  /** This turn's own cost (the CLI reports a per-process running total). */
  costUsd: Schema.Number,
  durationMs: Schema.Number,
  /** Model round trips in this turn (a tool call makes two). */
  modelCalls: Schema.Number,
  sessionId: Schema.String,
  usage: Protocol.Usage,
  permissionDenials: Schema.Array(Protocol.PermissionDenial),
  /** The CLI's result subtype (`success`, `error_during_execution`, ...; an API error is `api_error`). */
  subtype: Schema.String,
  structuredOutput: exact(Schema.Unknown),
  /** How full the context was when the turn ended. */
  context: exact(ContextUse),
  /** The conversation was compacted during this turn (a `compact` turn, or the CLI's own). */
  compaction: exact(Compaction),
  /** This turn's own cost per model, when the CLI said (see `TurnRecord.modelCosts`). */
  modelCosts: exact(Schema.Record({ key: Schema.String, value: Schema.Number }))
})
export type TurnResult = typeof TurnResult.Type

// ------------------------------------------------------------------------------------------------- report log

/** What an entry reports: one of the engine's kinds, or a kind of a layer above (`run_started`, ...). */
export type ReportKind =
  | "spawned"
  | "turn_started"
  | "result"
  | "error"
  | "closed"
  | "crashed"
  | "restarted"
  | "permission"
  | "forked"
  | "hibernated"
  | "woken"
  | "compaction_queued"
  | "compacted"
  | "cleared"
  | "session_writes_lost"
  | "budget_exceeded"
  | "run_finished"
  | "assistant_text"
  | "tool_call"
  | "tool_result"
  | "text_delta"
  | (string & {})
// Any string is a kind: the union above only names the engine's own for editors.
export const ReportKind: Schema.Schema<ReportKind> = Schema.String

export const ReportEntry = Schema.Struct({
  seq: Schema.Number,
  at: Schema.String,
  agent: Schema.String,
  kind: ReportKind,
  turnId: exact(Schema.String),
  data: Schema.Unknown,
  /** The host that wrote it, in a fleet spread over several hosts (`@flotta/cluster`). */
  host: exact(Schema.String)
})
export type ReportEntry = typeof ReportEntry.Type

export const ReportPage = Schema.Struct({
  entries: Schema.Array(ReportEntry),
  /** The cursor to pass as `since` next time. */
  next: Schema.Number
})
export type ReportPage = typeof ReportPage.Type

export const ReportQuery = Schema.Struct({
  /** Entries strictly after this sequence number (default 0: from the start). */
  since: exact(Schema.Number),
  agent: exact(Schema.String),
  kinds: exact(Schema.Array(Schema.String)),
  /** At most this many entries (default 100, at most 10,000). */
  limit: exact(Schema.Number),
  /**
   * A tail read: the last this many matching entries (at most 10,000; `limit` is ignored), oldest first, and
   * `next` is the cursor after the newest entry in the log.
   */
  last: exact(Schema.Number)
})
export type ReportQuery = typeof ReportQuery.Type

// ----------------------------------------------------------------------------------------------- store rows

/** The process an agent ran, so a later host can end it if it outlived its parent. */
export const StoredProcess = Schema.Struct({
  pid: Schema.Number,
  /** The kernel's start time of that pid (clock ticks since boot), so a reused pid is never taken for it. */
  startTicks: NullableString
})
export type StoredProcess = typeof StoredProcess.Type

/** An agent as the store keeps it: what a later host needs to bring it back. */
export const AgentRow = Schema.Struct({
  name: Schema.String,
  lifecycle: Lifecycle,
  options: StoredOptions,
  sessionId: Schema.String,
  /** Whether the session has a conversation on disk to `--resume`. */
  resumable: Schema.Boolean,
  status: AgentStatus,
  restarts: Schema.Number,
  startedAt: Schema.String,
  closedReason: NullableString,
  /** When it closed (ISO), once it has. */
  closedAt: exact(Schema.String),
  /**
   * The highest turn number earlier agents of the same name had when this one started: its own turns are numbered
   * above it (the store keeps theirs under the same name). Absent in rows of an older flotta: every turn is its own.
   */
  turnsBefore: exact(Schema.Number),
  /** Why this agent cannot come back after a restart of the host, when it cannot. */
  notRestorable: NullableString,
  process: Schema.NullOr(StoredProcess),
  /** Where it was forked from: until its first turn, a restart forks it again from there. */
  forkedFrom: exact(ForkOrigin),
  /** The CLI could not write its session file (see `WritesLost`). */
  sessionWritesLost: exact(WritesLost)
})
export type AgentRow = typeof AgentRow.Type

/** A turn as the store keeps it. */
export const TurnRow = Schema.Struct({
  agent: Schema.String,
  /** The turn's number within its agent (`t3` is 3): the order of the queue. */
  n: Schema.Number,
  timeoutMs: Schema.Number,
  record: TurnRecord,
  /** A succeeded turn's whole result. */
  result: exact(Schema.Unknown),
  /** A failed turn's typed error, encoded (see `TurnErrorSchema`). */
  error: exact(Schema.Unknown),
  /** What its cost is booked on besides its agent (see `Costs`): the run it is, the agent's labels at the time. */
  run: exact(Schema.String),
  labels: exact(Labels)
})
export type TurnRow = typeof TurnRow.Type
