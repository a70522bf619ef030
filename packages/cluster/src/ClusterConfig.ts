/**
 * A node's cluster settings: the config file's `cluster` section, or the same fields from code. Runner-to-runner
 * traffic carries the shared secret; a node that listens beyond this machine without one is refused at start.
 */
import { NAME_PATTERN } from "@flotta/core/AgentView"
import { isLoopback } from "@flotta/core/ServerSection"
import { Data, Effect, Option, Redacted, Schema } from "effect"
import * as path from "node:path"

/** Where the cluster's shared state lives: every node of one cluster names the same store. */
export type ClusterStoreConfig = { readonly postgres: string } | { readonly sqlite: string }

export interface ClusterConfigInput {
  readonly store: ClusterStoreConfig
  /** This node's host name, unique in the cluster; agents placed on it live here. */
  readonly host: string
  /** Where this node's runner listens for the others. */
  readonly listen: { readonly host: string; readonly port: number }
  /** Where the others reach it, when that is not `listen` (a wildcard bind, a NAT): default `listen`. */
  readonly advertise?: { readonly host: string; readonly port: number }
  /** The shared secret (else `FLOTTA_CLUSTER_SECRET`); required when `listen.host` is not a loopback address. */
  readonly secret?: string | Redacted.Redacted<string>
  /** A host whose lease has not been renewed for this long is dead, and its agents move (default 10,000). */
  readonly leaseMs?: number
  /** Shards per host; every node of one cluster must use the same number (default 16). */
  readonly shardsPerGroup?: number
}

export interface ClusterSettings {
  readonly store: ClusterStoreConfig
  readonly host: string
  readonly listen: { readonly host: string; readonly port: number }
  readonly advertise: { readonly host: string; readonly port: number }
  /** None on loopback without one: the nodes then share a random one kept in the cluster store. */
  readonly secret: Option.Option<Redacted.Redacted<string>>
  readonly leaseMs: number
  readonly shardsPerGroup: number
}

export const DEFAULT_LEASE_MS = 10_000
export const DEFAULT_SHARDS_PER_GROUP = 16

/** The node cannot join with these settings; the message says which field and what to change. */
export class ClusterConfigError extends Data.TaggedError("ClusterConfigError")<{ readonly reason: string }> {
  override get message() {
    return `cluster not joined: ${this.reason}`
  }
}

const fail = (reason: string) => new ClusterConfigError({ reason })

