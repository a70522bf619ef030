/**
 * One flotta fleet over several hosts, end to end: each node is a real `flotta serve --simulate --config FILE`
 * process with a `cluster` section, and the tests talk to every node over its own MCP port. Plain async Node, for
 * `beforeAll` / `afterAll` and the tests themselves.
 */
import type { CallToolResult } from "@modelcontextprotocol/client"
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { FLOTTA, ROOT } from "./cli.js"
import { freePort } from "./ports.js"
import { waitUntil } from "./waiting.js"

/** The cluster's shared store, as the config file writes it. */
export type ClusterStore = { readonly postgres: string } | { readonly sqlite: string }

/** An agent as `flotta_list` / `flotta_info` / `flotta_spawn` give it (the fields the tests read). */
export interface AgentView {
  readonly name: string
  readonly status: string
  readonly pid: number | null
  readonly sessionId: string
  readonly host?: string
}

/** A report entry as `flotta_reports` gives it. */
export interface ReportView {
  readonly seq: number
  readonly at: string
  readonly agent: string
  readonly kind: string
  readonly turnId?: string
  readonly data: unknown
  readonly host?: string
}

/** A finished `flotta_ask` / `flotta_wait`. */
export interface Answer {
  readonly done: boolean
  readonly turnId: string
  readonly result?: { readonly text: string }
}

/** A tool call that came back with `isError`: its `_tag` and message, as the tool result names them. */
export class ToolFailed extends Error {
  constructor(readonly tool: string, readonly tag: string, readonly detail: string) {
    super(`${tool} failed with ${tag}: ${detail}`)
  }
}

/** The output of one process of a node, collected as it comes. */
export interface Output {
  stdout: string
  stderr: string
  exit: number | null
  signal: NodeJS.Signals | null
  exited: boolean
}

/** Where each node process's output is kept after it exits (git-ignored), for reading a failure. */
export const ARTIFACTS = path.join(ROOT, "test-artifacts", "cluster")

interface Running {
  readonly child: ChildProcess
  readonly out: Output
  client: Client | undefined
}

/** A node's config file: its MCP port, and the cluster section (plus whatever `cluster` fields a test adds). */
export const nodeConfig = (options: {
  readonly host: string
  readonly mcpPort: number
  readonly listenPort: number
  readonly store: ClusterStore
  readonly leaseMs?: number
  readonly cluster?: Record<string, unknown>
}) => ({
  mcp: { port: options.mcpPort },
  cluster: {
    store: options.store,
    host: options.host,
    listen: { host: "127.0.0.1", port: options.listenPort },
    leaseMs: options.leaseMs ?? 3000,
    ...options.cluster
  }
})

/** The environment of a node: the test's, without a cluster secret from outside (the tests decide it). */
const nodeEnv = () => {
  const env: Record<string, string | undefined> = { ...process.env }
  delete env.FLOTTA_CLUSTER_SECRET
  return env
}

/**
 * One host of the cluster: a project directory with its config file, and the serve process running it now (a
 * restart runs the same config again, so the same host name). Every pid it ever had is kept, for cleaning up.
 */
export class ClusterNode {
  private running: Running | undefined
  /** Every serve process this node started, and every agent child seen on it: afterAll ends whichever still run. */
  readonly pids = new Set<number>()

  private starts = 0

  private constructor(
    readonly host: string,
    readonly dir: string,
    readonly configFile: string,
    readonly mcpPort: number,
    readonly listenPort: number,
    /** Its processes' output goes to `<logPrefix>-<n>.log` under ARTIFACTS once each exits. */
    readonly logPrefix: string
  ) {}

  /**
   * Writes the node's project directory and config (fresh ports), and starts nothing yet. `label` tells the
   * logs of one suite's nodes from another's.
   */
  static async create(
    root: string,
    host: string,
    store: ClusterStore,
    options: { readonly label?: string; readonly leaseMs?: number; readonly cluster?: Record<string, unknown> } = {}
  ) {
    const { cluster = {}, label = "cluster", leaseMs } = options
    const dir = path.join(root, host)
    fs.mkdirSync(dir, { recursive: true })
    const mcpPort = await freePort()
    let listenPort = await freePort()
    while (listenPort === mcpPort) listenPort = await freePort()
    const configFile = path.join(dir, "flotta.json")
    fs.writeFileSync(
      configFile,
      JSON.stringify(
        nodeConfig({ host, mcpPort, listenPort, store, cluster, ...(leaseMs === undefined ? {} : { leaseMs }) }),
        null,
        2
      )
    )
    return new ClusterNode(host, dir, configFile, mcpPort, listenPort, `${label}-${host}`)
  }

