/**
 * One flotta fleet over three hosts, end to end, on each cluster store (one Postgres database, one SQLite file):
 * three `flotta serve --simulate --config FILE` processes join, agents spread over them, any node drives any
 * agent and forks it (the fork starts on its source's host), and a host that dies (kill -9) or pauses (SIGSTOP) has its agents moved, with their memory, to the live
 * hosts; a host that comes back never runs them again. The real claude CLI talks to each node's simulator.
 *
 * The three nodes of a store are shared by its tests, which run in order and build on each other.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import {
  type AgentView,
  childrenOf,
  ClusterNode,
  type ClusterStore,
  killIfAlive,
  type ReportView,
  serveUntilExit,
  ToolFailed
} from "./support/cluster.js"
import { isAlive } from "./support/mcp.js"
import { findPostgresBinaries, type Postgres, startPostgres } from "./support/postgres.js"
import { eventually, waitUntil } from "./support/waiting.js"

const found = findPostgresBinaries()
if ("missing" in found) throw new Error(`test/cluster.test.ts needs Postgres 15: ${found.missing}`)

// Long enough that a live node on a machine shared with other test files never misses its renewal; short
// enough to keep the failovers quick.
const LEASE_MS = 6000
/** How long a dead or paused host's agents may take to answer again elsewhere. */
const FAILOVER_BOUND_MS = 60_000

/** What a call gives back, or the error's tag: for polling through a failover, when calls fail for a while. */
const attempt = async <A>(call: () => Promise<A>): Promise<A | { readonly failed: string }> => {
  try {
    return await call()
  } catch (error) {
    return { failed: error instanceof ToolFailed ? error.tag : String(error) }
  }
}

const succeeded = <A>(value: A | { readonly failed: string }): value is A =>
  !(typeof value === "object" && value !== null && "failed" in value)

const hostsOf = (agents: ReadonlyArray<AgentView>) => Object.fromEntries(agents.map((a) => [a.name, a.host]))

const countBy = (hosts: ReadonlyArray<string | undefined>) => {
  const counts: Record<string, number> = {}
  for (const host of hosts) counts[String(host)] = (counts[String(host)] ?? 0) + 1
  return counts
}

const reasonOf = (entry: ReportView) => (entry.data as { reason?: unknown } | null)?.reason

