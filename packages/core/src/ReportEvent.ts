/**
 * What each report entry says, as data: one Schema per kind, and an entry decoded into a tagged union on its
 * `kind`. The store keeps an entry as `kind` + `data` (JSON); posting is typed by these Schemas (a poster cannot
 * post a kind with the wrong data) and every reader decodes instead of guessing a kind's fields.
 *
 * An entry this version cannot read (a kind a newer host wrote into a shared store, or data that does not fit its
 * kind's Schema) is kept and decoded as `Raw`: shown as it is, never dropped, never fatal.
 *
 * The engine's own kinds are here. A package above core declares its own with `kind` (the scheduler's, the
 * webhooks', the cluster's) and decodes with them; the engine names none of their concepts.
 */
import { Option, Schema } from "effect"
import type { ReportEntry } from "./AgentView.js"
import { Compaction, ErrorView, PermissionRecord, ToolRefusal, WritesLost } from "./AgentView.js"
import { exact } from "./Decode.js"
import { Described } from "./Permission.js"
import { SandboxData } from "./Sandbox.js"

/**
 * One report kind: its name, the Schema of its data and what it means. The data's Schema has no transformation
 * (its type is its JSON), so a post is stored as it is given, with no encoding on the turn's path.
 */
export interface Kind<K extends string = string, A = unknown> extends AnyKind {
  readonly kind: K
  readonly data: Schema.Schema<A>
  /** The entry in one line, for a person (the dashboard's reports, the cli's); else its data as JSON. */
  readonly summary?: (data: A) => string
}

/** Any kind, whatever its data: what lists of kinds hold. */
export interface AnyKind {
  readonly kind: string
  readonly data: Schema.Schema.AnyNoContext
  readonly description: string
  /** Live only: handed to subscribers, never kept in the log (a streaming agent's `text_delta`). */
  readonly live?: true
  /** An entry's data decoded by this kind's Schema: `None` when it does not fit. */
  readonly decodeData: (data: unknown) => Option.Option<unknown>
  /** An entry's line from its data: its kind's summary when the data fits and the kind has one. */
  readonly lineOf: (data: unknown) => Option.Option<string>
}

export interface KindOptions<A> {
  readonly live?: true
  readonly summary?: (data: A) => string
}

/** Declares a kind. */
export const kind = <const K extends string, A>(
  name: K,
  data: Schema.Schema<A>,
  description: string,
  options: KindOptions<NoInfer<A>> = {}
): Kind<K, A> => {
  const decodeData = Schema.decodeUnknownOption(data)
  const { summary } = options
  return {
    kind: name,
    data,
    description,
    ...options,
    decodeData,
    lineOf: summary === undefined ? () => Option.none() : (u) => Option.map(decodeData(u), summary)
  }
}

/** An entry of a kind this version knows, with its data decoded. */
export type Event<K extends string, A> = Omit<ReportEntry, "kind" | "data"> & {
  readonly _tag: "Known"
  readonly kind: K
  readonly data: A
}

/** An entry this version cannot read as typed data: kept and shown as it is. */
export type Raw = ReportEntry & {
  readonly _tag: "Raw"
  /** Why: its kind is not one of those decoded with (`unknown kind`), or its data does not fit (`malformed`). */
  readonly why: "unknown kind" | "malformed"
}

/** The decoded entry of one kind. */
export type EventOf<T> = T extends Kind<infer K, infer A> ? Event<K, A> : never

/** The typed entries of a list of kinds, or `Raw`: the tagged union readers narrow on `_tag`, then `kind`. */
export type Decoded<Ks extends ReadonlyArray<AnyKind>> = EventOf<Ks[number]> | Raw

/** The data each kind of a list carries, by kind name: what `ReportLog.post` checks a post against. */
export type DataOf<Ks extends ReadonlyArray<AnyKind>> = {
  readonly [K in Ks[number] as K["kind"]]: K extends Kind<string, infer A> ? A : never
}

