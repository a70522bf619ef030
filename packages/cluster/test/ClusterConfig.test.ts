/** The cluster section's checks: each bad field is named, a non-loopback listen needs a secret. */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import * as ClusterConfig from "../src/ClusterConfig.js"

const base = {
  store: { sqlite: "cluster.db" },
  host: "node-a",
  listen: { host: "127.0.0.1", port: 34431 }
} as const

const refused = (input: Partial<ClusterConfig.ClusterConfigInput>, env: Record<string, string> = {}) =>
  Effect.flip(ClusterConfig.make({ ...base, ...input }, { env })).pipe(Effect.map((e) => e.message))

describe("ClusterConfig.make", () => {
  it.effect("applies defaults and resolves a relative SQLite path from the config's directory", () =>
    Effect.gen(function*() {
      const settings = yield* ClusterConfig.make(base, { baseDir: "/srv/project", env: {} })
      assert.deepStrictEqual(settings.store, { sqlite: "/srv/project/cluster.db" })
      assert.deepStrictEqual(settings.advertise, base.listen)
      assert.strictEqual(settings.leaseMs, ClusterConfig.DEFAULT_LEASE_MS)
      assert.strictEqual(settings.shardsPerGroup, ClusterConfig.DEFAULT_SHARDS_PER_GROUP)
      assert.isTrue(Option.isNone(settings.secret))
    }))

  it.effect("takes the secret from FLOTTA_CLUSTER_SECRET when the section has none", () =>
    Effect.gen(function*() {
      const settings = yield* ClusterConfig.make(
        { ...base, listen: { host: "10.0.0.5", port: 34431 } },
        { env: { FLOTTA_CLUSTER_SECRET: "a-secret-of-enough-length" } }
      )
      assert.strictEqual(Redacted.value(Option.getOrThrow(settings.secret)), "a-secret-of-enough-length")
    }))

  it.effect("refuses a non-loopback listen without a secret, naming cluster.secret", () =>
    Effect.gen(function*() {
      const message = yield* refused({ listen: { host: "0.0.0.0", port: 34431 } })
      assert.include(message, "cluster.secret")
      assert.include(message, "FLOTTA_CLUSTER_SECRET")
    }))

  it.effect("names each bad field", () =>
    Effect.gen(function*() {
      assert.include(yield* refused({ host: "Node A" }), "cluster.host")
      assert.include(yield* refused({ listen: { host: "127.0.0.1", port: 70000 } }), "cluster.listen.port")
      assert.include(yield* refused({ secret: "short" }), "at least 16 characters")
      assert.include(yield* refused({ leaseMs: 10 }), "cluster.leaseMs")
      assert.include(yield* refused({ shardsPerGroup: 0 }), "cluster.shardsPerGroup")
      assert.include(yield* refused({ store: { postgres: "mysql://x" } }), "cluster.store.postgres")
      // A wildcard bind is not an address the others can use: it needs an advertised one.
      const wildcard = yield* refused({ listen: { host: "0.0.0.0", port: 34431 }, secret: "a-secret-of-enough-length" })
      assert.include(wildcard, "cluster.advertise")
    }))
})