  /** Rewrites the config file's `cluster` section (the next start reads it). */
  editCluster(edit: (cluster: Record<string, unknown>) => Record<string, unknown>) {
    const config = JSON.parse(fs.readFileSync(this.configFile, "utf8")) as { cluster: Record<string, unknown> }
    fs.writeFileSync(this.configFile, JSON.stringify({ ...config, cluster: edit(config.cluster) }, null, 2))
  }

  /** The current process's output (the last one's once it has exited). */
  get out(): Output {
    if (this.running === undefined) throw new Error(`node ${this.host} was never started`)
    return this.running.out
  }

  get pid(): number {
    const pid = this.running?.child.pid
    if (pid === undefined) throw new Error(`node ${this.host} has no process`)
    return pid
  }

  /** Starts `flotta serve --simulate --config FILE` in the node's directory (a new process on a restart). */
  start() {
    if (this.running !== undefined && !this.running.out.exited) throw new Error(`node ${this.host} is running`)
    const child = spawn(process.execPath, [FLOTTA, "serve", "--simulate", "--config", this.configFile], {
      cwd: this.dir,
      env: nodeEnv(),
      stdio: ["ignore", "pipe", "pipe"]
    })
    const out: Output = { stdout: "", stderr: "", exit: null, signal: null, exited: false }
    child.stdout.on("data", (d) => (out.stdout += d))
    child.stderr.on("data", (d) => (out.stderr += d))
    const log = path.join(ARTIFACTS, `${this.logPrefix}-${++this.starts}.log`)
    child.on("exit", (code, signal) => {
      out.exit = code
      out.signal = signal
      out.exited = true
      fs.mkdirSync(ARTIFACTS, { recursive: true })
      fs.writeFileSync(log, `${out.stderr}\n--- stdout ---\n${out.stdout}\n--- exit ${code ?? signal} ---\n`)
    })
    if (child.pid !== undefined) this.pids.add(child.pid)
    this.running = { child, out, client: undefined }
    return this
  }

  /** The line serve prints once this process has joined the cluster. */
  joinedLine(): string | undefined {
    return this.out.stderr.split("\n").find((line) => line.startsWith(`cluster: host ${this.host} joined`))
  }

  /** Waits until this process has joined (fails at once, with its output, if it exits instead). */
  async joined(ms = 90_000) {
    await waitUntil(() => this.joinedLine() !== undefined || this.out.exited, ms, `host ${this.host} to join`)
    if (this.joinedLine() === undefined) {
      throw new Error(
        `host ${this.host} exited (${this.out.exit ?? this.out.signal}) before joining:\n${this.out.stderr}`
      )
    }
    return this.joinedLine()!
  }

  /** Sends a signal to the current process (SIGKILL, SIGSTOP, SIGCONT). */
  signal(signal: NodeJS.Signals) {
    const running = this.running
    if (running === undefined || running.out.exited) throw new Error(`node ${this.host} is not running`)
    running.child.kill(signal)
    if (signal === "SIGKILL") this.dropClient()
  }

  /** Waits until the current process has exited. */
  async exited(ms = 20_000) {
    await waitUntil(() => this.out.exited, ms, `the serve of ${this.host} to exit`)
  }

  private dropClient() {
    const running = this.running
    if (running?.client === undefined) return
    const client = running.client
    running.client = undefined
    void client.close().catch(() => undefined)
  }

