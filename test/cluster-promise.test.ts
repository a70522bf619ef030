/**
 * The Promise facade of a cluster node (`createFleet({ cluster })` from @flotta/cluster): two nodes in this
 * process over the fake CLI script and one SQLite cluster store, each driving the whole fleet.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { createFleet } from "../packages/cluster/src/Cluster.js"
import { FAKE_CLAUDE } from "../packages/core/test/support.js"
import { freePort } from "./support/ports.js"
import { eventually } from "./support/waiting.js"

describe("createFleet({ cluster })", () => {
  it("spawns on another node, asks it, and lists the fleet from either node", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "flotta-cluster-promise-"))
    const node = async (host: string) =>
      createFleet({
        executable: { command: process.execPath, prefixArgs: [FAKE_CLAUDE] },
        cluster: {
          store: { sqlite: path.join(dir, "cluster.db") },
          host,
          listen: { host: "127.0.0.1", port: await freePort() },
          leaseMs: 3000
        }
      })
    const a = await node("node-a")
    const b = await node("node-b")
    try {
      // A node joins at its first call.
      await Promise.all([a.list(), b.list()])
      const info = await eventually(
        () => a.spawn("remote", { host: "node-b" }).catch((e: { _tag: string }) => e),
        (r) => !("_tag" in r) || r._tag !== "HostUnavailable",
        30_000,
        "node-b is live for node-a"
      )
      assert.strictEqual((info as { host?: string }).host, "node-b")
      assert.strictEqual(await a.ask("remote", "hello"), "echo: hello")
      const names = (infos: ReadonlyArray<{ name: string; host?: string }>) => infos.map((i) => `${i.name}@${i.host}`)
      assert.deepStrictEqual(names(await a.list()), ["remote@node-b"])
      assert.deepStrictEqual(names(await b.list()), ["remote@node-b"])
      const taken = await b.spawn("remote").catch((e: { _tag: string }) => e)
      assert.strictEqual((taken as { _tag: string })._tag, "AgentAlreadyExists")
    } finally {
      await a.shutdown()
      await b.shutdown()
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }, 90_000)
})
