/**
 * One named agent: it owns one `claude` process at a time. Turns wait in a FIFO queue and run one at a time,
 * because the CLI merges messages sent while it is busy. The agent keeps each turn's record, answers the
 * process's permission requests from its policy (`Permission`), and restarts a crashed or stalled process with
 * `--resume`, so the conversation survives. This module is its public face: the handle (`Agent`), its options,
 * and its views (from `AgentView`); the `Registry` starts agents.
 */
import type { Duration, Effect } from "effect"
import type { AgentOptions, Labels } from "./AgentOptions.js"
import type { AgentInfo, AgentStatusView, ForkOrigin, TurnRecord, TurnResult } from "./AgentView.js"
import type {
  AgentClosed,
  CannotFork,
  CannotHibernate,
  InvalidSpec,
  NoResult,
  SandboxUnavailable,
  SpawnFailed,
  TurnError,
  TurnPending
} from "./Errors.js"

export type { AgentOptions, Labels } from "./AgentOptions.js"
export type {
  Activity,
  AgentInfo,
  AgentStatus,
  AgentStatusView,
  ForkOrigin,
  PermissionRecord,
  Role,
  ToolCall,
  ToolOutcome,
  ToolRefusal,
  TranscriptMark,
  TurnRecord,
  TurnResult
} from "./AgentView.js"
export { buildArgs } from "./internal/agentOptions.js"

/**
 * Options of a fork: `at`, the source's turn to cut at (its conversation up to and including that turn; the
 * default is its last turn that succeeded), and any spawn option, which overrides the source's.
 */
export interface ForkOptions extends Omit<AgentOptions, "resume" | "lifecycle"> {
  readonly at?: string
}

/** Where a fork starts: its origin, and the source's options it takes unless told otherwise. */
export interface ForkPoint {
  readonly origin: ForkOrigin
  readonly options: AgentOptions
}

/** The handle on one agent. */
export interface Agent {
  readonly name: string
  /** A session converses across turns; a run takes one turn (and `broadcast` never reaches it). */
  readonly lifecycle: "session" | "run"
  readonly prompt: (text: string, options?: { readonly timeout?: Duration.DurationInput }) => Effect.Effect<
    string,
    AgentClosed | InvalidSpec
  >
  /**
   * Queues a compaction of its conversation as its next turn (`/compact`, with `instructions` for what to keep);
   * the turn's result carries the compaction, and the report log says `compacted`.
   */
  readonly compact: (instructions?: string) => Effect.Effect<string, AgentClosed | InvalidSpec>
  /** Queues a fresh conversation as its next turn (`/clear`): a new session under the same name. */
  readonly clear: Effect.Effect<string, AgentClosed | InvalidSpec>
  /** Waits for a turn; interrupting the wait cancels the turn (dequeued, or interrupted if running). */
  readonly await: (turnId: string) => Effect.Effect<TurnResult, TurnError | NoResult>
  /** Waits for a turn like `await`, but interrupting the wait only stops the waiting: the turn goes on. */
  readonly watch: (turnId: string) => Effect.Effect<TurnResult, TurnError | NoResult>
  readonly result: (turnId: string) => Effect.Effect<TurnResult, TurnError | TurnPending | NoResult>
  readonly status: Effect.Effect<AgentStatusView>
  readonly info: Effect.Effect<AgentInfo>
  readonly transcript: Effect.Effect<ReadonlyArray<TurnRecord>>
  /** Interrupts the turn in flight; queued turns go on. False when nothing was running. */
  readonly interrupt: Effect.Effect<boolean>
  /**
   * Where a fork of it at `at` (default: its last turn that succeeded) starts. A turn still queued or running is
   * TurnPending, an unknown one NoResult, a failed one (or a run, or a conversation not begun) CannotFork.
   */
  readonly forkPoint: (at?: string) => Effect.Effect<ForkPoint, NoResult | TurnPending | CannotFork>
  /**
   * Replaces its labels (none: `{}`): kept in the store, shown by `info`, and saved with the cost of every turn
   * that finishes from now on (a turn in flight included), so spend is grouped by them (`costs({ by: "label:KEY" })`).
   */
  readonly relabel: (labels: Labels) => Effect.Effect<void, AgentClosed>
  /**
   * Ends its process cleanly and keeps everything else (its session, its turns, its place in the registry): its
   * status is `hibernated` until a prompt or `wake` starts it again with `--resume`. False when it was asleep
   * already; CannotHibernate while it is working, waiting on someone, starting, or when it is a run.
   */
  readonly hibernate: (reason: string) => Effect.Effect<boolean, CannotHibernate>
  /** Wakes it, and waits until its process is up again: false when it was not asleep. */
  readonly wake: (reason?: string) => Effect.Effect<boolean, SpawnFailed | SandboxUnavailable | AgentClosed>
  /** Since when (Clock millis) it has been idle with a live process; null when it is not. */
  readonly idleSince: () => number | null
  /** Stops the agent: its turns fail with AgentClosed, its child is stopped. */
  readonly shutdown: (reason: string) => Effect.Effect<void>
}
