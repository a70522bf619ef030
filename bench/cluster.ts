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
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { freePort } from "../test/support/ports.js"
import { findPostgresBinaries, type Postgres, startPostgres } from "../test/support/postgres.js"
import {
  FAKE,
  fmtMs,
  fmtRatio,
  fmtS,
  idleShare,
  isMain,
  limiter,
  main,
  percentile,
  processTree,
  ROOT,
  type Row,
  row,
  sortedCopy,
  survivors,
  targetRow
} from "./lib.js"

const ASKS = Number(process.env["BENCH_CLUSTER_ASKS"] ?? 200)
const AGENTS = Number(process.env["BENCH_CLUSTER_AGENTS"] ?? 300)
const LEASE_MS = Number(process.env["BENCH_CLUSTER_LEASE_MS"] ?? 3000)
const PG_AGENTS = Number(process.env["BENCH_CLUSTER_PG_AGENTS"] ?? 60)
const POSTGRES = process.env["BENCH_CLUSTER_POSTGRES"] !== "0"
const KEEP = process.env["BENCH_CLUSTER_KEEP"] === "1"
const WARMUP = 20
const STARTS = 8
/** Spawn calls in flight at once: enough to keep every node's admission (STARTS) busy. */
const IN_FLIGHT = Number(process.env["BENCH_CLUSTER_IN_FLIGHT"] ?? 3 * STARTS)
const FLOTTA = path.join(ROOT, "packages/flotta/bin/flotta.js")
const TEXT = "hello"
const EXPECTED = `echo: ${TEXT}`
const HOSTS = ["node-a", "node-b", "node-c"] as const

const began = performance.now()
/** A progress line on stdout: which part runs, since the start. */
const say = (text: string) => console.log(`[cluster ${((performance.now() - began) / 1000).toFixed(1)} s] ${text}`)

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

// ------------------------------------------------------------------------------------------------ nodes

/** Every process this benchmark started, and every descendant seen: all of them are killed at the end. */
const started = new Set<number>()

const killAll = () => {
  for (const { pid } of survivors([...started])) {
    try {
      process.kill(pid, "SIGKILL")
    } catch {
      // gone meanwhile
    }
  }
}
process.on("exit", killAll)

/** Remembers a node's descendants (its agents' children) so that none is left behind, whatever happens. */
const track = (node: Node) => {
  if (node.child.pid === undefined) return
  for (const pid of processTree(node.child.pid)) started.add(pid)
}

interface Node {
  readonly name: string
  readonly child: ChildProcess
  readonly url: string
  readonly out: { stderr: string; exited: boolean }
  /** Its whole stderr. */
  readonly log: string
  client?: Client
}

interface ClusterSection {
  readonly store: { readonly sqlite: string } | { readonly postgres: string }
}

/** The child environment of a node: no FLOTTA_* override from the caller, and a CLI state dir of its own. */
const nodeEnv = (dir: string) => {
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !key.startsWith("FLOTTA_")) env[key] = value
  }
  return { ...env, CLAUDE_CONFIG_DIR: path.join(dir, "claude") }
}

