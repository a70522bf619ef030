/**
 * What bench/cluster.ts measures on a set of nodes: ask latency (local and remote), a fleet spawned over them
 * and one broadcast, and a failover after kill -9; `clusterRun` does all three on three nodes of one store.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import { limiter, sortedCopy } from "../lib.js"
import {
  type AgentInfo,
  ask,
  type Broadcast,
  call,
  type ClusterSection,
  killNode,
  list,
  type Node,
  type ReportEntry,
  spawnOn,
  startNode
} from "./cluster-nodes.js"
import {
  ASKS,
  EXPECTED,
  HOSTS,
  IN_FLIGHT,
  LEASE_MS,
  say,
  sleep,
  type Tally,
  tally,
  TEXT,
  total,
  WARMUP
} from "./cluster-settings.js"

// ------------------------------------------------------------------------------------------------ measurements

export interface Latency {
  readonly local: ReadonlyArray<number>
  readonly remote: ReadonlyArray<number>
  readonly failures: Tally
}

/**
 * ASKS asks of one agent on `home`, alternately from `home` and from `away` (which goes first alternates too);
 * `away` undefined: a plain node, asked from itself only. A pair with a failed ask is left out and counted.
 */
export const askLatency = async (home: Node, away: Node | undefined, name: string): Promise<Latency> => {
  const local: Array<number> = []
  const remote: Array<number> = []
  const failures: Tally = new Map()
  const pair = async (i: number) => {
    if (away === undefined) return [await ask(home, name), Number.NaN] as const
    if (i % 2 === 0) {
      const l = await ask(home, name)
      return [l, await ask(away, name)] as const
    }
    const r = await ask(away, name)
    return [await ask(home, name), r] as const
  }
  for (let i = 0; i < WARMUP + ASKS && total(failures) < ASKS; i++) {
    try {
      const [l, r] = await pair(i)
      if (i < WARMUP) continue
      local.push(l)
      remote.push(r)
    } catch (error) {
      tally(failures, error)
      await sleep(100)
    }
  }
  return { local, remote, failures }
}

export interface Fleet {
  /** From the first spawn call until the last one returned. */
  readonly spawnMs: number
  readonly spawnFailures: Tally
  /** Live agents afterwards, per host. */
  readonly hosts: ReadonlyMap<string, number>
  readonly live: number
  readonly broadcastMs: number
  /** Agents the broadcast had an entry for, and those that gave the expected reply. */
  readonly reached: number
  readonly answered: number
  readonly broadcastFailures: Tally
  /** Agents whose spawn succeeded that were not live right after the spawns. */
  readonly gone: number
  /** For the first few not live: their report entries. */
  readonly vanished: ReadonlyArray<string>
}

export const agentNames = (count: number) => Array.from({ length: count }, (_, i) => `agent-${i}`)

export const byHost = (agents: ReadonlyArray<AgentInfo>) => {
  const hosts = new Map<string, number>()
  for (const agent of agents) hosts.set(agent.host ?? "-", (hosts.get(agent.host ?? "-") ?? 0) + 1)
  return hosts
}

/**
 * Spawns `count` agents, IN_FLIGHT calls at a time, agent i from `spawners[i % n]` on that node itself (its
 * `host`; none for a plain node), then one broadcast from the first spawner.
 */
