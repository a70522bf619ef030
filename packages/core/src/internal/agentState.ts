/**
 * One agent's state and the context its parts share: the floor below turn execution (`turn`), supervision
 * (`supervisor`), permission requests, the process start and the handle. Types only: whatever needs the agent's
 * state imports it from here, never from the module that assembles the agent.
 */
import type { Deferred, Effect, Option, Scope, Tracer } from "effect"
import type { Agent } from "../Agent.js"
import type { Labels } from "../AgentOptions.js"
import type {
  AgentRow,
  AgentStatus,
  Compaction,
  ContextUse,
  ForkOrigin,
  TranscriptMark,
  TurnRecord,
  TurnResult,
  TurnRow,
  WritesLost
} from "../AgentView.js"
import type { ClaudeCli } from "../ClaudeCli.js"
import type { ClaudeProcess, ExitInfo } from "../ClaudeProcess.js"
import type * as Protocol from "../ClaudeProtocol.js"
import type {
  AgentClosed,
  AgentNotFound,
  CannotHibernate,
  SandboxUnavailable,
  SpawnFailed,
  TurnError
} from "../Errors.js"
import type { FleetSettings } from "../FleetConfig.js"
import type * as Parking from "../Parking.js"
import type * as Permission from "../Permission.js"
import type { ReportLog } from "../ReportLog.js"
import type { Confinement } from "../Sandbox.js"
import type { StoreShape } from "../Store.js"
import type { AgentOptions } from "./agentOptions.js"
import type { Alarms } from "./alarms.js"
import type { LiveSlots } from "./liveSlots.js"

/** What every agent of a fleet is given by its registry. */
export interface AgentDeps {
  readonly cli: ClaudeCli["Type"]
  /** The fleet's one timer. */
  readonly alarms: Alarms
  readonly permission: Permission.Permission
  readonly reports: ReportLog
  readonly settings: FleetSettings
  /** Admission: processes starting at once. */
  readonly startPermit: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** Live processes at most: a start takes a slot first, hibernating the longest idle session if it must. */
  readonly liveSlots: LiveSlots
  /** Puts an agent to sleep through its registry, which then keeps nothing of it but its record. */
  readonly sleep: (name: string, reason: string) => Effect.Effect<boolean, CannotHibernate | AgentNotFound>
  /** The live agent of a name whose handle has gone dormant: its registry brings it back (asleep until woken). */
  readonly revive: (name: string) => Effect.Effect<Agent, AgentClosed>
  readonly store: StoreShape
  /** The fleet's parking at usage limits. */
  readonly parking: Parking.Parking
  /** Off once the fleet shuts down: what shutting down does to agents is not their state to restore. */
  readonly journal: { on: boolean }
}

/** What an agent brings back from the store when its host restarts. */
export interface Restored {
  readonly row: AgentRow
  /** Its turns, oldest first; queued ones run again in order (the one in flight is settled already). */
  readonly turns: ReadonlyArray<TurnRow>
}

/** A transcript record the agent fills in as the turn runs. */
export type MutableRecord = {
  -readonly [K in keyof TurnRecord]: TurnRecord[K] extends ReadonlyArray<infer T> ? Array<T> : TurnRecord[K]
}

/** What a turn does: answer a prompt, or compact or clear the conversation (`/compact`, `/clear`). */
export type TurnKind = "prompt" | "compact" | "clear"

/** One turn: its prompt, its record as it runs, and the outcome its callers wait for. */
export interface Turn {
  readonly _tag: "Turn"
  readonly id: string
  readonly text: string
  readonly kind: TurnKind
  readonly timeoutMs: number
  /** A caller's own timeout is a deadline from the call, covering the wait in the queue too. */
  readonly deadlineAt: number | null
  readonly deferred: Deferred.Deferred<TurnResult, TurnError>
  readonly record: MutableRecord
  /** The span of the caller that queued it, parent of the turn's own. */
  readonly parentSpan: Option.Option<Tracer.AnySpan>
  /** Why an interrupt was sent, so its `error_during_execution` result maps to the right error. */
  interruptReason: "user" | "timeout" | null
}

/** Why a process stopped serving turns: it exited, it stalled, or the agent hibernated (its process ends cleanly). */
export type ProcessEnd =
  | { readonly _tag: "Exited"; readonly exit: ExitInfo }
  | { readonly _tag: "Stalled"; readonly reason: string }
  | { readonly _tag: "Hibernated"; readonly reason: string }

/**
 * While an agent hibernates: the news that its process has ended (its slot is free), how it is woken (with why),
 * and the news that its process is up again.
 */
export interface Sleep {
  /** A wake was asked for (a prompt, `wake`): it is on its way up. */
  woken: boolean
  readonly down: Deferred.Deferred<void>
  readonly wake: Deferred.Deferred<string>
  readonly up: Deferred.Deferred<void, SpawnFailed | SandboxUnavailable | AgentClosed>
}

/** A live process, the scope that stops it, and the news that its service ended (it exited, or stalled). */
export interface Running {
  readonly process: ClaudeProcess
  readonly scope: Scope.CloseableScope
  readonly ended: Deferred.Deferred<ProcessEnd>
}