/** Starts `flotta serve` for one node (`cluster` undefined: a plain one) and resolves once it says it is up. */
const startNode = async (
  root: string,
  claudePath: string,
  name: string,
  cluster: ClusterSection | undefined
): Promise<Node> => {
  const dir = path.join(root, name)
  fs.mkdirSync(path.join(dir, "claude"), { recursive: true })
  const port = await freePort()
  const config = {
    claudePath,
    maxConcurrentStarts: STARTS,
    mcp: { port },
    // A cluster node's engine keeps its own state in memory (the cluster's is in the cluster store): so does
    // the plain node, so that the ratios are the cluster's cost, not a store's.
    ...(cluster === undefined
      ? { store: "memory" }
      : {
        cluster: {
          store: cluster.store,
          host: name,
          listen: { host: "127.0.0.1", port: await freePort() },
          leaseMs: LEASE_MS
        }
      })
  }
  const file = path.join(dir, "flotta.config.json")
  fs.writeFileSync(file, JSON.stringify(config, null, 2))
  const child = spawn(process.execPath, [FLOTTA, "serve", "--config", file], {
    cwd: dir,
    env: nodeEnv(dir),
    stdio: ["ignore", "ignore", "pipe"]
  })
  if (child.pid !== undefined) started.add(child.pid)
  const out = { stderr: "", exited: false }
  // The whole log goes to a file (kept with BENCH_CLUSTER_KEEP=1); the start-up lines are read from memory.
  const logFile = path.join(dir, "stderr.log")
  const log = fs.createWriteStream(logFile)
  child.stderr!.setEncoding("utf8")
  child.stderr!.on("data", (chunk: string) => {
    log.write(chunk)
    if (out.stderr.length < 20_000) out.stderr += chunk
  })
  child.once("exit", () => (out.exited = true))
  const ready = cluster === undefined ? /^flotta serve: /m : new RegExp(`^cluster: host ${name} joined`, "m")
  const end = Date.now() + 120_000
  while (!ready.test(out.stderr)) {
    if (out.exited || Date.now() > end) {
      throw new Error(`${name} did not start (${out.exited ? "it exited" : "timed out"}):\n${out.stderr}`)
    }
    await sleep(50)
  }
  const node: Node = { name, child, url: `http://127.0.0.1:${port}/mcp`, out, log: logFile }
  node.client = await connect(node.url)
  return node
}

/** Stops a node as a user would (SIGTERM: it closes its agents), SIGKILL after 60 s; then its leftovers. */
const stopNode = async (node: Node) => {
  await node.client?.close().catch(() => undefined)
  track(node)
  const tree = node.child.pid === undefined ? [] : processTree(node.child.pid)
  if (!node.out.exited) node.child.kill("SIGTERM")
  const end = Date.now() + 60_000
  while (!node.out.exited && Date.now() < end) await sleep(50)
  if (!node.out.exited) node.child.kill("SIGKILL")
  await sleep(200)
  const left = survivors(tree.filter((pid) => pid !== node.child.pid))
  for (const { pid } of left) {
    try {
      process.kill(pid, "SIGKILL")
    } catch {
      // gone meanwhile
    }
  }
  return left.length
}

/** Kills a node with SIGKILL and waits for its exit; its children (whose stdin closes) are tracked for cleanup. */
const killNode = async (node: Node) => {
  track(node)
  node.child.kill("SIGKILL")
  while (!node.out.exited) await sleep(5)
}

// ------------------------------------------------------------------------------------------------ MCP

const connect = async (url: string) => {
  const client = new Client({ name: "flotta-bench", version: "0.0.0" })
  await client.connect(new StreamableHTTPClientTransport(new URL(url)))
  await client.listTools()
  return client
}

/** A tool's structured result; a tool error (isError) becomes an exception with its text. */
/** Tools that change nothing: a call of one that the connection dropped is made again. */
const READ_ONLY = new Set(["flotta_list", "flotta_reports"])

/** Calls whose HTTP request failed (the connection dropped), by tool: reported in the notes. */
const transportFailures: Tally = new Map()

/** A tool's structured result; a tool error (isError) becomes an exception with its text. */
const call = async <A>(node: Node, name: string, args: Record<string, unknown>, timeout = 120_000): Promise<A> => {
  for (let attempt = 1;; attempt++) {
    let result
    try {
      result = await node.client!.callTool({ name, arguments: args }, { timeout })
    } catch (error) {
      tally(transportFailures, `${name}: ${error instanceof Error ? error.message : String(error)}`)
      if (READ_ONLY.has(name) && attempt < 3) continue
      throw error
    }
    if (result.isError === true) {
      const text = (result.content as ReadonlyArray<{ readonly text?: string }>).map((c) => c.text ?? "").join(" ")
      throw new Error(`${name} on ${node.name}: ${text}`)
    }
    return result.structuredContent as A
  }
}

