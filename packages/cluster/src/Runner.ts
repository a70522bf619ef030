/**
 * This node's `@effect/cluster` runner, over the cluster store (runners and shard locks in SQL; there is no
 * shard manager in this line). Every runner serves exactly one shard group, its host's, so an entity whose id
 * names a host is served there and nowhere else. Every option is explicit: `ShardingConfig.layerFromEnv` would
 * also read the HOST and PORT environment variables.
 */
import * as MessageStorage from "@effect/cluster/MessageStorage"
import { RunnerAddress } from "@effect/cluster/RunnerAddress"
import * as RunnerHealth from "@effect/cluster/RunnerHealth"
import * as ShardingConfig from "@effect/cluster/ShardingConfig"
import * as SocketRunner from "@effect/cluster/SocketRunner"
import * as SqlRunnerStorage from "@effect/cluster/SqlRunnerStorage"
import * as RpcSerialization from "@effect/rpc/RpcSerialization"
import { Duration, Effect, Layer, Option, Redacted, Schedule } from "effect"
import { randomBytes } from "node:crypto"
import { ClusterConfigError } from "./ClusterConfig.js"
import type { ClusterSettings } from "./ClusterConfig.js"
import { ClusterStore } from "./ClusterStore.js"
import { tickOf } from "./Membership.js"
import * as Transport from "./Transport.js"

export const shardingConfig = (settings: ClusterSettings) => {
  return ShardingConfig.layer({
    runnerAddress: Option.some(new RunnerAddress(settings.advertise)),
    runnerListenAddress: Option.some(new RunnerAddress(settings.listen)),
    availableShardGroups: [settings.host],
    assignedShardGroups: [settings.host],
    shardsPerGroup: settings.shardsPerGroup,
    // Shard locks in a table that expires with the lease, not Postgres advisory locks: those number each group
    // by its place in the list of all groups, which no node knows in advance here.
    shardLockDisableAdvisory: true,
    // A host's liveness is its lease (Membership), not its shard locks: no other runner serves its group, and
    // the same host restarted has the same address, which may take its locks back at once. Timeouts here
    // (the refresh interval is also the lock operations' deadline) would interrupt its entities under load.
    shardLockExpiration: Duration.seconds(35),
    shardLockRefreshInterval: Duration.seconds(10),
    refreshAssignmentsInterval: tickOf(settings),
    // Entities hold no state (the engine does): an idle one may go, it comes back on the next message.
    entityMaxIdleTime: Duration.minutes(10),
    // A node that stops does not hold its shutdown for a call in flight: the caller's host sees HostLost.
    entityTerminationTimeout: Duration.seconds(1),
    preemptiveShutdown: false
  })
}

/** The runner, its server and its clients, with the shared secret on every connection. */
export const layer = (settings: ClusterSettings) => {
  const transport = Layer.unwrapEffect(Effect.gen(function*() {
    const store = yield* ClusterStore
    // Without a configured secret (loopback only) the nodes share a random one: only the store's readers know it.
    const secret = Option.isSome(settings.secret)
      ? Redacted.value(settings.secret.value)
      : yield* store.settle("secret", randomBytes(32).toString("hex"))
    return Layer.merge(
      Transport.layerServer({ listen: settings.listen, secret }),
      Transport.layerClientProtocol(secret)
    )
  }))
  return SocketRunner.layer.pipe(
    Layer.provide(transport),
    Layer.catchAll((error) =>
      Layer.fail(
        new ClusterConfigError({
          reason: `cluster.listen ${settings.listen.host}:${settings.listen.port} cannot be used: ${
            error.cause instanceof Error ? error.cause.message : error.reason
          }`
        })
      )
    ),
    // Liveness is the lease (see Membership), not pings: a runner's health singleton would live in a group no
    // runner serves here.
    Layer.provide(RunnerHealth.layerNoop),
    // Calls between hosts are not persisted: a host that dies takes its turns in flight with it (HostLost).
    Layer.provide(MessageStorage.layerNoop),
    // Nodes starting together race to create @effect/cluster's tables: the loser tries again.
    Layer.provide(
      Layer.orDie(
        Layer.retry(SqlRunnerStorage.layer, Schedule.spaced("200 millis").pipe(Schedule.intersect(Schedule.recurs(5))))
      )
    ),
    Layer.provide(shardingConfig(settings)),
    Layer.provide(RpcSerialization.layerMsgPack)
  )
}