  private async client(): Promise<Client> {
    const running = this.running
    if (running === undefined || running.out.exited) throw new Error(`node ${this.host} is not running`)
    if (running.client === undefined) {
      const client = new Client({ name: `cluster-e2e-${this.host}`, version: "0.0.0" })
      await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${this.mcpPort}/mcp`)))
      running.client = client
    }
    return running.client
  }

  /** A tool call as the SDK returns it (an error is a result with `isError`). */
  async raw(tool: string, args: Record<string, unknown> = {}): Promise<CallToolResult> {
    const client = await this.client()
    return await client.callTool({ name: tool, arguments: args }, { timeout: 90_000 }) as CallToolResult
  }

  /** A tool call's structured result; a tool error throws `ToolFailed` naming the error's `_tag`. */
  async call<A>(tool: string, args: Record<string, unknown> = {}): Promise<A> {
    const result = await this.raw(tool, args)
    if (result.isError === true) {
      const error = (result.structuredContent as { error?: { _tag?: string; message?: string } } | undefined)?.error
      const text = result.content.map((c) => (c.type === "text" ? c.text : "")).join("")
      throw new ToolFailed(tool, error?._tag ?? "unknown", error?.message ?? text)
    }
    return result.structuredContent as A
  }

  /** The whole fleet as this node lists it. */
  async list(): Promise<ReadonlyArray<AgentView>> {
    const { agents } = await this.call<{ agents: ReadonlyArray<AgentView> }>("flotta_list")
    for (const agent of agents) if (agent.pid !== null && agent.host === this.host) this.pids.add(agent.pid)
    return agents
  }

  async info(name: string): Promise<AgentView> {
    return await this.call<AgentView>("flotta_info", { name })
  }

  async spawn(name: string, options: Record<string, unknown> = {}): Promise<AgentView> {
    return await this.call<AgentView>("flotta_spawn", { name, ...options })
  }

  /** Asks and waits for the reply (at most `timeoutSeconds`, 50 by default): the turn and the reply's text. */
  async askTurn(name: string, text: string, timeoutSeconds = 50): Promise<{ turnId: string; text: string }> {
    const answer = await this.call<Answer>("flotta_ask", { name, text, timeoutSeconds })
    if (!answer.done || answer.result === undefined) {
      throw new Error(`ask ${name} "${text}" on ${this.host}: not done after ${timeoutSeconds} s`)
    }
    return { turnId: answer.turnId, text: answer.result.text }
  }

  /** Asks and waits for the reply; the reply's text. */
  async ask(name: string, text: string, timeoutSeconds = 50): Promise<string> {
    return (await this.askTurn(name, text, timeoutSeconds)).text
  }

  /** Every entry of the fleet-wide report log (optionally one agent's, some kinds), paged through by cursor. */
  async reports(filter: { readonly agent?: string; readonly kinds?: ReadonlyArray<string> } = {}) {
    const entries: Array<ReportView> = []
    let cursor = 0
    while (true) {
      const page = await this.call<{ entries: ReadonlyArray<ReportView>; next: number }>("flotta_reports", {
        ...filter,
        cursor,
        limit: 1000
      })
      entries.push(...page.entries)
      if (page.entries.length < 1000 || page.next <= cursor) return entries
      cursor = page.next
    }
  }

  /** Ends the current process: SIGCONT (it may be paused), SIGTERM, and SIGKILL if it is not gone in 10 s. */
  async stop() {
    const running = this.running
    if (running === undefined || running.out.exited) return
    this.dropClient()
    running.child.kill("SIGCONT")
    running.child.kill("SIGTERM")
    try {
      await waitUntil(() => running.out.exited, 10_000, `the serve of ${this.host} to stop`)
    } catch {
      running.child.kill("SIGKILL")
      await waitUntil(() => running.out.exited, 10_000, `the serve of ${this.host} to die`)
    }
  }
}

/** The processes whose parent is `pid` (`ps --ppid`): the agents' claude children of a serve. */
export const childrenOf = (pid: number): ReadonlyArray<{ readonly pid: number; readonly command: string }> => {
  const ps = spawnSync("ps", ["--ppid", String(pid), "-o", "pid=,args="], { encoding: "utf8" })
  return ps.stdout.split("\n").map((line) => line.trim()).filter((line) => line.length > 0).map((line) => {
    const [pid, ...command] = line.split(/\s+/)
    return { pid: Number(pid), command: command.join(" ") }
  })
}

/** Kills a process this test started (directly or as an agent of its nodes) if it still runs. */
export const killIfAlive = (pid: number) => {
  try {
    process.kill(pid, "SIGKILL")
  } catch {
    // already gone
  }
}

/** Runs `flotta serve --simulate --config FILE` to its end (for configs that must be refused), at most `ms`. */
export const serveUntilExit = (dir: string, configFile: string, ms = 90_000) =>
  new Promise<Output>((resolve, reject) => {
    const child = spawn(process.execPath, [FLOTTA, "serve", "--simulate", "--config", configFile], {
      cwd: dir,
      env: nodeEnv(),
      stdio: ["ignore", "pipe", "pipe"]
    })
    const out: Output = { stdout: "", stderr: "", exit: null, signal: null, exited: false }
    child.stdout.on("data", (d) => (out.stdout += d))
    child.stderr.on("data", (d) => (out.stderr += d))
    const timer = setTimeout(() => child.kill("SIGKILL"), ms)
    child.on("error", reject)
    child.on("close", (code, signal) => {
      clearTimeout(timer)
      out.exit = code
      out.signal = signal
      out.exited = true
      resolve(out)
    })
  })
