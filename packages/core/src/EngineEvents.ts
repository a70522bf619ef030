/**
 * The engine's report kinds, each with the Schema of its data, its description and its one-line summary (see
 * `ReportEvent` for what a kind is): an agent's life and its turns here, the fleet's around them in `FleetEvents`
 * (re-exported). `ReportLog.post` checks an engine kind's data against these by name.
 */
import { Schema } from "effect"
import { Compaction, ErrorView, ToolRefusal, WritesLost } from "./AgentView.js"
import { exact } from "./Decode.js"
import {
  approvalDecided,
  approvalRequested,
  hostLost,
  parked,
  permission,
  permissionChanged,
  runFinished,
  storeDegraded,
  storeRecovered,
  unparked,
  usageWarning,
  verifyFailed
} from "./FleetEvents.js"
import { Described } from "./Permission.js"
import type { DataOf } from "./ReportEvent.js"
import { costOf, decoder, described, kind } from "./ReportEvent.js"
import { SandboxData } from "./Sandbox.js"

export * from "./FleetEvents.js"
const Reason = described(Schema.String, "why, in words")
const SessionId = described(Schema.String, "the claude session id")
const Pid = described(Schema.NullOr(Schema.Number), "the process id, when the process seam knows one")

const Check = Schema.Struct({
  command: Schema.String,
  ok: Schema.Boolean,
  exitCode: Schema.NullOr(Schema.Number),
  timedOut: Schema.Boolean
})

/** An agent's `spawned`. */
export const AgentSpawned = Schema.Struct({
  pid: Pid,
  sessionId: SessionId,
  cwd: Schema.String,
  model: Schema.NullOr(Schema.String),
  permission: Described,
  role: Schema.String,
  lifecycle: Schema.String,
  sandbox: exact(SandboxData),
  /** Back after a restart of the host, with this many queued turns. */
  restored: exact(Schema.Boolean),
  queued: exact(Schema.Number)
}).annotations({ title: "an agent" })

/** A best-of-N run's or a verify's `spawned`, told apart by their `kind`. */
export const RunSpawned = Schema.Union(
  Schema.Struct({
    kind: Schema.Literal("attempts"),
    attempts: Schema.Number,
    pick: Schema.String,
    checks: Schema.Array(Schema.String)
  }).annotations({ title: "a best-of-N run" }),
  Schema.Struct({
    kind: Schema.Literal("verify"),
    branch: Schema.String,
    checks: Schema.Array(Schema.String)
  }).annotations({ title: "a verify" })
)

export const spawned = kind(
  "spawned",
  Schema.Union(AgentSpawned, RunSpawned),
  "an agent's process started (or a run's attempts, or a verify)",
  {
    summary: (d) =>
      isAgentSpawned(d)
        ? `${d.lifecycle} in ${d.cwd}`
        : d.kind === "verify"
        ? `verify ${d.branch}`
        : `${d.attempts} attempts, pick ${d.pick}`
  }
)

export const forked = kind(
  "forked",
  Schema.Struct({
    from: Schema.String,
    at: described(
      Schema.NullOr(Schema.String),
      "the source's turn it was cut at (null: a conversation with no turn of the source's)"
    ),
    sessionId: SessionId
  }),
  "the agent is a fork of `from` at its turn `at`",
  { summary: (d) => `from ${d.from}` }
)

export const turnStarted = kind(
  "turn_started",
  Schema.Struct({ prompt: described(Schema.String, "the prompt, cut to 200 characters") }),
  "a turn was sent to the process",
  { summary: (d) => d.prompt }
)

/** A turn's `result`. */
export const TurnDone = Schema.Struct({
  text: described(Schema.String, "the answer, cut to 200 characters"),
  costUsd: Schema.Number,
  durationMs: Schema.Number,
  modelCalls: Schema.Number
}).annotations({ title: "a turn" })

/** A best-of-N run's `result`. */
export const AttemptsDone = Schema.Struct({
  attempt: described(Schema.Number, "the winning attempt"),
  costUsd: Schema.Number,
  totalCostUsd: Schema.Number,
  attempts: Schema.Array(Schema.Struct({ attempt: Schema.Number, status: Schema.String, costUsd: Schema.Number }))
}).annotations({ title: "a best-of-N run" })

/** A verify's `result`. */
export const VerifyDone = Schema.Struct({
  passed: Schema.Boolean,
  commit: Schema.String,
  checks: Schema.Array(Check)
}).annotations({ title: "a verify" })

export const result = kind(
  "result",
  Schema.Union(TurnDone, AttemptsDone, VerifyDone),
  "a turn (or a best-of-N run, or a verify) finished",
  {
    summary: (d) =>
      isVerifyDone(d)
        ? `verify ${d.passed ? "passed" : "failed"} at ${d.commit}`
        : isAttemptsDone(d)
        ? `attempt ${d.attempt} of ${d.attempts.length} won${costOf(d.totalCostUsd)}`
        : `${d.text}${costOf(d.costUsd)}`
  }
)

export const error = kind(
  "error",
  Schema.Struct({
    error: ErrorView,
    /** A best-of-N run that no attempt passed: what all of them spent. */
    totalCostUsd: exact(Schema.Number)
  }),
  "a turn, run or verify failed: the typed error",
  { summary: (d) => `${d.error._tag}: ${d.error.message}` }
)

