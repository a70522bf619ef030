/**
 * One fleet over several hosts (@flotta/cluster), measured end to end: every node is a real `flotta serve`
 * process (the compiled CLI) with a `cluster` section, all on one cluster store, each running the fake CLI
 * (packages/core/test/fixtures/fake-claude.mjs) as its `claudePath`. Everything is driven over MCP with the
 * official SDK client, as a user's orchestrator would.
 *   1. `flotta_ask` latency to an agent from the node it lives on (local) and from another node (remote).
 *   2. 300 agents spawned round-robin from the 3 nodes (each on itself), and one `flotta_broadcast` from one node
 *      that reaches all of them; baseline: the same calls to ONE plain `flotta serve` (no cluster section).
 *   3. `kill -9` of one node: the time until the last of its agents, moved to the others, answers an ask.
 * SQLite cluster store; with Postgres binaries on the machine, again on a Postgres cluster store (fewer agents).
 * Failures are counted and reported, not fatal: a benchmark of a cluster under load has to say what broke.
 *   npx tsx bench/cluster.ts     (BENCH_CLUSTER_ASKS=200, BENCH_CLUSTER_AGENTS=300, BENCH_CLUSTER_LEASE_MS=3000,
 *                                 BENCH_CLUSTER_PG_AGENTS=60, BENCH_CLUSTER_POSTGRES=0 skips Postgres,
 *                                 BENCH_CLUSTER_KEEP=1 keeps the temp dir with every node's log)
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { findPostgresBinaries, type Postgres, startPostgres } from "../test/support/postgres.js"
import { FAKE, isMain, main, type Row, row } from "./lib.js"
import { askLatency, clusterRun, fleetRound } from "./support/cluster-measures.js"
import { call, killAll, type Node, spawnOn, startNode, stopNode, transportFailures } from "./support/cluster-nodes.js"
import {
  clusterNotes,
  failoverRows,
  fleetRows,
  fmtLatency,
  latencyRows,
  quiet,
  stopped
} from "./support/cluster-report.js"
import {
  AGENTS,
  ASKS,
  fmtTally,
  IN_FLIGHT,
  KEEP,
  LEASE_MS,
  PG_AGENTS,
  POSTGRES,
  say,
  STARTS,
  total
} from "./support/cluster-settings.js"

export const run = () =>
  main("cluster", `One fleet over 3 hosts (@flotta/cluster, ${AGENTS} fake-CLI agents)`, async () => {
    const notes: Array<string> = []
    const rows: Array<Row> = []
    const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "flotta-bench-cluster-")))
    const cwd = path.join(root, "work")
    fs.mkdirSync(cwd)
    // The fake CLI as an executable, as `claudePath` wants one.
    const claude = path.join(root, "fake-claude")
    fs.writeFileSync(claude, `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(FAKE)} "$@"\n`)
    fs.chmodSync(claude, 0o755)
    const nodes: Array<Node> = []
    let postgres: Postgres | undefined
    const leftovers: Array<string> = []
    const stop = async (node: Node) => {
      const left = await stopNode(node)
      if (left > 0) leftovers.push(`${node.name}: ${left} child process(es) outlived its SIGTERM stop`)
      nodes.splice(nodes.indexOf(node), 1)
    }
    try {
      // --- baseline: one plain `flotta serve` (no cluster section)
      say("plain node: start, asks")
      const plain = await startNode(root, claude, "plain", undefined)
      nodes.push(plain)
      await spawnOn(plain, "probe", undefined, cwd)
      const plainAsk = await askLatency(plain, undefined, "probe")
      await call(plain, "flotta_close", { name: "probe" })
      say(`plain node: spawn ${AGENTS}, broadcast`)
      const single = await fleetRound([plain], AGENTS, cwd, false)
      say("plain node: stop")
      await stop(plain)
      await quiet()

      // --- SQLite: three nodes on one cluster store
      const sqlite = await clusterRun(
        "SQLite",
        root,
        claude,
        { sqlite: path.join(root, "cluster.db") },
        AGENTS,
        cwd,
        nodes,
        stop
      ).catch(stopped(notes, "SQLite"))
      // After a run that stopped half-way, its nodes must not run beside the next part.
      for (const node of [...nodes]) await stop(node)
      await quiet()
      rows.push(row("plain serve: ask (median, p90)", fmtLatency(plainAsk.local)))
      if (sqlite !== undefined) {
        rows.push(
          ...latencyRows("SQLite", sqlite.ask),
          ...fleetRows("SQLite", sqlite.fleet, AGENTS, single),
          ...failoverRows("SQLite", sqlite.failover)
        )
        notes.push(...clusterNotes("SQLite", sqlite, AGENTS))
      }
      if (single.answered !== AGENTS || total(single.spawnFailures) > 0 || total(plainAsk.failures) > 0) {
        notes.push(
          `MISS (plain node): ${total(single.spawnFailures)} spawns failed, ${single.answered} of ${AGENTS} ` +
            `answered the broadcast, ${total(plainAsk.failures)} asks failed ` +
            `(${fmtTally(new Map([...single.spawnFailures, ...single.broadcastFailures, ...plainAsk.failures]))}).`
        )
      }

      // --- Postgres: the same on a Postgres cluster store, a smaller fleet
      const found = findPostgresBinaries()
      if (!POSTGRES) notes.push("Postgres part skipped (BENCH_CLUSTER_POSTGRES=0).")
      else if ("missing" in found) notes.push(`Postgres part skipped: ${found.missing}.`)
      else {
        say("Postgres: start the server")
        postgres = await startPostgres()
        const url = await postgres.createDatabase("flotta_cluster")
        const pg = await clusterRun(
          "Postgres",
          path.join(root, "pg"),
          claude,
          { postgres: url },
          PG_AGENTS,
          cwd,
          nodes,
          stop
        ).catch(stopped(notes, "Postgres"))
        if (pg !== undefined) {
          rows.push(
            ...latencyRows("Postgres", pg.ask),
            ...fleetRows("Postgres", pg.fleet, PG_AGENTS, undefined),
            ...failoverRows("Postgres", pg.failover)
          )
          notes.push(...clusterNotes("Postgres", pg, PG_AGENTS))
        }
      }
      notes.push(...leftovers.map((l) => `MISS: ${l}.`))
      if (total(transportFailures) > 0) {
        notes.push(
          `MCP calls whose connection failed (read-only ones were made again): ${fmtTally(transportFailures)}.`
        )
      }
      notes.push(
        "All nodes, the fake children and the benchmark share one machine: the figures include their contention " +
          `(${os.cpus().length} CPUs here), and other work on the machine shows in the load averages above. A ` +
          "remote ask crosses two runners over loopback sockets; on separate machines add the network round trip."
      )
      return {
        method: "Every node is a `flotta serve` process (the compiled CLI) with a `cluster` section (3 nodes, " +
          `leaseMs ${LEASE_MS}, maxConcurrentStarts ${STARTS}, loopback runners) on one cluster store; the agents ` +
          "are the fake CLI (`claudePath`). All driven over MCP (Streamable HTTP, the SDK client). Ask: " +
          `${ASKS} \`flotta_ask\` of one agent on node-a from node-a (local, the baseline) and from node-b ` +
          "(remote), interleaved, after a warm-up; medians. Fleet: " +
          `${AGENTS} \`flotta_spawn\` (Postgres: ${PG_AGENTS}), ${IN_FLIGHT} in flight, round-robin over the ` +
          "nodes, each node spawning on itself (`host` = its own), then one `flotta_broadcast` from node-a; " +
          "baseline: the same calls to one plain `flotta serve` (no cluster section; its engine state in memory, " +
          "as a cluster node's is), in the same run. Failover: SIGKILL of node-c, then each of its agents is " +
          "asked from node-a until it answers; timed from the kill, beside the lease (the floor of that figure).",
        rows,
        notes
      }
    } finally {
      for (const node of [...nodes]) await stopNode(node).catch(() => undefined)
      await postgres?.stop()
      killAll()
      if (KEEP) console.log(`kept ${root} (each node's log is <node>/stderr.log)`)
      else fs.rmSync(root, { recursive: true, force: true })
    }
  })

if (isMain(import.meta.url)) void run()