const clusterSuite = (kind: "postgres" | "sqlite") =>
  describe.sequential(`one fleet over three hosts, state in ${kind}`, () => {
    let root: string
    let postgres: Postgres | undefined
    let store: ClusterStore
    let a: ClusterNode
    let b: ClusterNode
    let c: ClusterNode
    const nodes = () => [a, b, c]
    /** Agent children seen along the way: whatever still runs is killed after the tests. */
    const agentPids = new Set<number>()

    beforeAll(async () => {
      root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), `flotta-cluster-${kind}-`)))
      if (kind === "postgres") {
        postgres = await startPostgres()
        store = { postgres: await postgres.createDatabase(`flotta_cluster_${process.pid}_${Date.now()}`) }
      } else {
        store = { sqlite: path.join(root, "cluster.db") }
      }
      a = await ClusterNode.create(root, "node-a", store, { label: kind, leaseMs: LEASE_MS })
      b = await ClusterNode.create(root, "node-b", store, { label: kind, leaseMs: LEASE_MS })
      c = await ClusterNode.create(root, "node-c", store, { label: kind, leaseMs: LEASE_MS })
    }, 120_000)

    afterAll(async () => {
      for (const node of nodes()) {
        if (node === undefined) continue
        await node.stop().catch(() => undefined)
        for (const pid of node.pids) killIfAlive(pid)
      }
      for (const pid of agentPids) killIfAlive(pid)
      await postgres?.stop()
      if (root !== undefined) fs.rmSync(root, { recursive: true, force: true })
    }, 120_000)

    /** Remembers the pids of the agents' children, to end them whatever happens. */
    const seen = (agents: ReadonlyArray<AgentView>) => {
      for (const agent of agents) if (agent.pid !== null) agentPids.add(agent.pid)
      return agents
    }

    it("three nodes join one cluster, all at once", async () => {
      for (const node of nodes()) node.start()
      const lines = await Promise.all(nodes().map((node) => node.joined()))
      const where = kind === "sqlite"
        ? `sqlite ${(store as { sqlite: string }).sqlite}`
        : `postgres 127.0.0.1:${new URL((store as { postgres: string }).postgres).port}/`
      lines.forEach((line, i) => {
        assert.match(line, new RegExp(`^cluster: host ${nodes()[i]!.host} joined \\(\\d hosts? live: `))
        assert.include(line, `state in ${where}`)
      })
    }, 120_000)

    it("spreads agents over the live hosts, places one where asked, and keeps names unique fleet-wide", async () => {
      // One at a time, from each node in turn: each goes to the live host with the fewest agents.
      const spawnedFrom = [a, b, c, a, b, c]
      for (const [i, node] of spawnedFrom.entries()) {
        const info = await node.spawn(`spread-${i + 1}`)
        assert.strictEqual(info.status, "idle")
        assert.isDefined(info.host)
        seen([info])
      }
      const pinned = await c.spawn("pinned", { host: "node-a" })
      assert.strictEqual(pinned.host, "node-a")
      seen([pinned])

      const duplicate = await attempt(() => b.spawn("spread-1"))
      assert.deepStrictEqual(duplicate, { failed: "AgentAlreadyExists" })
      const nowhere = await attempt(() => a.spawn("nowhere", { host: "node-z" }))
      assert.deepStrictEqual(nowhere, { failed: "HostUnavailable" })

      const names = [...Array.from({ length: 6 }, (_, i) => `spread-${i + 1}`), "pinned"].sort()
      const lists = await Promise.all(nodes().map((node) => node.list()))
      for (const [i, agents] of lists.entries()) {
        assert.deepStrictEqual(agents.map((x) => x.name), names, `flotta_list on ${nodes()[i]!.host}`)
        assert.deepStrictEqual(hostsOf(agents), hostsOf(lists[0]!), "every node sees the same placement")
      }
      const spread = countBy(lists[0]!.filter((x) => x.name.startsWith("spread-")).map((x) => x.host))
      assert.deepStrictEqual(spread, { "node-a": 2, "node-b": 2, "node-c": 2 }, JSON.stringify(hostsOf(lists[0]!)))
      seen(lists[0]!)
    }, 120_000)

    it("drives any agent from any node: node C asks an agent that lives on node A", async () => {
      const onA = (await c.list()).filter((x) => x.host === "node-a").map((x) => x.name)
      assert.isAtLeast(onA.length, 2)
      assert.strictEqual(await c.ask(onA[0]!, "ECHO across the cluster"), "ECHO: across the cluster")
      const info = await c.info(onA[0]!)
      assert.strictEqual(info.host, "node-a")
      const started = (await c.reports({ agent: onA[0]!, kinds: ["turn_started"] })).at(-1)
      assert.strictEqual(started?.host, "node-a", "the turn ran where the agent lives")
    }, 120_000)

    it("forks across hosts: node C forks an agent on node A, and the fork lives there with its memory", async () => {
      const source = (await c.list()).find((x) => x.host === "node-a")!.name
      assert.strictEqual(await b.ask(source, "REMEMBER the fork code is 77"), "OK, I will remember that.")
      const fork = await c.call<AgentView & { forkedFrom?: { agent: string } }>("flotta_fork", {
        source,
        name: "forked-across"
      })
      assert.strictEqual(fork.host, "node-a", "a fork starts where its source's conversation is")
      assert.strictEqual(fork.forkedFrom?.agent, source)
      assert.strictEqual(await b.ask("forked-across", "RECALL"), "The fact is: the fork code is 77")
      assert.strictEqual((await b.info("forked-across")).host, "node-a")
      const elsewhere = await attempt(() => a.call("flotta_fork", { source, name: "forked-b", host: "node-b" }))
      assert.deepStrictEqual(elsewhere, { failed: "InvalidSpec" })
      const taken = await attempt(() => b.call("flotta_fork", { source, name: "forked-across" }))
      assert.deepStrictEqual(taken, { failed: "AgentAlreadyExists" })
      // Out of the way of the failover below, which counts node A's agents.
      await c.call("flotta_close", { name: "forked-across" })
    }, 120_000)

    it(
      "kill -9 of node A: its agents answer from B or C with what they were taught; a turn in flight ends HostLost",
      async () => {
        const before = seen(await b.list())
        const onA = before.filter((x) => x.host === "node-a").map((x) => x.name)
        assert.isAtLeast(onA.length, 3)
        const factOf = (name: string) => `the launch code of ${name} is ${4242 + onA.indexOf(name)}`

        // Taught from different nodes; each fact is in the cluster's log (and its conversation mirrored) after.
        const taught = await Promise.all(
          onA.map((name, i) => nodes()[i % 3]!.askTurn(name, `REMEMBER ${factOf(name)}`))
        )
        for (const t of taught) assert.strictEqual(t.text, "OK, I will remember that.")
        await eventually(
          () => b.reports({ kinds: ["result"] }),
          (entries) => taught.every((t, i) => entries.some((e) => e.agent === onA[i] && e.turnId === t.turnId)),
          30_000,
          "the REMEMBER results in the cluster's log"
        )

        // A turn in flight on A, asked from B: once A is dead it ends, for its caller, as HostLost.
        const victim = onA[0]!
        const inFlight = b.raw("flotta_ask", { name: victim, text: "SLOW 120000 never finishes", timeoutSeconds: 50 })
        await eventually(
          () => b.call<{ status: string; current: string | null }>("flotta_status", { name: victim }),
          (s) => s.status === "working" && s.current !== null,
          30_000,
          `${victim} to be working on the slow turn`
        )
        const pidsOnA = before.filter((x) => x.host === "node-a").map((x) => x.pid!)

        const killedAt = Date.now()
        a.signal("SIGKILL")
        await a.exited()

        const lost = await inFlight
        const lostAfter = Date.now() - killedAt
        assert.isTrue(lost.isError, JSON.stringify(lost.structuredContent))
        assert.strictEqual((lost.structuredContent as { error: { _tag: string } }).error._tag, "HostLost")

        const answeredAfter = await Promise.all(onA.map(async (name, i) => {
          const from = i % 2 === 0 ? b : c
          await eventually(
            () => attempt(() => from.ask(name, "RECALL", 30)),
            (answer) => answer === `The fact is: ${factOf(name)}`,
            FAILOVER_BOUND_MS,
            `${name} to answer RECALL from ${from.host}`
          )
          return Date.now() - killedAt
        }))
        const last = Math.max(...answeredAfter)
        console.log(
          `[cluster ${kind}] kill -9 of node-a: the turn in flight ended HostLost after ${lostAfter} ms; ` +
            `${onA.length} agents answered again after ${answeredAfter.join(", ")} ms (last: ${last} ms; lease ` +
            `${LEASE_MS} ms)`
        )
        assert.isBelow(last, FAILOVER_BOUND_MS)

        for (const node of [b, c]) {
          const agents = seen(await node.list())
          for (const name of onA) {
            const host = agents.find((x) => x.name === name)?.host
            assert.oneOf(host, ["node-b", "node-c"], `${name} as ${node.host} lists it`)
            assert.strictEqual((await node.info(name)).host, host)
          }
        }
        // Each host copies its entries into the cluster's log shortly after it writes them.
        const moved = await eventually(
          () => c.reports({ kinds: ["moved"] }),
          (entries) => onA.every((name) => entries.some((e) => e.agent === name)),
          30_000,
          "a moved entry for each of node A's agents"
        )
        for (const name of onA) {
          const entry = moved.find((e) => e.agent === name)
          assert.isDefined(entry, `a moved entry for ${name}`)
          const data = entry!.data as { from: string; to: string; resumed: boolean }
          assert.strictEqual(data.from, "node-a")
          assert.strictEqual(data.to, entry!.host)
          assert.isTrue(data.resumed)
        }
        // The loss itself, once, by whichever of B and C claimed it, naming every agent it moved.
        const losses = await eventually(
          () => c.reports({ kinds: ["host_lost"] }),
          (entries) => entries.some((e) => (e.data as { host: string }).host === "node-a"),
          30_000,
          "a host_lost entry for node A"
        )
        const ofA = losses.filter((e) => (e.data as { host: string }).host === "node-a")
        assert.lengthOf(ofA, 1, JSON.stringify(ofA))
        const loss = ofA[0]!.data as { agents: Array<string>; by: string }
        assert.strictEqual(ofA[0]!.agent, "cluster")
        assert.oneOf(loss.by, ["node-b", "node-c"])
        assert.strictEqual(ofA[0]!.host, loss.by, "written by the host that claimed the loss")
        assert.deepStrictEqual([...loss.agents].sort(), [...onA].sort())
        // A's children lose their parent's pipes and exit: nothing of A's runs them any more.
        for (const pid of pidsOnA) await waitUntil(() => !isAlive(pid), 30_000, `node A's child ${pid} to exit`)
      },
      180_000
    )

    it("node A restarted with the same host name joins, and does not run the agents that moved", async () => {
      const fromA = (await b.reports({ kinds: ["moved"] })).filter((e) =>
        (e.data as { from: string }).from === "node-a"
      ).map((e) => e.agent)
      assert.isAtLeast(fromA.length, 3)
      const restartedAt = new Date().toISOString()

      a.start()
      const line = await a.joined()
      assert.match(line, /^cluster: host node-a joined \(\d hosts live: /)

      // Something new does start there: proof that the restarted node runs, and a process to tell apart.
      const fresh = seen([await b.spawn("fresh-a", { host: "node-a" })])[0]!
      assert.strictEqual(fresh.host, "node-a")

      const listed = seen(await a.list())
      for (const name of fromA) {
        assert.oneOf(listed.find((x) => x.name === name)?.host, ["node-b", "node-c"], `${name} as node A lists it`)
      }
      assert.deepStrictEqual(listed.filter((x) => x.host === "node-a").map((x) => x.name), ["fresh-a"])

      const sinceRestart = (await c.reports()).filter((e) => e.at >= restartedAt && e.host === "node-a")
      assert.deepStrictEqual(
        sinceRestart.filter((e) => fromA.includes(e.agent)),
        [],
        "node A writes nothing for the agents that moved"
      )
      assert.deepStrictEqual(sinceRestart.filter((e) => e.kind === "spawned").map((e) => e.agent), ["fresh-a"])

      const children = childrenOf(a.pid)
      const pidsOfMoved = listed.filter((x) => fromA.includes(x.name)).map((x) => x.pid)
      assert.deepStrictEqual(
        children.filter((p) => /claude/.test(p.command)).map((p) => p.pid),
        [fresh.pid],
        `node A's children: ${JSON.stringify(children)}`
      )
      for (const pid of pidsOfMoved) assert.isTrue(pid !== null && isAlive(pid), "the moved agents run on B and C")
    }, 120_000)

    it(
      "no agent runs on two hosts at once: a paused host's agents move, and once resumed it stops its copies",
      async () => {
        const pausedHost = b
        const onPaused = seen(await c.list()).filter((x) => x.host === pausedHost.host)
        assert.isAtLeast(onPaused.length, 1)
        const pids = new Map(onPaused.map((x) => [x.name, x.pid!]))
        for (const pid of pids.values()) assert.isTrue(isAlive(pid))

        const pausedAt = Date.now()
        pausedHost.signal("SIGSTOP")
        let movedAfter = 0
        try {
          await Promise.all(onPaused.map((x) =>
            eventually(
              () => attempt(() => c.info(x.name)),
              (info) => succeeded(info) && info.host !== pausedHost.host && info.status === "idle",
              FAILOVER_BOUND_MS,
              `${x.name} to move off the paused ${pausedHost.host}`
            )
          ))
          movedAfter = Date.now() - pausedAt
        } finally {
          pausedHost.signal("SIGCONT")
        }
        const movedFromPaused = (entries: ReadonlyArray<ReportView>) =>
          entries.filter((e) => (e.data as { from: string }).from === pausedHost.host)
        const moved = movedFromPaused(
          await eventually(
            () => c.reports({ kinds: ["moved"] }),
            (entries) => onPaused.every((x) => movedFromPaused(entries).some((e) => e.agent === x.name)),
            30_000,
            `a moved entry for each agent of ${pausedHost.host}`
          )
        )

        // Resumed, it finds its agents placed elsewhere and stops its copies.
        const closed = await eventually(
          () => a.reports({ kinds: ["closed"] }),
          (entries) =>
            onPaused.every((x) =>
              entries.some((e) =>
                e.agent === x.name && e.host === pausedHost.host && String(reasonOf(e)).startsWith("moved to ")
              )
            ),
          FAILOVER_BOUND_MS,
          `${pausedHost.host} to close its copies once resumed`
        )
        for (const x of onPaused) {
          const entry = closed.find((e) => e.agent === x.name && e.host === pausedHost.host)!
          const to = moved.find((e) => e.agent === x.name)!.host
          assert.strictEqual(reasonOf(entry), `moved to ${to}`)
        }
        for (const [name, pid] of pids) {
          await waitUntil(() => !isAlive(pid), 30_000, `the paused host's claude child of ${name} (${pid}) to exit`)
        }

        // Asked through the resumed node, a moved agent answers from its new host.
        const probe = onPaused[0]!.name
        const { text, turnId } = await pausedHost.askTurn(probe, "ECHO after the pause")
        assert.strictEqual(text, "ECHO: after the pause")
        const newHost = moved.find((e) => e.agent === probe)!.host
        const turn = await eventually(
          () => c.reports({ agent: probe, kinds: ["turn_started"] }),
          (entries) => entries.some((e) => e.turnId === turnId),
          30_000,
          `the turn_started of ${turnId}`
        )
        assert.strictEqual(turn.find((e) => e.turnId === turnId)?.host, newHost)

        // And at no point after the move did the paused host run a turn for them.
        const everything = await c.reports()
        for (const x of onPaused) {
          const movedAt = moved.find((e) => e.agent === x.name)!.at
          const late = everything.filter((e) =>
            e.agent === x.name && e.host === pausedHost.host && e.at >= movedAt &&
            ["turn_started", "result", "error"].includes(e.kind)
          )
          assert.deepStrictEqual(late, [], `${pausedHost.host} ran a turn of ${x.name} after it moved`)
        }
        const listed = await pausedHost.list()
        for (const x of onPaused) assert.notStrictEqual(listed.find((y) => y.name === x.name)?.host, pausedHost.host)
        console.log(
          `[cluster ${kind}] SIGSTOP of ${pausedHost.host}: its ${onPaused.length} agents answered elsewhere after ` +
            `${movedAfter} ms`
        )
      },
      180_000
    )

    it(
      "refuses a node whose shardsPerGroup differs, and one that listens on 0.0.0.0 without a secret (exit 3)",
      async () => {
        const odd = await ClusterNode.create(root, "node-d", store, {
          label: kind,
          leaseMs: LEASE_MS,
          cluster: { shardsPerGroup: 8 }
        })
        // Reachable from other machines, and no secret: as written, and with an address for the others to use.
        const open = await ClusterNode.create(root, "node-e", store, { label: kind, leaseMs: LEASE_MS })
        open.editCluster((cluster) => ({ ...cluster, listen: { host: "0.0.0.0", port: open.listenPort } }))
        const advertised = await ClusterNode.create(root, "node-f", store, { label: kind, leaseMs: LEASE_MS })
        advertised.editCluster((cluster) => ({
          ...cluster,
          listen: { host: "0.0.0.0", port: advertised.listenPort },
          advertise: { host: "127.0.0.1", port: advertised.listenPort }
        }))
        const refused = await Promise.all(
          [odd, open, advertised].map((node) => serveUntilExit(node.dir, node.configFile))
        )
        const [mismatch, ...unguarded] = refused
        for (const [i, out] of refused.entries()) {
          assert.strictEqual(out.exit, 3, `${["node-d", "node-e", "node-f"][i]}: ${out.stderr}`)
          assert.match(out.stderr, /^flotta: ClusterConfigError: cluster not joined: /m)
          assert.notInclude(out.stderr, "    at ", "no stack trace")
          assert.notMatch(out.stderr, /^cluster: host .* joined/m)
        }
        assert.include(mismatch!.stderr, "cluster.shardsPerGroup is 8 here")
        for (const out of unguarded) assert.include(out.stderr, "cluster.secret")
      },
      120_000
    )
  })

clusterSuite("postgres")
clusterSuite("sqlite")