interface AgentInfo {
  readonly name: string
  readonly host?: string
  readonly status: string
}
interface Asked {
  readonly done: boolean
  readonly result?: { readonly text?: string }
  readonly message: string
}
interface ReportEntry {
  readonly kind: string
  readonly host?: string
  readonly data: unknown
}
interface Broadcast {
  readonly agents: ReadonlyArray<{
    readonly name: string
    readonly ok: boolean
    readonly done: boolean
    readonly text?: string
    readonly error?: { readonly _tag?: string; readonly message?: string }
  }>
}

const list = async (node: Node) =>
  (await call<{ readonly agents: ReadonlyArray<AgentInfo> }>(node, "flotta_list", {})).agents

/** One `flotta_ask`; its wall time in ms, from the client. */
const ask = async (node: Node, name: string) => {
  const t0 = performance.now()
  const answer = await call<Asked>(node, "flotta_ask", { name, text: TEXT })
  const ms = performance.now() - t0
  if (!answer.done || answer.result?.text !== EXPECTED) {
    throw new Error(`flotta_ask on ${node.name}: not the expected reply: ${answer.message}`)
  }
  return ms
}

/** Spawns on `host` from `node`, retrying while the host is not yet seen live there (it just joined). */
const spawnOn = async (node: Node, name: string, host: string | undefined, cwd: string) => {
  const end = Date.now() + 30_000
  for (;;) {
    try {
      return await call<AgentInfo>(node, "flotta_spawn", { name, cwd, ...(host === undefined ? {} : { host }) })
    } catch (error) {
      if (!String(error).includes("HostUnavailable") || Date.now() > end) throw error
      await sleep(200)
    }
  }
}

// ------------------------------------------------------------------------------------------------ failures

/** Failures by what they said (the tool's error, shortened), and how often. */
type Tally = Map<string, number>

const tally = (t: Tally, error: unknown) => {
  const text = (error instanceof Error ? error.message : String(error)).replace(/\s+/g, " ")
  // The agent's name varies; the kind of failure is what counts.
  const what = text
    .replace(/ \(live agents:[^)]*\)?/g, "")
    .replace(/agent-\d+/g, "agent-N")
    .replace(/"probe"|probe/g, "agent-N")
    // The first sentence says what happened; the rest is advice.
    .split(/\. (?=[A-Z])/)[0]!
    .slice(0, 160)
  t.set(what, (t.get(what) ?? 0) + 1)
}

const total = (t: Tally) => [...t.values()].reduce((a, b) => a + b, 0)

const fmtTally = (t: Tally) => [...t.entries()].map(([what, n]) => `${n}× ${what}`).join("; ")

// ------------------------------------------------------------------------------------------------ measurements

interface Latency {
  readonly local: ReadonlyArray<number>
  readonly remote: ReadonlyArray<number>
  readonly failures: Tally
}

/**
 * ASKS asks of one agent on `home`, alternately from `home` and from `away` (which goes first alternates too);
 * `away` undefined: a plain node, asked from itself only. A pair with a failed ask is left out and counted.
 */
