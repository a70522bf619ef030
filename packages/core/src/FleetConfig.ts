/**
 * The engine's own settings: how children are started and supervised. Every field has a default. (The `flotta`
 * command maps its environment variables onto the config file before it hands the settings here.)
 */
import { Context, Duration, Layer } from "effect"
import * as os from "node:os"

export interface FleetSettings {
  /** The claude executable; unset = FLOTTA_CLAUDE_PATH, the pinned dependency, then PATH. */
  readonly claudePath?: string | undefined
  /** Children starting at once; later starts wait for a slot, and that wait never times out. */
  readonly maxConcurrentStarts: number
  /** How long a child may take to answer `initialize` once it has its slot. */
  readonly startTimeout: Duration.Duration
  /** Per-turn default when neither the agent nor the call sets one. */
  readonly turnTimeout: Duration.Duration
  /** A turn with no stdout for this long is interrupted and its process restarted. */
  readonly stallTimeout: Duration.Duration
  /** How long an interrupted turn may take to end before its process is restarted. */
  readonly interruptGrace: Duration.Duration
  /** Restarts allowed within `restartWindow` before an agent stays closed. */
  readonly maxRestarts: number
  readonly restartWindow: Duration.Duration
  /** First restart delay; doubles per recent restart, capped at `restartBackoffMax`. */
  readonly restartBackoff: Duration.Duration
  readonly restartBackoffMax: Duration.Duration
  /** Finished turns kept per agent for `result` and `transcript`. */
  readonly historyLimit: number
  /** Added to every child's environment (an agent's own `env` wins). */
  readonly env: Readonly<Record<string, string>>
  /**
   * Usage limits (see `Parking`): a 429 with no reset time (an API key's, or a throttle) parks its credentials for
   * `parkBackoff`, doubling per limit in a row up to `parkBackoffMax` (a success starts it over); agents resume
   * at the reset (or the backoff's end) plus up to `parkJitter`, `parkStagger` apart.
   */
  readonly parkBackoff: Duration.Duration
  readonly parkBackoffMax: Duration.Duration
  readonly parkJitter: Duration.Duration
  readonly parkStagger: Duration.Duration
  /** How long a tool call may wait for a human's approval before it is denied. */
  readonly approvalTimeout: Duration.Duration
  /**
   * Live claude processes at most. A start that would pass it first hibernates the session idle the longest (its
   * process ends; its conversation and everything in the store stay); with none idle, the start waits for one.
   */
  readonly maxLive: number
  /** A session idle this long hibernates (undefined: only when `maxLive` needs the room). */
  readonly hibernateAfter: Duration.Duration | undefined
  /**
   * A percentage of a session's context window: when a turn ends with its context fuller than that, a compaction is
   * queued before its next prompt (an agent's own `autoCompactAt` wins; undefined: the CLI's own compaction only).
   */
  readonly autoCompactAt: number | undefined
}

export type FleetSettingsInput = {
  readonly [K in keyof FleetSettings]?: NonNullable<FleetSettings[K]> extends Duration.Duration ? Duration.DurationInput
    : FleetSettings[K]
}

/**
 * What one idle claude process costs in memory: its proportional share (PSS) measured with several running, the
 * 384 MiB binary's pages shared between them (CLAUDE-CLI.md, "Measured here").
 */
export const PROCESS_MEMORY_BYTES = 125 * 1024 * 1024

/** The default `maxLive`: half of this machine's memory in idle processes, at least 4 (a 24 GiB machine: 98). */
export const defaultMaxLive = (totalMemoryBytes = os.totalmem()) =>
  Math.max(4, Math.floor((totalMemoryBytes * 0.5) / PROCESS_MEMORY_BYTES))

export const defaults: FleetSettings = {
  maxConcurrentStarts: Math.max(2, os.availableParallelism() * 2),
  startTimeout: Duration.seconds(120),
  turnTimeout: Duration.seconds(180),
  stallTimeout: Duration.minutes(10),
  interruptGrace: Duration.seconds(10),
  maxRestarts: 5,
  restartWindow: Duration.minutes(10),
  restartBackoff: Duration.seconds(1),
  restartBackoffMax: Duration.seconds(30),
  historyLimit: 1000,
  env: {},
  parkBackoff: Duration.minutes(1),
  parkBackoffMax: Duration.minutes(30),
  parkJitter: Duration.seconds(30),
  parkStagger: Duration.seconds(2),
  approvalTimeout: Duration.minutes(15),
  maxLive: defaultMaxLive(),
  hibernateAfter: undefined,
  autoCompactAt: undefined
}

const durationOr = (input: Duration.DurationInput | undefined, fallback: Duration.Duration) =>
  input === undefined ? fallback : Duration.decode(input)

export const make = (input: FleetSettingsInput = {}): FleetSettings => ({
  claudePath: input.claudePath,
  maxConcurrentStarts: Math.max(1, Math.floor(input.maxConcurrentStarts ?? defaults.maxConcurrentStarts)),
  startTimeout: durationOr(input.startTimeout, defaults.startTimeout),
  turnTimeout: durationOr(input.turnTimeout, defaults.turnTimeout),
  stallTimeout: durationOr(input.stallTimeout, defaults.stallTimeout),
  interruptGrace: durationOr(input.interruptGrace, defaults.interruptGrace),
  maxRestarts: Math.max(0, Math.floor(input.maxRestarts ?? defaults.maxRestarts)),
  restartWindow: durationOr(input.restartWindow, defaults.restartWindow),
  restartBackoff: durationOr(input.restartBackoff, defaults.restartBackoff),
  restartBackoffMax: durationOr(input.restartBackoffMax, defaults.restartBackoffMax),
  historyLimit: Math.max(1, Math.floor(input.historyLimit ?? defaults.historyLimit)),
  env: input.env ?? {},
  parkBackoff: durationOr(input.parkBackoff, defaults.parkBackoff),
  parkBackoffMax: durationOr(input.parkBackoffMax, defaults.parkBackoffMax),
  parkJitter: durationOr(input.parkJitter, defaults.parkJitter),
  parkStagger: durationOr(input.parkStagger, defaults.parkStagger),
  approvalTimeout: durationOr(input.approvalTimeout, defaults.approvalTimeout),
  maxLive: Math.max(1, Math.floor(input.maxLive ?? defaults.maxLive)),
  hibernateAfter: input.hibernateAfter === undefined ? undefined : Duration.decode(input.hibernateAfter),
  // A percentage: anything outside (0, 100] is no threshold.
  autoCompactAt: input.autoCompactAt !== undefined && input.autoCompactAt > 0 && input.autoCompactAt <= 100
    ? input.autoCompactAt
    : undefined
})

export class FleetConfig extends Context.Tag("@flotta/core/FleetConfig")<FleetConfig, FleetSettings>() {
  static readonly layer = (input: FleetSettingsInput = {}) => Layer.succeed(FleetConfig, make(input))
}
