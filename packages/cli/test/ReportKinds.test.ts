/**
 * The fleet's report kinds, every package's: each round-trips through its Schema, no package declares a kind another
 * one does, and `flotta reports` prints an entry of a kind this version does not know as it came.
 */
import { assert, describe, it } from "@effect/vitest"
import * as ClusterEvents from "@flotta/cluster/ClusterEvents"
import * as EngineEvents from "@flotta/core/EngineEvents"
import * as ReportEvent from "@flotta/core/ReportEvent"
import * as SchedulerEvents from "@flotta/scheduler/SchedulerEvents"
import * as WebhooksEvents from "@flotta/webhooks/WebhooksEvents"
import { Arbitrary, FastCheck, JSONSchema, Schema } from "effect"
import * as Views from "../src/Views.js"

const packages = {
  scheduler: SchedulerEvents.kinds,
  webhooks: WebhooksEvents.kinds,
  cluster: ClusterEvents.kinds
}

/**
 * A kind's data as a poster gives it: a key `__proto__` (which fast-check generates for a Record) is not one a
 * plain object keeps when it is copied, and no poster writes one.
 */
const jsonData = <A>(schema: Schema.Schema<A>) =>
  Arbitrary.make(schema).filter((data) => !(JSON.stringify(data) ?? "").includes("\"__proto__\""))

describe("the fleet's report kinds", () => {
  for (const [name, kinds] of Object.entries(packages)) {
    it(`the ${name}'s kinds round-trip through their Schemas`, () => {
      for (const k of kinds as ReadonlyArray<ReportEvent.AnyKind>) {
        const encode = Schema.encodeSync(k.data)
        const decode = Schema.decodeUnknownSync(k.data)
        FastCheck.assert(
          FastCheck.property(jsonData(k.data), (data) => {
            assert.deepStrictEqual(decode(encode(data)), data, k.kind)
          }),
          { numRuns: 25 }
        )
        assert.isObject(JSONSchema.make(k.data), k.kind)
      }
    })
  }

  it("no two packages declare the same kind", () => {
    const names = [...EngineEvents.engine, ...Object.values(packages).flat()].map((k) => k.kind)
    const twice = names.filter((n, i) => names.indexOf(n) !== i)
    assert.deepStrictEqual(twice, [])
  })

  it("flotta reports prints a newer host's entry and a malformed one as they came", () => {
    const at = "2026-01-01T10:00:00.000Z"
    assert.strictEqual(
      Views.formatEntry({ seq: 8, at, agent: "scout", kind: "teleported", data: { to: "mars" } }),
      `     8 ${at} scout teleported {"to":"mars"}`
    )
    assert.strictEqual(
      Views.formatEntry({ seq: 9, at, agent: "scout", kind: "result", turnId: "t2", data: "not a result" }),
      `     9 ${at} scout result t2 "not a result"`
    )
  })
})