/** The turn in flight, on the process that runs it. */
export interface Active {
  readonly turn: Turn
  readonly running: Running
  readonly startedAt: number
  /** Moves later by the time the turn was held (see `hold`). */
  deadline: number
  readonly span: Tracer.Span
  interruptedAt: number | null
  /** Holds in force (see `hold`), and since when the turn has been held. */
  holds: number
  heldSince: number | null
  /** Silence is counted from here at the earliest: the turn's start, or the end of its last hold. */
  quietFrom: number
  /** Cancels the turn's pending alarm (its next check). */
  cancelAlarm: () => void
  /** The limiter's view the turn saw last (a `rate_limit_event`, or the CLI's own usage-limit message). */
  rateLimit: Protocol.RateLimitInfo | null
  /** While the turn is parked at a usage limit: the release of its hold (see `park`). */
  parked: ((now: number) => void) | null
  /** The session it started in (a `clear` turn ends in another). */
  readonly sessionAtStart: string
  /** What its newest model call was sent with (input and cache tokens): how full the context is. */
  lastInput: number | null
  /** The conversation was compacted during it. */
  compaction: Compaction | null
  /** When each of its tool calls awaiting a result was made, by the call's id. */
  readonly toolStarts: Map<string, number>
  /** The model's newest text, told once something follows it (see `liveTurn`). */
  pendingText: string | null
}

/** The agent's turn metrics (see `turnRecord.metricsFor`). */
export interface TurnMetrics {
  readonly count: (outcome: string) => void
  readonly record: (durationMs: number, costUsd: number) => void
}

/** What an agent's turns have spent (see `budget`): in all, and on `day` (`YYYY-MM-DD`, UTC). */
export interface Spend {
  lifeUsd: number
  day: string
  dayUsd: number
}

/** Everything about one agent that changes, in one place. */
export interface AgentState {
  status: AgentStatus
  sessionId: string
  /** Whether the session has a saved conversation to resume (after a first turn, or when given one). */
  resumable: boolean
  /**
   * Where a fork came from. Until its session is resumable, each process forks it again from there (the CLI
   * writes a fork's session file with its first turn).
   */
  readonly forkedFrom: ForkOrigin | undefined
  /** Marks for the transcript that the next turn opens with (see `TranscriptMark`). */
  marks: Array<TranscriptMark>
  /** The permission in force: an approval given "always" adds its tool for the rest of the agent's life. */
  policy: Permission.Policy
  process: Running | undefined
  /** The process's running cost (the CLI reports a total per process). */
  processCost: number
  /** The process's running cost per model (its last `modelUsage`). */
  processModelCosts: Readonly<Record<string, number>>
  /** What its turns have spent, for its budget (see `budget`). */
  readonly spend: Spend
  turnCounter: number
  finished: number
  failed: number
  totalCost: number
  closedReason: string | null
  /** When it closed (ISO), once it has. */
  closedAt: string | null
  restarts: number
  /** Tool calls waiting for a human's approval. */
  waitingApprovals: number
  /** When a turn last started or ended, or its process came up (Clock millis): how long it has been idle. */
  lastActiveAt: number
  /** Its registry keeps it as a record now: this handle's prompts and wakes go to the agent brought back. */
  dormant: boolean
  /** How full its context was after its last turn. */
  context: ContextUse | undefined
  /** Its model's context window, as the CLI last said. */
  contextWindow: number | null
  /** The CLI could not write its session file. */
  writesLost: WritesLost | undefined
  /** Its labels now: given at spawn, changed by `relabel`; each turn's cost is saved with them. */
  labels: Labels
}

/** What the turn runner, the supervisor, the process start and the handle share. */
export interface AgentContext {
  readonly name: string
  readonly options: AgentOptions
  /** Its working directory, absolute. */
  readonly cwd: string
  /** Its environment, over the inherited one: the fleet's, then its own. */
  readonly env: Readonly<Record<string, string>>
  /** Its sandbox, when it has one. */
  readonly sandbox: Confinement | null
  readonly settings: FleetSettings
  readonly reports: ReportLog
  /** The agent's scope: processes and background requests live in it. */
  readonly scope: Scope.Scope
  readonly state: AgentState
  /** Turns waiting to be sent, in order (a turn that fails while it waits leaves the queue). */
  readonly queue: Array<Turn>
  /** The turn in flight and its process, while there is one. */
  active: Active | undefined
  readonly tracer: Tracer.Tracer
  readonly metrics: TurnMetrics
  readonly alarms: Alarms
  readonly stallMs: number
  readonly graceMs: number
  /** Starts a process for the current session (resuming it when it has a conversation). */
  readonly startProcess: Effect.Effect<Running, SpawnFailed | SandboxUnavailable>
  /** Off once the fleet shuts down: what that does to the agent is neither stored nor reported. */
  readonly journal: { readonly on: boolean }
  /** The agent's seat in its credentials' group (see `Parking`). */
  parking: Parking.Membership
  /** Keeps the agent's row in the store (name, options, session, status, process). */
  readonly saveAgent: () => void
  /** Ends the agent's pending approvals without a decision (its turn is over: the process crashed, say). */
  readonly expireApprovals: (reason: string) => Effect.Effect<void>
  /** Keeps a turn's record in the store, with its outcome once it has one. */
  readonly saveTurn: (
    turn: Turn,
    outcome?: { readonly result: TurnResult } | { readonly error: TurnError }
  ) => void
  /** Set while it hibernates (see `Sleep`). */
  sleep: Sleep | null
  /** Told when it has nothing left to do (its last turn ended, its process came up): the fleet may hibernate it. */
  onIdle: (now: number) => void
  /** Queues a compaction as its next turn (`autoCompactAt`): set by its handle, which keeps the turns. */
  compactNext: (reason: string, now: number) => void
}