const known = <K extends string, A>(entry: ReportEntry, kind: K, data: A): Event<K, A> => ({
  ...entry,
  _tag: "Known",
  kind,
  data
})

/** An entry as one kind: `None` when it is another kind, or its data does not fit (the reader skips it). */
export const decodeAs = <K extends string, A>(k: Kind<K, A>) => {
  const decode = Schema.decodeUnknownOption(k.data)
  return (entry: ReportEntry): Option.Option<Event<K, A>> =>
    entry.kind === k.kind ? Option.map(decode(entry.data), (data) => known(entry, k.kind, data)) : Option.none()
}

/** Entries as a tagged union of the kinds given: each one known and typed, or `Raw` (kept as it is). */
export const decoder = <const Ks extends ReadonlyArray<AnyKind>>(kinds: Ks) => {
  const byName = new Map(kinds.map((k) => [k.kind, k]))
  return (entry: ReportEntry): Decoded<Ks> => {
    const k = byName.get(entry.kind)
    if (k === undefined) return { ...entry, _tag: "Raw", why: "unknown kind" }
    const data = k.decodeData(entry.data)
    // The kind found by name decoded the data, so the pair is that kind's member of the union: the map cannot say so.
    return (Option.isSome(data)
      ? known(entry, entry.kind, data.value)
      : { ...entry, _tag: "Raw", why: "malformed" }) as Decoded<Ks>
  }
}

/**
 * The Schema of an entry's `kind` and `data` over a list of kinds: one member per kind, then any other entry kept
 * raw (a newer host's kind, or data that does not fit). The generated docs and the round-trip tests use it.
 */
export const union = <const Ks extends ReadonlyArray<AnyKind>>(kinds: Ks) =>
  Schema.Union(
    ...kinds.map((k) => Schema.Struct({ kind: Schema.Literal(k.kind), data: k.data })),
    Schema.Struct({ kind: Schema.String, data: Schema.Unknown })
  )

const LINE_MAX = 200
const clip = (text: string) => (text.length <= LINE_MAX ? text : text.slice(0, LINE_MAX) + "…")

/**
 * An entry in one line, by the kinds given: a known kind's own summary, else (a kind not given, one with no
 * summary, data that does not fit) its data as compact JSON. Never more than 200 characters and an ellipsis.
 */
export const line = <const Ks extends ReadonlyArray<AnyKind>>(kinds: Ks) => {
  const byName = new Map(kinds.map((k) => [k.kind, k]))
  return (entry: ReportEntry): string => {
    const said = Option.flatMap(Option.fromNullable(byName.get(entry.kind)), (k) => k.lineOf(entry.data))
    return clip(Option.getOrElse(said, () => JSON.stringify(entry.data) ?? ""))
  }
}

/** A cost in a line: ` ($0.0123)`. */
export const costOf = (usd: number) => ` ($${usd.toFixed(4)})`

/** The words given, skipping the missing and the empty, joined by spaces. */
export const words = (...parts: ReadonlyArray<string | null | undefined>) =>
  parts.filter((w): w is string => typeof w === "string" && w.length > 0).join(" ")

// ----------------------------------------------------------------------------------------------- the engine's

const described = <A>(schema: Schema.Schema<A>, description: string) => schema.annotations({ description })
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

export const permission = kind(
  "permission",
  PermissionRecord,
  "a tool call's permission was decided",
  { summary: (d) => `${d.tool}: ${d.decision}` }
)

export const permissionChanged = kind(
  "permission_changed",
  Schema.Struct({ allowAlso: Schema.String, by: Schema.String, permission: Described }),
  "an approval given \"always\" widened the agent's permission",
  { summary: (d) => `${d.allowAlso} allowed by ${d.by}` }
)

export const approvalRequested = kind(
  "approval_requested",
  Schema.Struct({ id: Schema.String, tool: Schema.String, input: Schema.Unknown, expiresAt: Schema.String }),
  "a tool call waits for a human's approval",
  { summary: (d) => d.tool }
)

