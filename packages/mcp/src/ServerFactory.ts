/**
 * One fresh SDK server per serving unit (an HTTP request of the modern era, a legacy session, a stdio
 * connection), never a singleton: sharing one across clients misroutes responses (GHSA-345p-7cg4-v4c7). The
 * factory is cheap: the tool table and schemas are built once, at module load.
 */
import type { Flotta } from "@flotta/core/Flotta"
import { McpServer as SdkServer } from "@modelcontextprotocol/server"
import type { Runtime } from "effect"
import * as Resources from "./Resources.js"
import * as ToolBridge from "./ToolBridge.js"
import * as Tools from "./Tools.js"

export const SERVER_NAME = "flotta"
export const SERVER_VERSION = "0.1.0"

export const INSTRUCTIONS = "flotta runs a fleet of long-lived claude agents. Start one with flotta_spawn, give " +
  "it work with flotta_prompt (returns a turn id at once) or flotta_ask, and collect replies with flotta_wait: " +
  "each call waits at most 50 s and returns done: false while the work goes on, so call it again. " +
  "flotta_run starts a single-shot task (optionally in a git worktree) and flotta_verify runs checks on a " +
  "branch; both return a name to flotta_wait { name, run: true } for. flotta_list, flotta_status and " +
  "flotta_reports show what the fleet is doing; flotta_interrupt and flotta_close stop work. When the fleet runs " +
  "a scheduler, flotta_schedule_status shows it and flotta_keep_going, flotta_work_today, flotta_work_on, " +
  "flotta_pause, flotta_resume, flotta_stop_for_today, flotta_run_routine and flotta_scan_now steer it; " +
  "flotta_findings lists what its scans found. A tool call under an agent's `ask` permission waits for a human: " +
  "flotta_approvals lists what waits, flotta_decide allows or denies it."

/**
 * Builds a server. Given the HTTP request it will serve, a modern-era `tools/call` (which names its method
 * and tool in the `Mcp-Method` and `Mcp-Name` headers, checked against the body by the SDK) gets only that
 * tool: the instance lives for one request, and registering the other tools would be most of its cost.
 */
export type ServerFactory = (request?: Request) => SdkServer

export const make = (runtime: Runtime.Runtime<Flotta>): ServerFactory => {
  const execute = ToolBridge.execute(runtime)
  return (request) => {
    const server = new SdkServer(
      { name: SERVER_NAME, version: SERVER_VERSION, title: "flotta fleet" },
      { capabilities: { tools: { listChanged: false }, resources: {} }, instructions: INSTRUCTIONS }
    )
    const called = request?.headers.get("mcp-method") === "tools/call"
      ? Tools.byName.get(request.headers.get("mcp-name") ?? "")
      : undefined
    if (called !== undefined) {
      ToolBridge.register(server, execute, [called])
      return server
    }
    ToolBridge.register(server, execute, Tools.tools)
    Resources.register(server, runtime)
    return server
  }
}
