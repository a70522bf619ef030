/**
 * One `flotta serve` for a test: the built binary started in a project with its config, waited for until it says
 * it is up ("flotta serve: ..." on stderr), then stopped with SIGTERM (SIGKILL if it hangs). With an MCP client on
 * its port when the test asks for one, closed before the serve stops.
 */
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import * as fs from "node:fs"
import * as path from "node:path"
import { type Ran, runFlotta, startFlotta, stopFlotta } from "./cli.js"
import { runInProcess } from "./inProcess.js"
import { freePort } from "./ports.js"
import { waitUntil } from "./waiting.js"

export interface ServeOptions {
  /** Written to the project's flotta.config.json, with `mcp.port` set to a free port unless it names one. */
  readonly config?: Record<string, unknown>
  /** The serve's arguments after `serve` (`--simulate` unless given). */
  readonly args?: ReadonlyArray<string>
  /** Its stdin: a pipe (the default), or closed. */
  readonly stdin?: "pipe" | "ignore"
  /** How long it may take to say it is up, in ms. */
  readonly timeout?: number
}

export interface Served {
  readonly project: string
  readonly port: number
  /** The MCP endpoint. */
  readonly url: string
  readonly child: ReturnType<typeof startFlotta>["child"]
  readonly out: ReturnType<typeof startFlotta>["out"]
  /** `flotta ...args` in the project, as a user runs it against this serve: the built binary. */
  readonly flotta: (...args: Array<string>) => Promise<Ran>
  /** `flotta ...args` in the project, run in the test's process (for checks of what it prints; see inProcess). */
  readonly inProcess: (...args: Array<string>) => Promise<Ran>
  /** An MCP client connected to the serve (one, made on first use; with the config's `mcp.token`, if any). */
  readonly client: () => Promise<Client>
  /** Stops the serve: SIGTERM, SIGKILL after `grace` ms; gives its exit code (null when it was killed). */
  readonly stop: (grace?: number) => Promise<number | null>
}

/** Starts `flotta serve` in `project` (made when missing), and resolves once it is up. */
export const startServe = async (project: string, options: ServeOptions = {}): Promise<Served> => {
  fs.mkdirSync(project, { recursive: true })
  let port = 0
  let token: string | undefined
  if (options.config !== undefined) {
    const mcp = (options.config["mcp"] ?? {}) as Record<string, unknown>
    port = typeof mcp["port"] === "number" ? mcp["port"] : await freePort()
    token = typeof mcp["token"] === "string" ? mcp["token"] : undefined
    fs.writeFileSync(
      path.join(project, "flotta.config.json"),
      JSON.stringify({ ...options.config, mcp: { ...mcp, port } })
    )
  }
  const { child, out } = startFlotta(["serve", ...(options.args ?? ["--simulate"])], project, options.stdin ?? "pipe")
  let client: Client | undefined
  const stop = async (grace = 20_000) => {
    await client?.close().catch(() => undefined)
    if (!out.exited) child.kill("SIGTERM")
    await waitUntil(() => out.exited, grace, "serve to stop").catch(() => undefined)
    await stopFlotta(child, out)
    return out.exit
  }
  try {
    await waitUntil(
      () => out.stderr.includes("flotta serve:") || out.exited,
      options.timeout ?? 90_000,
      "serve to start"
    )
  } catch (error) {
    await stop()
    throw error
  }
  if (out.exited) throw new Error(`flotta serve in ${project} exited (${out.exit}):\n${out.stderr}`)
  const url = `http://127.0.0.1:${port}/mcp`
  return {
    project,
    port,
    url,
    child,
    out,
    flotta: (...args) => runFlotta(project, args),
    inProcess: (...args) => runInProcess(project, args),
    client: async () => {
      if (client === undefined) {
        const made = new Client({ name: "flotta-test", version: "0.0.0" })
        const headers = token === undefined ? {} : { requestInit: { headers: { Authorization: `Bearer ${token}` } } }
        await made.connect(new StreamableHTTPClientTransport(new URL(url), headers))
        client = made
      }
      return client
    },
    stop
  }
}

/** Runs `use` with a serve up in `project`, and stops it after, whatever `use` did. */
export const withServe = async <A>(
  project: string,
  options: ServeOptions,
  use: (served: Served) => Promise<A>
): Promise<A> => {
  const served = await startServe(project, options)
  try {
    return await use(served)
  } finally {
    await served.stop()
  }
}
