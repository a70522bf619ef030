/**
 * The cluster's remote ask, alone: an ask to an agent on another host, against the same ask from the agent's own
 * host and from one plain `flotta serve`, in the same run. bench/cluster.ts measures this too, among a 300-agent
 * fleet, a broadcast, a failover and a Postgres store; this is the one figure, cheap enough to compare two trees.
 * Each node is a real `flotta serve` (the compiled CLI: run `npm run build` first) running the fake CLI, all driven
 * over MCP with the SDK client, as bench/cluster.ts drives them.
 *   npx tsx bench/cluster-ask.ts     (BENCH_CLUSTER_ASKS=200)
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { FAKE, fmtMs, fmtRatio, isMain, main, type Row, row } from "./lib.js"
import { askLatency, seeEachOther } from "./support/cluster-measures.js"
import { call, killAll, type Node, spawnOn, startNode, stopNode } from "./support/cluster-nodes.js"
import { fmtLatency, p50, quiet } from "./support/cluster-report.js"
import { ASKS, fmtTally, LEASE_MS, say, total, WARMUP } from "./support/cluster-settings.js"

export const run = () =>
  main("cluster-ask", "Cluster remote ask (2 hosts on SQLite, fake CLI)", async () => {
    const notes: Array<string> = []
    const rows: Array<Row> = []
    const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "flotta-bench-cluster-ask-")))
    const cwd = path.join(root, "work")
    fs.mkdirSync(cwd)
    const claude = path.join(root, "fake-claude")
    fs.writeFileSync(claude, `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(FAKE)} "$@"\n`)
    fs.chmodSync(claude, 0o755)
    const nodes: Array<Node> = []
    try {
      say("plain node: start, asks")
      const plain = await startNode(root, claude, "plain", undefined)
      nodes.push(plain)
      await spawnOn(plain, "probe", undefined, cwd)
      const plainAsk = await askLatency(plain, undefined, "probe")
      await stopNode(plain)
      nodes.splice(nodes.indexOf(plain), 1)
      await quiet()

      say("cluster: start 2 nodes, asks")
      const store = { sqlite: path.join(root, "cluster.db") }
      const [a, b] = await Promise.all(["node-a", "node-b"].map((host) => startNode(root, claude, host, { store })))
      nodes.push(a!, b!)
      await seeEachOther([a!, b!], cwd)
      await spawnOn(a!, "probe", a!.name, cwd)
      const latency = await askLatency(a!, b!, "probe")
      await call(a!, "flotta_close", { name: "probe" }).catch(() => undefined)

      const remote = p50(latency.remote)
      rows.push(
        row("plain serve: ask (median, p90)", fmtLatency(plainAsk.local), "", "1.00×"),
        row(
          "cluster: ask, local (median, p90)",
          fmtLatency(latency.local),
          `${fmtMs(p50(plainAsk.local), 2)} plain`,
          fmtRatio(p50(latency.local), p50(plainAsk.local))
        ),
        row(
          "cluster: ask, remote (median, p90)",
          fmtLatency(latency.remote),
          `${fmtMs(p50(latency.local), 2)} local`,
          fmtRatio(remote, p50(latency.local))
        ),
        row(
          "cluster: remote ask over plain (median)",
          fmtMs(remote - p50(plainAsk.local), 2),
          `${fmtMs(p50(plainAsk.local), 2)} plain`,
          fmtRatio(remote, p50(plainAsk.local))
        )
      )
      const failures = new Map([...plainAsk.failures, ...latency.failures])
      if (total(failures) > 0) notes.push(`MISS: ${total(failures)} asks failed (${fmtTally(failures)}).`)
      notes.push(
        "All nodes, the fake children and the benchmark share one machine: the figures include their contention. " +
          "A remote ask crosses two runners over loopback sockets; on separate machines add the network round trip."
      )
      return {
        method:
          `${ASKS} \`flotta_ask\` (after ${WARMUP} warm-up) of one fake-CLI agent: on one plain \`flotta serve\` ` +
          "(no cluster section), then on node-a of a 2-node cluster (SQLite cluster store, leaseMs " +
          `${LEASE_MS}, loopback runners) from node-a (local) and node-b (remote), interleaved, the first alternating. ` +
          "Every node is the compiled CLI driven over MCP with the SDK client; medians and p90.",
        rows,
        notes
      }
    } finally {
      for (const node of [...nodes]) await stopNode(node).catch(() => undefined)
      killAll()
      fs.rmSync(root, { recursive: true, force: true })
    }
  })

if (isMain(import.meta.url)) void run()