/** Applies defaults and checks the settings; a relative SQLite path is taken from `baseDir`. */
export const make = Effect.fn("ClusterConfig.make")(
  function*(
    input: ClusterConfigInput,
    options: { readonly baseDir?: string; readonly env?: Record<string, string | undefined> } = {}
  ) {
    const env = options.env ?? process.env
    if (!NAME_PATTERN.test(input.host)) {
      return yield* fail(
        `cluster.host ${
          JSON.stringify(input.host)
        } is not a host name: use 1 to 63 characters a-z, 0-9, '.', '_' or '-'`
      )
    }
    const { host, port } = input.listen
    if (host.trim().length === 0) return yield* fail("cluster.listen.host must not be empty")
    if (!Number.isInteger(port) || port < 1 || port > 65535) {
      return yield* fail(`cluster.listen.port must be an integer from 1 to 65535, got ${port}`)
    }
    const given = input.secret ?? env.FLOTTA_CLUSTER_SECRET
    const secret = given === undefined || (typeof given === "string" && given.length === 0)
      ? undefined
      : typeof given === "string"
      ? Redacted.make(given)
      : given
    if (secret !== undefined && Redacted.value(secret).length < 16) {
      return yield* fail("cluster.secret (or FLOTTA_CLUSTER_SECRET) must be at least 16 characters long")
    }
    if (secret === undefined && !isLoopback(host)) {
      return yield* fail(
        `listening on ${host} lets other machines reach this node, and no secret is configured. ` +
          "Set cluster.secret (or FLOTTA_CLUSTER_SECRET) on every node, or listen on 127.0.0.1"
      )
    }
    const advertise = input.advertise ?? { host, port }
    if (advertise.host.trim().length === 0 || ["0.0.0.0", "::", "[::]"].includes(advertise.host)) {
      return yield* fail(
        `cluster.advertise.host must be an address the other nodes can reach${
          input.advertise === undefined ? ` (listening on ${host}, set cluster.advertise)` : ""
        }, got ${JSON.stringify(advertise.host)}`
      )
    }
    if (!Number.isInteger(advertise.port) || advertise.port < 1 || advertise.port > 65535) {
      return yield* fail(`cluster.advertise.port must be an integer from 1 to 65535, got ${advertise.port}`)
    }
    const leaseMs = input.leaseMs ?? DEFAULT_LEASE_MS
    if (!Number.isInteger(leaseMs) || leaseMs < 1000) {
      return yield* fail(`cluster.leaseMs must be an integer of at least 1000, got ${leaseMs}`)
    }
    const shardsPerGroup = input.shardsPerGroup ?? DEFAULT_SHARDS_PER_GROUP
    if (!Number.isInteger(shardsPerGroup) || shardsPerGroup < 1 || shardsPerGroup > 1000) {
      return yield* fail(`cluster.shardsPerGroup must be an integer from 1 to 1000, got ${shardsPerGroup}`)
    }
    const store: ClusterStoreConfig = "sqlite" in input.store
      ? { sqlite: path.resolve(options.baseDir ?? process.cwd(), input.store.sqlite) }
      : input.store
    if ("postgres" in store && !/^postgres(ql)?:\/\//.test(store.postgres)) {
      return yield* fail(`cluster.store.postgres must be a postgres:// URL`)
    }
    return {
      store,
      host: input.host,
      listen: { host, port },
      advertise,
      secret: Option.fromNullable(secret),
      leaseMs,
      shardsPerGroup
    } satisfies ClusterSettings
  }
)

/** The `cluster` section of a config file, as written. */
export const FileSection = Schema.Struct({
  store: Schema.propertySignature(Schema.Union(
    Schema.Struct({ postgres: Schema.String }),
    Schema.Struct({ sqlite: Schema.String })
  )).annotations({
    description: "The cluster's shared state: Postgres for machines that share nothing else, one SQLite file for " +
      "several nodes on one machine. Every node of one cluster names the same one."
  }),
  host: Schema.propertySignature(Schema.String).annotations({
    description: "This node's host name, unique in the cluster (1 to 63 characters a-z, 0-9, '.', '_' or '-')."
  }),
  listen: Schema.propertySignature(Schema.Struct({ host: Schema.String, port: Schema.Number })).annotations({
    description: "Where this node's runner listens for the others."
  }),
  advertise: Schema.optionalWith(Schema.Struct({ host: Schema.String, port: Schema.Number }), { exact: true })
    .annotations({
      description: "Where the others reach this node, when that is not `listen` (a `0.0.0.0` bind, a NAT)."
    }),
  secret: Schema.optionalWith(Schema.String, { exact: true }).annotations({
    description: "The shared secret every runner connection proves (16 characters or more; else " +
      "`FLOTTA_CLUSTER_SECRET`). Required unless `listen.host` is loopback: on loopback without one, the nodes " +
      "share a random one kept in the cluster store."
  }),
  leaseMs: Schema.optionalWith(Schema.Number, { exact: true }).annotations({
    description:
      `How long a host stays live without renewing its lease, in milliseconds (default ${DEFAULT_LEASE_MS}, ` +
      "at least 1000); then its agents move to the live hosts."
  }),
  shardsPerGroup: Schema.optionalWith(Schema.Number, { exact: true }).annotations({
    description: `Shards per host (default ${DEFAULT_SHARDS_PER_GROUP}, at most 1000); the same on every node, ` +
      "checked at start."
  })
})
export type FileSection = typeof FileSection.Type

/** A place to show in messages, without credentials. */
export const describeStore = (store: ClusterStoreConfig): string => {
  if ("sqlite" in store) return `sqlite ${store.sqlite}`
  try {
    const url = new URL(store.postgres)
    return `postgres ${url.host}${url.pathname}`
  } catch {
    return "postgres (an unreadable URL)"
  }
}
