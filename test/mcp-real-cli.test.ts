/**
 * The fleet over MCP, end to end: the real pinned `claude` binary (offline, against the fake Messages API)
 * driven through the MCP server on a loopback port by the SDK client, in both protocol eras: spawn, prompt,
 * wait (with progress), result, close, and the process gone afterwards.
 */
import { NodeContext } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import type { CallToolResult } from "@modelcontextprotocol/client"
import { Context, Effect, Layer } from "effect"
import * as Flotta from "../packages/core/src/Flotta.js"
import * as McpServer from "../packages/mcp/src/McpServer.js"
import { CLAUDE, isAlive, useOfflineApi } from "./support/realCli.js"

const offline = useOfflineApi("flotta-mcp-real")
const workdir = offline.workdir

/** What these tools return, loosely: every field this test reads. */
interface Output {
  readonly [key: string]: unknown
  readonly status?: string
  readonly pid?: number
  readonly sessionId?: string
  readonly turnId?: string
  readonly done?: boolean
  readonly result?: {
    readonly text: string
    readonly turnId: string
    readonly costUsd: number
    readonly sessionId: string
  }
}

const ERAS = [
  { era: "legacy", mode: { mode: "legacy" } },
  { era: "modern", mode: { mode: { pin: "2026-07-28" } } }
] as const

describe("the fleet over MCP with the real claude CLI", () => {
  it.scopedLive("spawn, prompt, wait, result and close through MCP, in both eras", () =>
    Effect.gen(function*() {
      const server = yield* Layer.build(
        McpServer.layer({ port: 0 }).pipe(
          Layer.provide(Flotta.layer({ claudePath: CLAUDE }).pipe(Layer.provide(NodeContext.layer)))
        )
      ).pipe(Effect.map(Context.get(McpServer.McpServer)))

      for (const { era, mode } of ERAS) {
        const client = yield* Effect.acquireRelease(
          Effect.promise(async () => {
            const client = new Client({ name: "e2e", version: "0" }, { versionNegotiation: mode })
            await client.connect(new StreamableHTTPClientTransport(new URL(server.url)))
            await client.listTools()
            return client
          }),
          (client) => Effect.promise(() => client.close())
        )
        const call = (name: string, args: Record<string, unknown>, progress?: Array<string>) =>
          Effect.promise(() =>
            client.callTool({ name, arguments: args }, {
              ...(progress ? { onprogress: (p) => progress.push(p.message ?? ""), resetTimeoutOnProgress: true } : {})
            }) as Promise<CallToolResult>
          ).pipe(Effect.map((result) => {
            assert.notStrictEqual(result.isError, true, JSON.stringify(result.content))
            return result.structuredContent as Output
          }))

        const name = `real-${era}`
        const info = yield* call("flotta_spawn", { name, cwd: workdir(name), env: offline.env })
        assert.strictEqual(info.status, "idle")
        const pid = info.pid!
        assert.isTrue(isAlive(pid))

        const remembered = yield* call("flotta_prompt", { name, text: "REMEMBER the harbour is Genoa" })
        const first = yield* call("flotta_wait", { name, turnId: remembered.turnId })
        assert.strictEqual(first.result?.text, "OK, I will remember that.")

        const slow = yield* call("flotta_prompt", { name, text: "SLOW 3500 steady as she goes" })
        const progress: Array<string> = []
        const waited = yield* call("flotta_wait", { name, turnId: slow.turnId }, progress)
        assert.isTrue(waited.done)
        assert.strictEqual(waited.result?.text, "SLOW DONE steady as she goes")
        assert.isAtLeast(progress.length, 1)
        assert.match(progress[0]!, new RegExp(`^agent ${name}: turn t2 running for \\d+ s$`))

        const recalled = yield* call("flotta_ask", { name, text: "RECALL" })
        assert.strictEqual(recalled.result?.text, "The fact is: the harbour is Genoa")
        const latest = yield* call("flotta_result", { name })
        assert.strictEqual(latest.result?.turnId, "t3")
        assert.isAbove(latest.result?.costUsd ?? 0, 0)
        assert.strictEqual(latest.result?.sessionId, info.sessionId)

        assert.deepStrictEqual(yield* call("flotta_close", { name }), { name, closed: true })
        const end = Date.now() + 10_000
        while (isAlive(pid) && Date.now() < end) yield* Effect.sleep("50 millis")
        assert.isFalse(isAlive(pid), "close left the claude process running")
      }
    }), 120_000)
})
