/**
 * What crosses between hosts. An agent is an `Agent` entity whose id is `<host>/<name>`, so it lives in its
 * host's shard group (every runner serves only its own host's group): its process and worktree are there. A
 * host is a `Host` entity (id `<host>`) for what spans its agents: list, broadcast, approvals, its async runs.
 *
 * Every payload, answer and failure has its Schema: the engine's views (core's AgentView, and WireViews for the
 * few core keeps as types only) and its typed errors, decoded back into their classes on the caller's host.
 */
import type { AlreadyProcessingMessage, MailboxFull, PersistenceError } from "@effect/cluster/ClusterError"
import * as ClusterSchema from "@effect/cluster/ClusterSchema"
import * as Entity from "@effect/cluster/Entity"
import type { EntityId } from "@effect/cluster/EntityId"
import * as Rpc from "@effect/rpc/Rpc"
import { AgentOptions } from "@flotta/core/AgentOptions"
import * as AgentView from "@flotta/core/AgentView"
import { CostBy, CostReport } from "@flotta/core/Costs"
import * as Operations from "@flotta/core/Operations"
import { Effect } from "effect"
import { Predicate, Schema } from "effect"

/** Moved to core's Errors (every implementation of Flotta may fail with them); kept here for compatibility. */
export { HostLost, HostUnavailable } from "@flotta/core/Errors"

const { operations } = Operations
type Ops = Operations.Operations

/** The agent operations forwarded as they are, to the agent's host (a start has a protocol of its own). */
export const agentOps = Operations.routed("agent")
export type AgentOp = typeof agentOps[number]
/** What a host answers for itself (its agents, its runs); the caller merges the hosts' answers. */
export const hostOps = Operations.routed("fleet", "run").filter((name): name is Exclude<typeof name, "costs"> =>
  name !== "costs"
)
export type HostOp = typeof hostOps[number]

/**
 * An operation's RPC: the table's input, output and errors. `callId` names one call: a request the cluster sends
 * again after a lost reply (it does, when a connection drops) is answered with the first one's outcome.
 */
export type RpcOf<K extends Operations.Name> = K extends Operations.Name ? Rpc.Rpc<
    K,
    Schema.Struct<{ input: Ops[K]["input"]; callId: typeof Schema.String }>,
    Ops[K]["output"],
    Ops[K]["error"]
  >
  : never

const rpcOf = <K extends Operations.Name>(name: K): RpcOf<K> => {
  const op: Operations.Any = operations[name]
  return Rpc.make(name, {
    payload: { input: op.input, callId: Schema.String },
    success: op.output,
    error: op.error
  }) as RpcOf<K>
}

export const Spawn = Rpc.make("spawn", {
  payload: { name: Schema.String, options: AgentOptions, epoch: Schema.Number, callId: Schema.String },
  success: AgentView.AgentInfo,
  error: operations.spawn.error
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
  error: operations.fork.error
})

/** The shard group of an entity id: the host it names (`<host>/<name>` or `<host>`). */
const hostOf = (entityId: EntityId): string => {
  const slash = entityId.indexOf("/")
  return slash === -1 ? entityId : entityId.slice(0, slash)
}

export const AgentEntity = Entity.make("Agent", [Spawn, Fork, ...agentOps.map(rpcOf)]).annotate(
  ClusterSchema.ShardGroup,
  hostOf
)

export const agentId = (host: string, name: string) => `${host}/${name}`

/** What the host's own store says its turns spent, in a window resolved by the caller (see `Costs`). */
export const CostsRpc = Rpc.make("costs", {
  payload: { since: Schema.NullOr(Schema.String), until: Schema.NullOr(Schema.String), by: CostBy },
  success: CostReport,
  error: operations.costs.error
})

export const HostEntity = Entity.make("Host", [...hostOps.map(rpcOf), CostsRpc]).annotate(
  ClusterSchema.ShardGroup,
  hostOf
)

/** A call that could not reach its host, or whose host went away under it. */
const UNREACHABLE: ReadonlyArray<unknown> = [
  "RunnerUnavailable",
  "MailboxFull",
  "EntityNotAssignedToRunner",
  "PersistenceError",
  "AlreadyProcessingMessage"
]
export type Unreachable = {
  readonly _tag:
    | "RunnerUnavailable"
    | "MailboxFull"
    | "EntityNotAssignedToRunner"
    | "PersistenceError"
    | "AlreadyProcessingMessage"
}
export const unreachable = <E>(error: E): error is Extract<E, Unreachable> =>
  Predicate.hasProperty(error, "_tag") && UNREACHABLE.includes(error._tag)
/** A remote call's failures once those that say its host could not be reached are taken out (they map to HostLost). */
export type Reached<E> = Exclude<E, Extract<E, Unreachable>>

/** An agent operation's call on its host's client: the client has one method per operation, by its name. */
export const callAgent = Effect.fnUntraced(
  function*<K extends AgentOp>(
    client: Effect.Effect.Success<typeof AgentEntity.client> extends (id: string) => infer C ? C : never,
    name: K,
    input: Operations.InputOf<Ops[K]>,
    callId: string
  ) {
    const method: unknown = client[name]
    // The client has the RPC of each operation under its name, with the table's input, output and errors.
    return yield* (method as (payload: {
      readonly input: Operations.InputOf<Ops[K]>
      readonly callId: string
    }) => Effect.Effect<
      Operations.OutputOf<Ops[K]>,
      Operations.ErrorOf<Ops[K]> | MailboxFull | AlreadyProcessingMessage | PersistenceError
    >)({ input, callId })
  }
)

/**
 * Handlers built by name over the table (an entity's `of` takes them spread): each answers its operation with
 * `handle`, which runs the engine's method of that name on the request's input.
 */
export const handlersOf = <H>(
  names: ReadonlyArray<Operations.Name>,
  handle: (name: Operations.Name) => (request: {
    readonly payload: { readonly input: unknown; readonly callId: string }
  }) => Effect.Effect<unknown, unknown>
): H => Object.fromEntries(names.map((name) => [name, handle(name)])) as H
