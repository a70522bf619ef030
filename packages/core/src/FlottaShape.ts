/**
 * What a fleet is, as an interface (`FlottaShape`): every implementation of `Flotta` (the engine's, a cluster's)
 * is one, with the same honest errors. The service itself is `Flotta`.
 */
import type { Effect, Scope, Stream } from "effect"
import type { Approvals } from "./Approvals.js"
import type { AgentNotFound, HostLost, HostUnavailable, InvalidSpec, StoreUnavailable } from "./Errors.js"
import type * as Restore from "./internal/restore.js"
import type * as Operations from "./Operations.js"
import type { Parking } from "./Parking.js"
import type { ReportLog, ReportNotice, ReportQuery, SubscribeOptions } from "./ReportLog.js"
import type { Runs } from "./Run.js"
import type * as Spec from "./Spec.js"
import type { StoreInfo } from "./Store.js"

export interface BootReport {
  readonly started: ReadonlyArray<string>
  readonly templates: ReadonlyArray<string>
  readonly rejected: ReadonlyArray<Spec.Rejected>
  /** Valid sessions whose start failed (SpawnFailed, AgentAlreadyExists, ...). */
  readonly failed: ReadonlyArray<
    { readonly name: string; readonly error: { readonly _tag: string; readonly message: string } }
  >
}

/**
 * The fleet's operations, as Effects: the table's (`Operations`, each with the errors any implementation may fail
 * with, a cluster's HostLost and HostUnavailable included), and the members that are not request and response:
 * feeds, subscriptions, and what takes functions or stays on the host that runs it (runs, verifies, worktrees).
 */
export interface FlottaShape extends Operations.Methods {
  /** What came back from the store when the fleet started (nothing, for a new store). */
  readonly restored: Restore.RestoreReport
  /** The store's kind, place, size, schema version and health. */
  readonly store: Effect.Effect<StoreInfo>
  /** Live claude processes now, and the most there may be (`maxLive`). */
  readonly processes: Effect.Effect<{ readonly live: number; readonly max: number }>
  /** The credential groups parked now: until when, why, and which agents. */
  readonly parking: Parking["parked"]
  readonly reports: (query?: ReportQuery) => Effect.Effect<
    Effect.Effect.Success<ReturnType<ReportLog["reports"]>>,
    StoreUnavailable
  >
  /** A live feed of the report log, subscribed once this effect has run (see ReportLog.subscribe). */
  readonly subscribe: (options?: SubscribeOptions) => Effect.Effect<Stream.Stream<ReportNotice>, never, Scope.Scope>
  readonly stream: (options?: SubscribeOptions) => Stream.Stream<ReportNotice>
  /** One live agent's feed, from now on; AgentNotFound for a name that is not live. */
  readonly follow: (
    name: string,
    options?: Omit<SubscribeOptions, "agent">
  ) => Effect.Effect<
    Stream.Stream<ReportNotice>,
    AgentNotFound | HostLost | HostUnavailable | StoreUnavailable,
    Scope.Scope
  >
  /** Each new pending approval, live, from the moment the stream runs. */
  readonly approvalRequests: Approvals["requests"]
  /** The same, subscribed once this (scoped) effect has run. */
  readonly subscribeApprovals: Approvals["subscribe"]
  /** Validates a declarative fleet (`{ fleetDefaults, agents }`, as in a config file) and boots it. */
  readonly boot: (config: unknown) => Effect.Effect<BootReport, InvalidSpec | StoreUnavailable>
  /** Starts a validated fleet's sessions and keeps its run templates. */
  readonly bootFleet: (fleet: Spec.Fleet) => Effect.Effect<BootReport, StoreUnavailable>
  readonly template: Runs["template"]
  readonly run: Runs["run"]
  readonly runAsync: Runs["runAsync"]
  readonly verify: Runs["verify"]
  readonly verifyAsync: Runs["verifyAsync"]
  readonly worktrees: Runs["worktrees"]
  readonly gcWorktrees: Runs["gcWorktrees"]
}
