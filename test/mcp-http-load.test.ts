/**
 * The MCP server under concurrent clients over a real loopback port: SDK clients of both eras sharing one
 * keep-alive pool (the process's `fetch`), with an idle pause near the server's keep-alive timeout, where a
 * socket the client still thinks usable used to be closed under it (ECONNRESET). Every call must succeed, and
 * every answer must tell the client how long the server keeps an idle connection (`Keep-Alive: timeout=`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import { Context, Effect, Layer } from "effect"
import * as McpServer from "../packages/mcp/src/McpServer.js"
import type { Era } from "./support/mcp.js"
import { call, ERAS, fleet, structured } from "./support/mcp.js"

const CLIENTS_PER_ERA = 20
const CALLS = 10

const serve = Layer.build(McpServer.layer({ port: 0 }).pipe(Layer.provide(fleet()))).pipe(
  Effect.map(Context.get(McpServer.McpServer))
)

/**
 * A client over the process's `fetch`, closed with the scope. Unlike the unit ring's `connect` it lists no tools:
 * the listing makes every client compile each tool's output schema, client-side work that is not under test.
 */
const connect = (url: string, era: Era) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new Client({ name: "load", version: "0" }, { versionNegotiation: era.negotiation })
      await client.connect(new StreamableHTTPClientTransport(new URL(url)))
      return client
    }),
    (client) => Effect.promise(() => client.close())
  )

/** The headers of one answer, its body read to the end. */
const headersOf = (url: string, headers: Record<string, string>, body: string) =>
  Effect.promise(async () => {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
      body
    })
    await response.arrayBuffer()
    return response.headers
  })

describe("the MCP server under concurrent clients", () => {
  it.scopedLive("tells every client of either era how long it keeps an idle connection", () =>
    Effect.gen(function*() {
      const server = yield* serve
      const initialize = JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "0" } }
      })
      // A 2025-era answer is an SSE stream, whose `Connection` header the SDK writes itself.
      const legacy = yield* headersOf(server.url, {}, initialize)
      assert.strictEqual(legacy.get("content-type"), "text/event-stream")
      assert.strictEqual(legacy.get("keep-alive"), "timeout=5")
      const modern = yield* headersOf(
        server.url,
        { "mcp-protocol-version": "2026-07-28" },
        JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} })
      )
      assert.strictEqual(modern.get("keep-alive"), "timeout=5")
    }))

  it.scopedLive(
    `${CLIENTS_PER_ERA} clients of each era × ${CALLS} calls: every call succeeds`,
    () =>
      Effect.gen(function*() {
        const server = yield* serve
        const clients = yield* Effect.forEach(
          Array.from({ length: CLIENTS_PER_ERA * 2 }, (_, i): Era => ERAS[i % 2]!),
          (era) => connect(server.url, era),
          { concurrency: "unbounded" }
        )
        yield* call(clients[0]!, "flotta_spawn", { name: "load" })
        const burst = (n: number) =>
          Effect.forEach(clients, (client) =>
            Effect.forEach(
              Array.from({ length: n }),
              () => call(client, "flotta_status", { name: "load" }).pipe(Effect.map(structured)),
              { discard: true }
            ), {
            concurrency: "unbounded",
            discard: true
          })
        yield* burst(CALLS / 2)
        // Idle across the server's 5 s keep-alive: the pool's sockets are either let go by the client or still open.
        yield* Effect.sleep("4500 millis")
        yield* burst(CALLS / 2)
      }),
    60_000
  )
})
