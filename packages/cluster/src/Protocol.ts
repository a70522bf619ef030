/**
 * What crosses between hosts. An agent is an `Agent` entity whose id is `<host>/<name>`, so it lives in its
 * host's shard group (every runner serves only its own host's group): its process and worktree are there. A
 * host is a `Host` entity (id `<host>`) for what spans its agents: list, broadcast, approvals, its async runs.
 *
 * Every payload, answer and failure has its Schema: the engine's views (core's AgentView, and WireViews for the
 * few core keeps as types only) and its typed errors, decoded back into their classes on the caller's host.
 */
import * as ClusterSchema from "@effect/cluster/ClusterSchema"
import * as Entity from "@effect/cluster/Entity"
import type { EntityId } from "@effect/cluster/EntityId"
import * as Rpc from "@effect/rpc/Rpc"
import { AgentOptions } from "@flotta/core/AgentOptions"
import * as AgentView from "@flotta/core/AgentView"
import { ApprovalDecisionSchema, ApprovalSchema } from "@flotta/core/Approvals"
import { CostBy, CostReport } from "@flotta/core/Costs"
import * as Errors from "@flotta/core/Errors"
import { NoDiff, RunDiff } from "@flotta/core/RunDiff"
import { Schema } from "effect"
import { ApprovalQuery, BroadcastOutcome, RunOutcome, RunQuery, RunView, Unparked } from "./WireViews.js"

/** A turn in flight on a host that died (its lease lapsed): the agent comes back elsewhere, the turn does not. */
export class HostLost extends Schema.TaggedError<HostLost>()("HostLost", {
  name: Schema.String,
  host: Schema.String
}) {
  override get message() {
    return `host ${this.host} was lost while it ran this turn of ${this.name}; the agent moves to a live host, ` +
      `ask again`
  }
}

/** No live host can take the agent: the one asked for is not live, or none is. */
export class HostUnavailable extends Schema.TaggedError<HostUnavailable>()("HostUnavailable", {
  host: Schema.String,
  live: Schema.Array(Schema.String)
}) {
  override get message() {
    return `no live host named ${JSON.stringify(this.host)} in the cluster (live: ${this.live.join(", ") || "none"})`
  }
}

/** Every failure an agent operation can report, across hosts. */
export const FleetError = Schema.Union(
  Errors.RunErrorSchema,
  Errors.TurnPending,
  Errors.NoResult,
  Errors.RunNotFound,
  NoDiff,
  Errors.StoreUnavailable,
  Errors.ApprovalNotFound,
  Errors.ApprovalExpired,
  Errors.CannotFork,
  Errors.CannotHibernate,
  HostLost,
  HostUnavailable
)

const Name = { name: Schema.String }
const TurnOf = { ...Name, turnId: Schema.String }
/**
 * `callId` names one call: a request the cluster sends again after a lost reply (it does, when a connection
 * drops) is answered with the first one's outcome, never run twice.
 */
const Turn = {
  name: Schema.String,
  text: Schema.String,
  timeoutMs: Schema.optional(Schema.Number),
  callId: Schema.String
}