const askLatency = async (home: Node, away: Node | undefined, name: string): Promise<Latency> => {
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

interface Fleet {
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

const agentNames = (count: number) => Array.from({ length: count }, (_, i) => `agent-${i}`)

const byHost = (agents: ReadonlyArray<AgentInfo>) => {
  const hosts = new Map<string, number>()
  for (const agent of agents) hosts.set(agent.host ?? "-", (hosts.get(agent.host ?? "-") ?? 0) + 1)
  return hosts
}

/**
 * Spawns `count` agents, IN_FLIGHT calls at a time, agent i from `spawners[i % n]` on that node itself (its
 * `host`; none for a plain node), then one broadcast from the first spawner.
 */
const fleetRound = async (
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

interface Failover {
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
const movesAwayFrom = (node: Node, dead: string | undefined) => {
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
const failover = async (victim: Node, from: Node, survivorsOf: ReadonlyArray<Node>): Promise<Failover> => {
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
const seeEachOther = async (nodes: ReadonlyArray<Node>, cwd: string) => {
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

interface ClusterRun {
  readonly ask: Latency
  readonly fleet: Fleet
  readonly failover: Failover
  /** Per phase: the 1-minute load average when it started. */
  readonly loads: ReadonlyArray<number>
  /** Nodes that exited while starting (each was started once more). */
  readonly startFailures: ReadonlyArray<string>
}

/** Three nodes on `store`: asks, a fleet of `count`, a broadcast, then kill -9 of node-c. */
const clusterRun = async (
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

// ------------------------------------------------------------------------------------------------ the report

const fmtHosts = (hosts: ReadonlyMap<string, number>) =>
  hosts.size === 0 ? "none" : [...hosts.entries()].sort().map(([host, n]) => `${host} ${n}`).join(", ")

const p50 = (xs: ReadonlyArray<number>) => percentile(sortedCopy(xs), 0.5)
const p90 = (xs: ReadonlyArray<number>) => percentile(sortedCopy(xs), 0.9)
const fmtLatency = (xs: ReadonlyArray<number>) =>
  xs.length === 0 ? "none answered" : `${fmtMs(p50(xs), 2)} (p90 ${fmtMs(p90(xs), 2)})`

/** Lets the children of the previous part finish exiting (at most 30 s). */
const quiet = async () => {
  for (let i = 0; i < 30; i++) if ((await idleShare(1000)) > 0.85) return
}

const latencyRows = (label: string, latency: Latency): Array<Row> => [
  row(`${label}: ask, local (median, p90)`, fmtLatency(latency.local), "", "1.00×"),
  row(
    `${label}: ask, remote (median, p90)`,
    fmtLatency(latency.remote),
    `${fmtMs(p50(latency.local), 2)} local`,
    fmtRatio(p50(latency.remote), p50(latency.local))
  )
]

const fleetRows = (label: string, fleet: Fleet, count: number, baseline: Fleet | undefined): Array<Row> => {
  const failed = (f: Fleet) => (total(f.spawnFailures) === 0 ? "" : ` (${total(f.spawnFailures)} failed)`)
  const missed = (f: Fleet) => (f.answered === count ? "" : ` (${f.answered} of ${count} answered)`)
  return [
    targetRow(
      `${label}: spawn ${count} agents over 3 nodes`,
      fmtS(fleet.spawnMs) + failed(fleet),
      baseline === undefined ? "" : `${fmtS(baseline.spawnMs)}${failed(baseline)} on 1 plain node`,
      baseline === undefined ? "" : fmtRatio(fleet.spawnMs, baseline.spawnMs),
      `all ${count} up`,
      total(fleet.spawnFailures) === 0 && fleet.gone === 0
    ),
    targetRow(
      `${label}: broadcast to ${count} agents`,
      fmtS(fleet.broadcastMs) + missed(fleet),
      baseline === undefined ? "" : `${fmtS(baseline.broadcastMs)}${missed(baseline)} on 1 plain node`,
      baseline === undefined ? "" : fmtRatio(fleet.broadcastMs, baseline.broadcastMs),
      `all ${count} answer`,
      fleet.answered === count
    )
  ]
}

const failoverRows = (label: string, f: Failover): Array<Row> => {
  const last = f.times[f.times.length - 1]
  if (f.moved === 0) {
    return [
      targetRow(
        `${label}: kill -9 → last moved agent answers`,
        "no agent lived on node-c at the kill",
        `lease ${fmtS(LEASE_MS)}`,
        "n/a",
        "all answer; no live host's agent moved or lost",
        false
      )
    ]
  }
  return [
    targetRow(
      `${label}: kill -9 → last of ${f.moved} moved agents answers`,
      f.answered === f.moved && last !== undefined
        ? fmtS(last)
        : `${f.answered} of ${f.moved} answered within ${fmtS(f.deadlineMs)}`,
      `lease ${fmtS(LEASE_MS)}`,
      f.answered === f.moved && last !== undefined ? fmtRatio(last, LEASE_MS) : "n/a",
      "all answer; no live host's agent moved or lost",
      f.moved > 0 && f.answered === f.moved && f.spuriousMoves === 0 && f.lost === 0 && f.twice.length === 0
    ),
    row(
      `${label}: kill -9 → first / median moved agent answers`,
      f.times.length === 0 ? "none" : `${fmtS(f.times[0]!)} / ${fmtS(p50(f.times))}`,
      `lease ${fmtS(LEASE_MS)}`,
      f.times.length === 0 ? "n/a" : `${fmtRatio(f.times[0]!, LEASE_MS)} / ${fmtRatio(p50(f.times), LEASE_MS)}`
    )
  ]
}

const clusterNotes = (label: string, r: ClusterRun, count: number): Array<string> => {
  const notes: Array<string> = []
  const f = r.failover
  notes.push(
    `${label}: the ${count} agents, live after the spawns: ${fmtHosts(r.fleet.hosts)}; the broadcast had ` +
      `entries for ${r.fleet.reached} and ${r.fleet.answered} answered. After the kill -9 of node-c ` +
      `(${f.moved} agents): ${f.answered} answered again from node-a; live afterwards: ${fmtHosts(f.hostsAfter)}` +
      `; closed copies still listed: ${f.closedAfter}. Load average at each phase's start: ` +
      `${r.loads.map((l) => l.toFixed(1)).join(", ")}.`
  )
  const misses: Array<string> = []
  if (r.startFailures.length > 0) misses.push(`nodes exited at start: ${r.startFailures.join("; ")}`)
  if (total(r.ask.failures) > 0) misses.push(`asks failed: ${fmtTally(r.ask.failures)}`)
  if (total(r.fleet.spawnFailures) > 0) misses.push(`spawns failed: ${fmtTally(r.fleet.spawnFailures)}`)
  if (r.fleet.gone > 0) {
    misses.push(
      `${r.fleet.gone} agents were spawned (the call succeeded) but not live right after the spawns; their ` +
        `reports: ${r.fleet.vanished.join("; ")}`
    )
  }
  if (r.fleet.answered !== count) {
    misses.push(
      `the broadcast missed ${count - r.fleet.answered}` +
        (total(r.fleet.broadcastFailures) === 0 ? "" : `: ${fmtTally(r.fleet.broadcastFailures)}`)
    )
  }
  if (f.spuriousBeforeKill > 0) {
    misses.push(
      `before the kill, the nodes moved ${f.spuriousBeforeKill} agents away from each other ("whose lease ` +
        "lapsed\", though all three were running)"
    )
  }
  if (f.spuriousMoves > 0) {
    misses.push(
      `after the kill, the survivors moved ${f.spuriousMoves} agents away from each other ("whose lease lapsed", ` +
        "though both were running)"
    )
  }
  if (f.lost > 0) misses.push(`${f.lost} agent(s) of the surviving hosts were not live afterwards`)
  if (f.twice.length > 0) misses.push(`live on two hosts at once afterwards: ${f.twice.join(", ")}`)
  if (misses.length > 0) {
    notes.push(`MISS (${label}): ${misses.map((m) => m.charAt(0).toUpperCase() + m.slice(1)).join(". ")}.`)
  }
  return notes
}

/** A cluster run that threw: the note says where and why; its nodes are stopped in the end (`finally`). */
const stopped = (notes: Array<string>, label: string) => (error: unknown) => {
  const text = error instanceof Error
    ? `${error.message}${error.cause instanceof Error ? `: ${error.cause.message}` : ""}`
    : String(error)
  say(`${label} cluster: stopped: ${text}`)
  notes.push(`MISS (${label}): the run stopped: ${text.replace(/\s+/g, " ").slice(0, 300)}.`)
  return undefined
}

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
