/**
 * The nodes of bench/cluster.ts: each a `flotta serve` process (the compiled CLI), started, stopped or killed,
 * every process it leaves behind tracked and killed at the end; and the MCP calls the benchmark drives them with.
 */
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { freePort } from "../../test/support/ports.js"
import { processTree, survivors } from "../lib.js"
import { EXPECTED, FLOTTA, LEASE_MS, sleep, STARTS, type Tally, tally, TEXT } from "./cluster-settings.js"

// ------------------------------------------------------------------------------------------------ nodes

/** Every process this benchmark started, and every descendant seen: all of them are killed at the end. */
export const started = new Set<number>()

export const killAll = () => {
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
export const track = (node: Node) => {
  if (node.child.pid === undefined) return
  for (const pid of processTree(node.child.pid)) started.add(pid)
}

export interface Node {
  readonly name: string
  readonly child: ChildProcess
  readonly url: string
  readonly out: { stderr: string; exited: boolean }
  /** Its whole stderr. */
  readonly log: string
  client?: Client
}

export interface ClusterSection {
  readonly store: { readonly sqlite: string } | { readonly postgres: string }
}

/** The child environment of a node: no FLOTTA_* override from the caller, and a CLI state dir of its own. */
export const nodeEnv = (dir: string) => {
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !key.startsWith("FLOTTA_")) env[key] = value
  }
  return { ...env, CLAUDE_CONFIG_DIR: path.join(dir, "claude") }
}

/** Starts `flotta serve` for one node (`cluster` undefined: a plain one) and resolves once it says it is up. */
export const startNode = async (
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
export const stopNode = async (node: Node) => {
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
export const killNode = async (node: Node) => {
  track(node)
  node.child.kill("SIGKILL")
  while (!node.out.exited) await sleep(5)
}

// ------------------------------------------------------------------------------------------------ MCP

export const connect = async (url: string) => {
  const client = new Client({ name: "flotta-bench", version: "0.0.0" })
  await client.connect(new StreamableHTTPClientTransport(new URL(url)))
  await client.listTools()
  return client
}

/** A tool's structured result; a tool error (isError) becomes an exception with its text. */
/** Tools that change nothing: a call of one that the connection dropped is made again. */
export const READ_ONLY = new Set(["flotta_list", "flotta_reports"])

/** Calls whose HTTP request failed (the connection dropped), by tool: reported in the notes. */
export const transportFailures: Tally = new Map()

/** A tool's structured result; a tool error (isError) becomes an exception with its text. */
export const call = async <A>(
  node: Node,
  name: string,
  args: Record<string, unknown>,
  timeout = 120_000
): Promise<A> => {
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

export interface AgentInfo {
  readonly name: string
  readonly host?: string
  readonly status: string
}
export interface Asked {
  readonly done: boolean
  readonly result?: { readonly text?: string }
  readonly message: string
}
export interface ReportEntry {
  readonly kind: string
  readonly host?: string
  readonly data: unknown
}
export interface Broadcast {
  readonly agents: ReadonlyArray<{
    readonly name: string
    readonly ok: boolean
    readonly done: boolean
    readonly text?: string
    readonly error?: { readonly _tag?: string; readonly message?: string }
  }>
}

export const list = async (node: Node) =>
  (await call<{ readonly agents: ReadonlyArray<AgentInfo> }>(node, "flotta_list", {})).agents

/** One `flotta_ask`; its wall time in ms, from the client. */
export const ask = async (node: Node, name: string) => {
  const t0 = performance.now()
  const answer = await call<Asked>(node, "flotta_ask", { name, text: TEXT })
  const ms = performance.now() - t0
  if (!answer.done || answer.result?.text !== EXPECTED) {
    throw new Error(`flotta_ask on ${node.name}: not the expected reply: ${answer.message}`)
  }
  return ms
}

/** Spawns on `host` from `node`, retrying while the host is not yet seen live there (it just joined). */
export const spawnOn = async (node: Node, name: string, host: string | undefined, cwd: string) => {
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