export const fleetRound = async (
  spawners: ReadonlyArray<Node>,
  count: number,
  cwd: string,
  cluster: boolean
): Promise<Fleet> => {
  const limit = limiter(IN_FLIGHT)
  const spawnFailures: Tally = new Map()
  const spawned: Array<string> = []
  const t0 = performance.now()
  await Promise.all(
    agentNames(count).map((name, i) =>
      limit(async () => {
        const node = spawners[i % spawners.length]!
        await call(node, "flotta_spawn", { name, cwd, ...(cluster ? { host: node.name } : {}) }, 600_000).then(
          () => spawned.push(name),
          (error) => tally(spawnFailures, error)
        )
      })
    )
  )
  const spawnMs = performance.now() - t0
  const first = spawners[0]!
  const live = (await list(first)).filter((a) => a.status !== "closed")
  // Agents whose spawn succeeded but that are not live now: what their report log says happened to them.
  const liveNames = new Set(live.map((a) => a.name))
  const gone = spawned.filter((name) => !liveNames.has(name))
  const vanished: Array<string> = []
  for (const name of gone.slice(0, 5)) {
    const entries = await call<{ readonly entries: ReadonlyArray<ReportEntry> }>(first, "flotta_reports", {
      agent: name,
      kinds: ["spawned", "closed", "moved", "crashed"],
      limit: 20
    }).then((r) => r.entries, () => [])
    const described = entries.map((e) =>
      `${e.kind}${e.host === undefined ? "" : ` on ${e.host}`}` +
      (e.kind === "spawned" ? "" : ` ${JSON.stringify(e.data).slice(0, 80)}`)
    )
    vanished.push(`${name}: ${described.join(", ")}`)
  }
  const t1 = performance.now()
  const broadcast = await call<Broadcast>(first, "flotta_broadcast", { text: TEXT, timeoutSeconds: 50 }, 600_000)
  const broadcastMs = performance.now() - t1
  const broadcastFailures: Tally = new Map()
  for (const a of broadcast.agents) {
    if (a.ok && a.text === EXPECTED) continue
    tally(
      broadcastFailures,
      a.error === undefined
        ? (a.done ? `replied ${JSON.stringify(a.text)}` : "not done within the wait")
        : `${a.error._tag ?? "error"}: ${a.error.message ?? ""}`
    )
  }
  return {
    spawnMs,
    spawnFailures,
    hosts: byHost(live),
    live: live.length,
    broadcastMs,
    reached: broadcast.agents.length,
    answered: broadcast.agents.length - total(broadcastFailures),
    broadcastFailures,
    gone: gone.length,
    vanished
  }
}

export interface Failover {
  readonly moved: number
  readonly answered: number
  /** ms from the kill until each moved agent first answered, ascending. */
  readonly times: ReadonlyArray<number>
  /** How long each agent was given. */
  readonly deadlineMs: number
  /** Live agents per host afterwards. */
  readonly hostsAfter: ReadonlyMap<string, number>
  /** Closed copies still listed afterwards. */
  readonly closedAfter: number
  /** Names live on more than one host afterwards (there must be none). */
  readonly twice: ReadonlyArray<string>
  /** Live agents of the other hosts before the kill that were not live afterwards. */
  readonly lost: number
  /** Moves away from a host that was not killed, in the survivors' logs ("moves from <host>, whose lease lapsed"). */
  readonly spuriousMoves: number
  /** The same, from the nodes' start until the kill. */
  readonly spuriousBeforeKill: number
}

/** Moves away from hosts other than `dead` (any host when undefined) that a node's log reports. */
export const movesAwayFrom = (node: Node, dead: string | undefined) => {
  try {
    const log = fs.readFileSync(node.log, "utf8")
    return [...log.matchAll(/ moves from (\S+), whose lease lapsed/g)].filter((m) => m[1] !== dead).length
  } catch {
    return 0
  }
}

/**
 * Kills `victim` with SIGKILL and asks each of its agents from `from` until it answers (again soon after a
 * failure: HostLost while the lease runs, AgentNotFound while the new host starts it).
 */
