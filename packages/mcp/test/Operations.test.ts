/**
 * The operation table (`@flotta/core/Operations`) and the surfaces derived from it: every operation is on the
 * Promise facade, on MCP (its own tool, or one that serves it) and in the cluster's protocol, under the same name;
 * the `Flotta` interface names a cluster's failures (a type-level check, compiled by `tsc -p tsconfig.test.json`);
 * and `label`, the operation added last, works on each surface.
 */
import { assert, describe, it } from "@effect/vitest"
import type * as Cluster from "@flotta/cluster/Cluster"
import * as Protocol from "@flotta/cluster/Protocol"
import { fromLayer } from "@flotta/core/Client"
import type { HostLost, HostUnavailable, StoreUnavailable } from "@flotta/core/Errors"
import { Flotta } from "@flotta/core/Flotta"
import * as Operations from "@flotta/core/Operations"
import type { Effect as E, Layer } from "effect"
import { Effect } from "effect"
import { tools } from "../src/Tools.js"
import { call, connect, ERAS, fleet, handler, structured } from "./support.js"

// Type-level: every operation's error names what a cluster may fail with, and the cluster provides a `Flotta`.
type AskError = E.Effect.Error<ReturnType<Flotta["ask"]>>
type ListError = E.Effect.Error<ReturnType<Flotta["list"]>>
const askMayLoseItsHost: [HostLost] extends [Extract<AskError, HostLost>] ? true : false = true
const listMayFindNoHost: [HostUnavailable | StoreUnavailable] extends [ListError] ? true : false = true
type ClusterProvides = Layer.Layer.Success<ReturnType<typeof Cluster.layer>>
const clusterIsAFlotta: [Flotta] extends [ClusterProvides] ? true : false = true

describe("the operation table", () => {
  it("names a cluster's failures in the interface's types", () => {
    assert.isTrue(askMayLoseItsHost && listMayFindNoHost && clusterIsAFlotta)
  })

  it("is on every surface under the same names: Promise facade, MCP tools, cluster protocol", () => {
    const promises = fromLayer(fleet())
    const toolNames = new Set(tools.map((tool) => tool.name))
    const rpcs = new Set([
      ...Protocol.AgentEntity.protocol.requests.keys(),
      ...Protocol.HostEntity.protocol.requests.keys()
    ])
    for (const name of Operations.names) {
      assert.isFunction((promises as unknown as Record<string, unknown>)[name], `Promise facade: ${name}`)
      assert.isTrue(rpcs.has(name), `cluster protocol: ${name}`)
      const tool = Operations.operations[name].tool
      // The operations MCP serves through a bounded wait (flotta_ask, flotta_wait) have no tool of their own.
      assert.isTrue(tool === null ? toolNames.has("flotta_wait") : toolNames.has(tool), `MCP: ${name}`)
    }
    assert.strictEqual(rpcs.size, Operations.names.length)
    return Effect.runPromise(Effect.promise(() => promises.shutdown()))
  })
})

describe("label", () => {
  it.effect("changes a live agent's labels, as an Effect", () =>
    Effect.gen(function*() {
      const flotta = yield* Flotta
      yield* flotta.spawn("alpha", { labels: { team: "core" } })
      const info = yield* flotta.label("alpha", { team: "web", tier: "1" })
      assert.deepStrictEqual(info.labels, { team: "web", tier: "1" })
      assert.deepStrictEqual((yield* flotta.info("alpha")).labels, { team: "web", tier: "1" })
      const missing = yield* Effect.flip(flotta.label("ghost", { team: "web" }))
      assert.strictEqual(missing._tag, "AgentNotFound")
    }).pipe(Effect.provide(fleet())))

  it("changes a live agent's labels, as a Promise", async () => {
    const promises = fromLayer(fleet())
    try {
      await promises.spawn("alpha")
      const info = await promises.label("alpha", { team: "web" })
      assert.deepStrictEqual(info.labels, { team: "web" })
      const error = await promises.label("ghost", { team: "web" }).then(() => null, (e: { _tag: string }) => e)
      assert.strictEqual(error?._tag, "AgentNotFound")
    } finally {
      await promises.shutdown()
    }
  })

  for (const era of ERAS) {
    it.scoped(`changes a live agent's labels over MCP (flotta_label), ${era.era} era`, () =>
      Effect.gen(function*() {
        const client = yield* Effect.flatMap(handler(), (h) => connect(h.fetch, era))
        structured(yield* call(client, "flotta_spawn", { name: "alpha" }))
        const info = structured<{ name: string; labels?: Record<string, string> }>(
          yield* call(client, "flotta_label", { name: "alpha", labels: { team: "web" } })
        )
        assert.strictEqual(info.name, "alpha")
        assert.deepStrictEqual(info.labels, { team: "web" })
        const refused = yield* call(client, "flotta_label", { name: "ghost", labels: {} })
        assert.isTrue(refused.isError)
      }).pipe(Effect.provide(fleet())))
  }
})