export const closed = kind(
  "closed",
  Schema.Struct({ reason: exact(Reason) }),
  "the agent was closed: gone, its record kept",
  { summary: (d) => d.reason ?? "" }
)

export const stopped = kind(
  "stopped",
  Schema.Struct({ reason: exact(Reason) }),
  "the agent stopped with its fleet (a fleet with no durable store)",
  { summary: (d) => d.reason ?? "" }
)

const isAgentSpawned = Schema.is(AgentSpawned)
const isVerifyDone = Schema.is(VerifyDone)
const isAttemptsDone = Schema.is(AttemptsDone)

const Spawn = { exitCode: Schema.NullOr(Schema.Number), stderr: Schema.String }

export const crashed = kind(
  "crashed",
  Schema.Struct({ reason: Reason, ...Spawn }),
  "the agent's process died or stalled, or could not be started again",
  { summary: (d) => d.reason }
)

export const restarted = kind(
  "restarted",
  Schema.Struct({ pid: Pid, sessionId: SessionId, attempt: Schema.Number }),
  "the supervisor started the process again, resuming its session"
)

export const sessionLost = kind(
  "session_lost",
  Schema.Struct({ sessionId: SessionId, newSessionId: Schema.String, reason: Reason }),
  "the CLI had no conversation to resume: the next start begins a new session",
  { summary: (d) => d.reason }
)

export const hibernated = kind(
  "hibernated",
  Schema.Struct({ reason: Reason, idleMs: Schema.Number, sessionId: SessionId }),
  "the agent's process was ended to free a slot or after idling; it is woken when needed",
  { summary: (d) => d.reason }
)

export const woken = kind(
  "woken",
  Schema.Struct({ pid: Pid, sessionId: SessionId, reason: Reason }),
  "a hibernated agent's process started again",
  { summary: (d) => d.reason }
)

export const restored = kind(
  "restored",
  Schema.Struct({ sessionId: SessionId, queued: Schema.Number }),
  "the agent came back after a restart of the host, with its queued turns",
  { summary: (d) => `${d.queued} queued` }
)

export const orphanEnded = kind(
  "orphan_ended",
  Schema.Struct({ pid: Schema.Number }),
  "a restarted host ended a process its predecessor left"
)

export const compactionQueued = kind(
  "compaction_queued",
  Schema.Struct({ reason: Reason }),
  "a compaction turn was queued (by hand or by `autoCompactAt`)",
  { summary: (d) => d.reason }
)

export const compacted = kind("compacted", Compaction, "the conversation was compacted", {
  summary: (d) => `${d.trigger}: ${d.preTokens} tokens → ${d.postTokens ?? "?"}`
})

export const cleared = kind(
  "cleared",
  Schema.Struct({ previousSessionId: Schema.String, sessionId: SessionId }),
  "the conversation was cleared: a new session"
)

export const sessionWritesLost = kind(
  "session_writes_lost",
  WritesLost,
  "the CLI could not write its session file: what it lost cannot be resumed"
)

export const budgetExceeded = kind(
  "budget_exceeded",
  Schema.Struct({ budgetUsd: Schema.Number, per: Schema.String, spentUsd: Schema.Number }),
  "a turn was refused: the agent reached its budget",
  { summary: (d) => `${d.spentUsd.toFixed(4)} of ${d.budgetUsd.toFixed(4)} USD (${d.per})` }
)

export const assistantText = kind(
  "assistant_text",
  Schema.Struct({ text: Schema.String }),
  "the model wrote text that something followed (a tool call)",
  { summary: (d) => d.text }
)

export const toolCall = kind(
  "tool_call",
  Schema.Struct({
    id: Schema.String,
    tool: Schema.String,
    input: described(Schema.Unknown, "the input, or its JSON cut to 2 KiB")
  }),
  "the model called a tool",
  { summary: (d) => d.tool }
)

export const toolResult = kind(
  "tool_result",
  Schema.Struct({
    id: Schema.String,
    tool: Schema.String,
    status: Schema.Literal("ok", "error", "refused"),
    text: described(Schema.String, "the result's text, cut to 500 characters"),
    bytes: Schema.Number,
    durationMs: Schema.Number,
    refusal: exact(ToolRefusal)
  }),
  "a tool call's outcome",
  { summary: (d) => `${d.tool}: ${d.status}` }
)

export const textDelta = kind(
  "text_delta",
  Schema.Struct({ text: Schema.String }),
  "a piece of text as the model writes it (an agent with `stream: true`); live only, never kept",
  { live: true, summary: (d) => d.text }
)

/** The engine's kinds. */
export const engine = [
  spawned,
  forked,
  turnStarted,
  result,
  error,
  closed,
  stopped,
  crashed,
  restarted,
  sessionLost,
  hibernated,
  woken,
  restored,
  orphanEnded,
  permission,
  permissionChanged,
  approvalRequested,
  approvalDecided,
  parked,
  unparked,
  usageWarning,
  compactionQueued,
  compacted,
  cleared,
  sessionWritesLost,
  budgetExceeded,
  runFinished,
  verifyFailed,
  assistantText,
  toolCall,
  toolResult,
  textDelta,
  storeDegraded,
  storeRecovered,
  hostLost
] as const

/** The engine's kind names and the data each carries. */
export type EngineData = DataOf<typeof engine>
export type EngineKind = keyof EngineData

/** An entry as the engine's kinds: typed, or `Raw`. */
export const decodeEngine = decoder(engine)