export const failover = async (victim: Node, from: Node, survivorsOf: ReadonlyArray<Node>): Promise<Failover> => {
  const before = (await list(from)).filter((a) => a.status !== "closed")
  const names = before.filter((a) => a.host === victim.name).map((a) => a.name)
  const others = before.filter((a) => a.host !== victim.name).map((a) => a.name)
  // Before the kill every host is running: any move is one too many.
  const spuriousBeforeKill = [victim, ...survivorsOf].reduce((n, node) => n + movesAwayFrom(node, undefined), 0)
  const spuriousBefore = survivorsOf.reduce((n, node) => n + movesAwayFrom(node, victim.name), 0)
  const deadlineMs = 10 * LEASE_MS + 60_000
  const t0 = performance.now()
  await killNode(victim)
  const times = await Promise.all(names.map(async (name) => {
    while (performance.now() - t0 < deadlineMs) {
      try {
        await ask(from, name)
        return performance.now() - t0
      } catch {
        await sleep(100)
      }
    }
    return Number.NaN
  }))
  const after = await list(from)
  const live = after.filter((a) => a.status !== "closed")
  const liveNames = new Set(live.map((a) => a.name))
  const seen = new Set<string>()
  const twice = new Set(live.filter((a) => seen.has(a.name) || !seen.add(a.name)).map((a) => a.name))
  const answered = times.filter((t) => Number.isFinite(t))
  return {
    moved: names.length,
    answered: answered.length,
    times: sortedCopy(answered),
    deadlineMs,
    hostsAfter: byHost(live),
    closedAfter: after.length - live.length,
    twice: [...twice],
    lost: others.filter((name) => !liveNames.has(name)).length,
    spuriousMoves: survivorsOf.reduce((n, node) => n + movesAwayFrom(node, victim.name), 0) - spuriousBefore,
    spuriousBeforeKill
  }
}

// ------------------------------------------------------------------------------------------------ a cluster

/**
 * Waits until the first node sees every node live: each spawns an agent on itself (a local spawn), and the
 * first node's `flotta_list`, which asks every host it sees live, must list them all.
 */
export const seeEachOther = async (nodes: ReadonlyArray<Node>, cwd: string) => {
  await Promise.all(nodes.map((node) => spawnOn(node, `live-${node.name}`, node.name, cwd)))
  const end = Date.now() + 60_000
  for (;;) {
    const seen = new Set((await list(nodes[0]!)).map((a) => a.name))
    if (nodes.every((node) => seen.has(`live-${node.name}`))) break
    if (Date.now() > end) throw new Error(`${nodes[0]!.name} does not see every node live after 60 s`)
    await sleep(200)
  }
  await Promise.all(nodes.map((node) => call(node, "flotta_close", { name: `live-${node.name}` })))
}

export interface ClusterRun {
  readonly ask: Latency
  readonly fleet: Fleet
  readonly failover: Failover
  /** Per phase: the 1-minute load average when it started. */
  readonly loads: ReadonlyArray<number>
  /** Nodes that exited while starting (each was started once more). */
  readonly startFailures: ReadonlyArray<string>
}

/** Three nodes on `store`: asks, a fleet of `count`, a broadcast, then kill -9 of node-c. */
export const clusterRun = async (
  label: string,
  root: string,
  claude: string,
  store: ClusterSection["store"],
  count: number,
  cwd: string,
  nodes: Array<Node>,
  stop: (node: Node) => Promise<void>
): Promise<ClusterRun> => {
  const loads: Array<number> = []
  const phase = (text: string) => {
    loads.push(os.loadavg()[0] ?? 0)
    say(`${label} cluster: ${text}`)
  }
  phase("start 3 nodes")
  const startFailures: Array<string> = []
  // A node that fails to start is reported, and started once more: the rest of the run still measures.
  const startOne = (host: string) =>
    startNode(root, claude, host, { store }).catch((error: unknown) => {
      const text = error instanceof Error ? error.message : String(error)
      if (!text.includes("(it exited)")) throw error
      startFailures.push(`${host}: ${text.split("\n").slice(0, 2).join(" ").replace(/\s+/g, " ")}`)
      return startNode(root, claude, host, { store })
    })
  const started = await Promise.all(HOSTS.map(startOne))
  nodes.push(...started)
  const [a, b, c] = started as [Node, Node, Node]
  phase("asks")
  await seeEachOther(started, cwd)
  await spawnOn(a, "probe", a.name, cwd)
  const latency = await askLatency(a, b, "probe")
  await call(a, "flotta_close", { name: "probe" }).catch(() => undefined)
  phase(`spawn ${count}, broadcast`)
  const fleet = await fleetRound(started, count, cwd, true)
  phase("kill -9 node-c")
  const moved = await failover(c, a, [a, b])
  await c.client?.close().catch(() => undefined)
  nodes.splice(nodes.indexOf(c), 1)
  phase("stop")
  for (const node of [a, b]) await stop(node)
  return { ask: latency, fleet, failover: moved, loads, startFailures }
}