export const Spawn = Rpc.make("spawn", {
  payload: { name: Schema.String, options: AgentOptions, epoch: Schema.Number, callId: Schema.String },
  success: AgentView.AgentInfo,
  error: FleetError
})
/** A fork of the agent this entity is: it starts on the same host, where the source's session file is. */
export const Fork = Rpc.make("fork", {
  payload: {
    source: Schema.String,
    name: Schema.String,
    at: Schema.optional(Schema.String),
    options: AgentOptions,
    callId: Schema.String
  },
  success: AgentView.AgentInfo,
  error: FleetError
})
export const Ask = Rpc.make("ask", { payload: Turn, success: AgentView.TurnResult, error: FleetError })
export const Prompt = Rpc.make("prompt", { payload: Turn, success: Schema.String, error: FleetError })
export const Wait = Rpc.make("wait", { payload: TurnOf, success: AgentView.TurnResult, error: FleetError })
export const Watch = Rpc.make("watch", { payload: TurnOf, success: AgentView.TurnResult, error: FleetError })
export const Status = Rpc.make("status", { payload: Name, success: AgentView.AgentStatusView, error: FleetError })
export const Result = Rpc.make("result", { payload: TurnOf, success: AgentView.TurnResult, error: FleetError })
export const Transcript = Rpc.make("transcript", {
  payload: Name,
  success: Schema.Array(AgentView.TurnRecord),
  error: FleetError
})
export const Info = Rpc.make("info", { payload: Name, success: AgentView.AgentInfo, error: FleetError })
export const Interrupt = Rpc.make("interrupt", { payload: Name, success: Schema.Boolean, error: FleetError })
export const Close = Rpc.make("close", { payload: Name, success: Schema.Void, error: FleetError })
export const Unpark = Rpc.make("unpark", { payload: Name, success: Unparked, error: FleetError })
export const Compact = Rpc.make("compact", {
  payload: { ...Name, instructions: Schema.optional(Schema.String) },
  success: Schema.String,
  error: FleetError
})
export const Clear = Rpc.make("clear", { payload: Name, success: Schema.String, error: FleetError })
export const Hibernate = Rpc.make("hibernate", { payload: Name, success: Schema.Boolean, error: FleetError })
export const Wake = Rpc.make("wake", { payload: Name, success: Schema.Boolean, error: FleetError })

/** The shard group of an entity id: the host it names (`<host>/<name>` or `<host>`). */
const hostOf = (entityId: EntityId): string => {
  const slash = entityId.indexOf("/")
  return slash === -1 ? entityId : entityId.slice(0, slash)
}

export const AgentEntity = Entity.make("Agent", [
  Spawn,
  Fork,
  Ask,
  Prompt,
  Wait,
  Watch,
  Status,
  Result,
  Transcript,
  Info,
  Interrupt,
  Close,
  Unpark,
  Compact,
  Clear,
  Hibernate,
  Wake
]).annotate(ClusterSchema.ShardGroup, hostOf)

export const agentId = (host: string, name: string) => `${host}/${name}`

export const List = Rpc.make("list", { success: Schema.Array(AgentView.AgentInfo), error: FleetError })
export const Broadcast = Rpc.make("broadcast", {
  payload: { text: Schema.String, timeoutMs: Schema.optional(Schema.Number) },
  success: Schema.Array(BroadcastOutcome),
  error: FleetError
})
export const Approvals = Rpc.make("approvals", {
  payload: { query: ApprovalQuery },
  success: Schema.Array(ApprovalSchema),
  error: FleetError
})
export const Decide = Rpc.make("decide", {
  payload: { id: Schema.String, decision: ApprovalDecisionSchema },
  success: ApprovalSchema,
  error: FleetError
})

/** The host's async runs and verifies (they run where they were started), one's outcome and a run's diff by name. */
export const Runs = Rpc.make("runs", {
  payload: { query: RunQuery },
  success: Schema.Array(RunView),
  error: FleetError
})
export const RunResult = Rpc.make("runResult", { payload: Name, success: RunOutcome, error: FleetError })
export const AwaitRun = Rpc.make("awaitRun", { payload: Name, success: RunOutcome, error: FleetError })
export const Diff = Rpc.make("diff", { payload: Name, success: RunDiff, error: FleetError })

/** What the host's own store says its turns spent, in a window resolved by the caller (see `Costs`). */
export const CostsRpc = Rpc.make("costs", {
  payload: { since: Schema.NullOr(Schema.String), until: Schema.NullOr(Schema.String), by: CostBy },
  success: CostReport,
  error: FleetError
})

export const HostEntity = Entity.make("Host", [
  List,
  Broadcast,
  Approvals,
  Decide,
  Runs,
  RunResult,
  AwaitRun,
  Diff,
  CostsRpc
]).annotate(
  ClusterSchema.ShardGroup,
  hostOf
)
