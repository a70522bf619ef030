/**
 * The cluster store on a throwaway Postgres 15 server: nodes that start together all open one fresh database
 * (`create table if not exists` raced in Postgres trips pg_class's unique index; a CI run once lost a node to it).
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { ClusterStore } from "../packages/cluster/src/ClusterStore.js"
import { findPostgresBinaries, type Postgres, startPostgres } from "./support/postgres.js"

const found = findPostgresBinaries()
if ("missing" in found) throw new Error(`test/cluster-store-postgres.test.ts needs Postgres 15: ${found.missing}`)

let server: Postgres
beforeAll(async () => {
  server = await startPostgres()
}, 120_000)
afterAll(() => server?.stop())

describe("the cluster store on Postgres", () => {
  it.scoped("opens for eight nodes at once on a fresh database, each round", () =>
    Effect.gen(function*() {
      for (let round = 1; round <= 5; round++) {
        const url = yield* Effect.promise(() => server.createDatabase(`cluster_race_${round}`))
        const stores = yield* Effect.all(
          Array.from({ length: 8 }, () =>
            Layer.build(ClusterStore.layer({ postgres: url })).pipe(Effect.map((c) => Context.get(c, ClusterStore)))),
          { concurrency: "unbounded" }
        )
        // Every node sees the one schema: what one writes, the others read.
        assert.isTrue(yield* stores[0]!.place(`agent-${round}`, "node-a", "/repo", { cwd: "/repo" }))
        for (const store of stores.slice(1)) {
          assert.isFalse(yield* store.place(`agent-${round}`, "node-b", "/repo", {}))
        }
      }
    }), 120_000)
})