export const approvalDecided = kind(
  "approval_decided",
  Schema.Struct({
    id: Schema.String,
    tool: Schema.String,
    behavior: Schema.Literal("allow", "deny"),
    status: Schema.String,
    by: described(Schema.String, "who decided: a surface, `timeout` or `host_restart`"),
    message: exact(Schema.String),
    always: exact(Schema.Boolean)
  }),
  "an approval was decided, timed out or expired",
  { summary: (d) => `${d.tool}: ${d.status}` }
)

export const parked = kind(
  "parked",
  Schema.Struct({
    until: Schema.String,
    reason: Reason,
    rateLimitType: exact(Schema.String),
    credentials: described(Schema.String, "the account's label"),
    message: Schema.String
  }),
  "the agent's account hit a usage limit: it waits until `until`",
  { summary: (d) => `until ${d.until}: ${d.reason}` }
)

export const unparked = kind(
  "unparked",
  Schema.Struct({ by: Schema.String, credentials: Schema.String }),
  "a parked agent resumed",
  { summary: (d) => `by ${d.by}` }
)

export const usageWarning = kind(
  "usage_warning",
  Schema.Struct({
    credentials: Schema.String,
    rateLimitType: Schema.NullOr(Schema.String),
    resetsAt: Schema.NullOr(Schema.String),
    utilization: exact(Schema.Number),
    surpassedThreshold: exact(Schema.Number)
  }),
  "the account is close to a usage limit"
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

export const runFinished = kind(
  "run_finished",
  Schema.Struct({
    ok: Schema.Boolean,
    costUsd: described(Schema.Number, "what the run spent (a best-of-N run: every attempt together)"),
    durationMs: exact(Schema.Number),
    branch: exact(Schema.String),
    worktree: exact(described(Schema.String, "its worktree, while it exists")),
    attempt: exact(described(Schema.Number, "a best-of-N run: the winning attempt")),
    error: exact(ErrorView)
  }),
  "a run ended: how, what it spent, where its work is",
  { summary: (d) => (d.ok ? "finished" : `failed: ${d.error?.message ?? "see its record"}`) + costOf(d.costUsd) }
)

export const verifyFailed = kind(
  "verify_failed",
  Schema.Struct({
    attempt: Schema.Number,
    command: Schema.String,
    exitCode: Schema.NullOr(Schema.Number),
    timedOut: Schema.Boolean
  }),
  "an attempt's checks failed",
  { summary: (d) => `attempt ${d.attempt}: ${d.command}` }
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

const StoreHealth = Schema.Struct({
  state: Schema.Literal("ok", "degraded"),
  reason: Schema.NullOr(Schema.String),
  since: Schema.NullOr(Schema.String),
  pending: described(Schema.Number, "writes waiting to be committed"),
  lost: described(Schema.Number, "entries dropped while the store refused writes")
})
export type StoreHealthData = typeof StoreHealth.Type

export const storeDegraded = kind("store_degraded", StoreHealth, "the store refuses writes (posted as `store`)", {
  summary: (d) => d.reason ?? "degraded"
})

export const storeRecovered = kind("store_recovered", StoreHealth, "the store takes writes again (posted as `store`)")

/**
 * A host of a fleet spread over several hosts stopped renewing its lease; its agents moved (posted as `cluster`).
 * The engine's entries already name their host; the notifications tell this one.
 */
export const hostLost = kind(
  "host_lost",
  Schema.Struct({
    host: described(Schema.String, "the host lost"),
    agents: described(Schema.Array(Schema.String), "the agents moved off it"),
    by: described(Schema.String, "the host that moved them")
  }),
  "a host of the fleet was lost and its agents moved (posted as `cluster`)",
  { summary: (d) => `${d.host}: ${d.agents.length} moved by ${d.by}` }
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
