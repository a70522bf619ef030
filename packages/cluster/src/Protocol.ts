/**
 * What crosses between hosts. An agent is an `Agent` entity whose id is `<host>/<name>`, so it lives in its
 * host's shard group (every runner serves only its own host's group): its process and worktree are there. A
 * host is a `Host` entity (id `<host>`) for what spans its agents: list, broadcast, approvals, its async runs.
 *
 * Values are plain data (msgpack); failures are the engine's typed errors, decoded back into their classes.
 */
import * as ClusterSchema from "@effect/cluster/ClusterSchema"
import * as Entity from "@effect/cluster/Entity"
import type { EntityId } from "@effect/cluster/EntityId"
import * as Rpc from "@effect/rpc/Rpc"
import type { AgentOptions } from "@flotta/core/Agent"
import * as Errors from "@flotta/core/Errors"
import type * as Permission from "@flotta/core/Permission"
import type * as Sandbox from "@flotta/core/Sandbox"
import { Duration, Schema } from "effect"

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
  Errors.StoreUnavailable,
  Errors.ApprovalNotFound,
  Errors.ApprovalExpired,
  HostLost,
  HostUnavailable
)

const Name = { name: Schema.String }
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
const Data = Schema.Unknown

export const Spawn = Rpc.make("spawn", {
  payload: { name: Schema.String, options: Data, epoch: Schema.Number, callId: Schema.String },
  success: Data,
  error: FleetError
})
export const Ask = Rpc.make("ask", { payload: Turn, success: Data, error: FleetError })
export const Prompt = Rpc.make("prompt", { payload: Turn, success: Schema.String, error: FleetError })
export const Wait = Rpc.make("wait", { payload: { ...Name, turnId: Schema.String }, success: Data, error: FleetError })
export const Watch = Rpc.make("watch", {
  payload: { ...Name, turnId: Schema.String },
  success: Data,
  error: FleetError
})
export const Status = Rpc.make("status", { payload: Name, success: Data, error: FleetError })
export const Result = Rpc.make("result", {
  payload: { ...Name, turnId: Schema.String },
  success: Data,
  error: FleetError
})
export const Transcript = Rpc.make("transcript", { payload: Name, success: Data, error: FleetError })
export const Info = Rpc.make("info", { payload: Name, success: Data, error: FleetError })
export const Interrupt = Rpc.make("interrupt", { payload: Name, success: Schema.Boolean, error: FleetError })
export const Close = Rpc.make("close", { payload: Name, success: Schema.Void, error: FleetError })
export const Unpark = Rpc.make("unpark", { payload: Name, success: Data, error: FleetError })

/** The shard group of an entity id: the host it names (`<host>/<name>` or `<host>`). */
const hostOf = (entityId: EntityId): string => {
  const slash = entityId.indexOf("/")
  return slash === -1 ? entityId : entityId.slice(0, slash)
}

export const AgentEntity = Entity.make("Agent", [
  Spawn,
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
  Unpark
]).annotate(ClusterSchema.ShardGroup, hostOf)

export const agentId = (host: string, name: string) => `${host}/${name}`

export const List = Rpc.make("list", { success: Data, error: FleetError })
export const Broadcast = Rpc.make("broadcast", {
  payload: { text: Schema.String, timeoutMs: Schema.optional(Schema.Number) },
  success: Data,
  error: FleetError
})
export const Approvals = Rpc.make("approvals", { payload: { query: Data }, success: Data, error: FleetError })
export const Decide = Rpc.make("decide", {
  payload: { id: Schema.String, decision: Data },
  success: Data,
  error: FleetError
})

/** The host's async runs and verifies (they run where they were started), and one's outcome by name. */
export const Runs = Rpc.make("runs", { payload: { query: Data }, success: Data, error: FleetError })
export const RunResult = Rpc.make("runResult", { payload: Name, success: Data, error: FleetError })
export const AwaitRun = Rpc.make("awaitRun", { payload: Name, success: Data, error: FleetError })

export const HostEntity = Entity.make("Host", [List, Broadcast, Approvals, Decide, Runs, RunResult, AwaitRun]).annotate(
  ClusterSchema.ShardGroup,
  hostOf
)

/** The agent options as plain data another host can start it from; a permission function stays on its host. */
export interface WireOptions {
  readonly cwd?: string
  readonly model?: string
  readonly permission?: unknown
  readonly systemPrompt?: string
  readonly appendSystemPrompt?: string
  readonly timeoutMs?: number
  readonly env?: Readonly<Record<string, string>>
  readonly role?: "member" | "manager"
  readonly resume?: string
  readonly extraArgs?: ReadonlyArray<string>
  /** The sandbox as data (paths absolute): it goes with the agent to every host that runs it. */
  readonly sandbox?: unknown
}

export const toWire = (options: AgentOptions): WireOptions => ({
  ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
  ...(options.model === undefined ? {} : { model: options.model }),
  ...(options.permission === undefined ? {} : { permission: options.permission }),
  ...(options.systemPrompt === undefined ? {} : { systemPrompt: options.systemPrompt }),
  ...(options.appendSystemPrompt === undefined ? {} : { appendSystemPrompt: options.appendSystemPrompt }),
  ...(options.timeout === undefined ? {} : { timeoutMs: Duration.toMillis(options.timeout) }),
  ...(options.env === undefined ? {} : { env: options.env }),
  ...(options.role === undefined ? {} : { role: options.role }),
  ...(options.resume === undefined ? {} : { resume: options.resume }),
  ...(options.extraArgs === undefined ? {} : { extraArgs: options.extraArgs }),
  ...(options.sandbox === undefined ? {} : { sandbox: options.sandbox })
})

export const fromWire = (wire: WireOptions): AgentOptions => ({
  ...(wire.cwd === undefined ? {} : { cwd: wire.cwd }),
  ...(wire.model === undefined ? {} : { model: wire.model }),
  ...(wire.permission === undefined ? {} : { permission: wire.permission as Permission.Policy }),
  ...(wire.systemPrompt === undefined ? {} : { systemPrompt: wire.systemPrompt }),
  ...(wire.appendSystemPrompt === undefined ? {} : { appendSystemPrompt: wire.appendSystemPrompt }),
  ...(wire.timeoutMs === undefined ? {} : { timeout: Duration.millis(wire.timeoutMs) }),
  ...(wire.env === undefined ? {} : { env: wire.env }),
  ...(wire.role === undefined ? {} : { role: wire.role }),
  ...(wire.resume === undefined ? {} : { resume: wire.resume }),
  ...(wire.extraArgs === undefined ? {} : { extraArgs: wire.extraArgs }),
  ...(wire.sandbox === undefined ? {} : { sandbox: wire.sandbox as Sandbox.SandboxData })
})
