/**
 * The command's MCP client against a server on 127.0.0.1 that answers as a serve may: plain JSON, an event stream
 * with progress before the answer, a JSON-RPC error, a refused token, a body that is no answer, and no server.
 * Each request is checked for what the modern era requires of it (its headers and `_meta`).
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as McpClient from "../src/McpClient.js"

interface Seen {
  readonly headers: http.IncomingHttpHeaders
  readonly body: { readonly id: number; readonly method: string; readonly params: Record<string, unknown> }
}

let server: http.Server
let url: string
const seen: Array<Seen> = []

/** What the server answers, by the tool called (or the method). */
const respond = (name: string, id: number, res: http.ServerResponse) => {
  const answer = (result: unknown) => JSON.stringify({ jsonrpc: "2.0", id, result })
  switch (name) {
    case "plain":
      return res.writeHead(200, { "content-type": "application/json" }).end(answer({ structuredContent: { a: 1 } }))
    case "stream":
      res.writeHead(200, { "content-type": "text/event-stream" })
      res.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: "2.0", method: "notifications/progress" })}\n\n`)
      res.write(": keep-alive\n\n")
      // The answer comes in two pieces; the stream stays open after it (the client does not wait for its end).
      res.write(`data: ${answer({ structuredContent: { b: 2 } }).slice(0, 10)}`)
      return res.write(`${answer({ structuredContent: { b: 2 } }).slice(10)}\n\n`)
    case "failing":
      return res.writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify({ jsonrpc: "2.0", id, error: { code: -32602, message: "unknown tool" } }))
    case "guarded":
      return res.writeHead(401, "Unauthorized", { "content-type": "application/json" })
        .end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32001, message: "send the token" } }))
    case "garbage":
      return res.writeHead(200, { "content-type": "text/html" }).end("<html>a proxy</html>")
    default:
      return res.writeHead(404).end()
  }
}

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let text = ""
    req.on("data", (chunk) => (text += chunk))
    req.on("end", () => {
      const body = JSON.parse(text) as Seen["body"]
      seen.push({ headers: req.headers, body })
      respond(String(body.params["name"] ?? body.method), body.id, res)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`
})
afterAll(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})

describe("the command's MCP client", () => {
  it.effect("calls a tool in one POST, as the modern era has it, and takes a JSON answer", () =>
    Effect.gen(function*() {
      const client = McpClient.make(url, Option.some("a-token-of-sixteen+"))
      assert.deepStrictEqual(yield* client.callTool("plain", { x: 1 }), { structuredContent: { a: 1 } })
      const { body, headers } = seen.at(-1)!
      assert.strictEqual(body.method, "tools/call")
      assert.deepStrictEqual(body.params["arguments"], { x: 1 })
      const meta = body.params["_meta"] as Record<string, unknown>
      assert.strictEqual(meta["io.modelcontextprotocol/protocolVersion"], McpClient.PROTOCOL_VERSION)
      assert.deepStrictEqual(meta["io.modelcontextprotocol/clientCapabilities"], {})
      assert.strictEqual(headers["mcp-protocol-version"], McpClient.PROTOCOL_VERSION)
      assert.strictEqual(headers["mcp-method"], "tools/call")
      assert.strictEqual(headers["mcp-name"], "plain")
      assert.strictEqual(headers["authorization"], "Bearer a-token-of-sixteen+")
      assert.include(String(headers["accept"]), "text/event-stream")
    }))

  it.effect("takes the answer from an event stream, past progress and comments, without waiting for its end", () =>
    Effect.gen(function*() {
      const client = McpClient.make(url, Option.none())
      assert.deepStrictEqual(yield* client.callTool("stream", {}), { structuredContent: { b: 2 } })
      assert.isUndefined(seen.at(-1)!.headers["authorization"])
    }))

  it.effect("fails with what went wrong: a JSON-RPC error, a refusal with its body, no answer, no server", () =>
    Effect.gen(function*() {
      const client = McpClient.make(url, Option.none())
      const failed = yield* Effect.flip(client.callTool("failing", {}))
      assert.deepStrictEqual(failed, new McpClient.McpRequestFailed({ code: -32602, message: "unknown tool" }))
      const refused = yield* Effect.flip(client.callTool("guarded", {}))
      assert.strictEqual(refused._tag, "McpHttpError")
      if (refused._tag === "McpHttpError") {
        assert.strictEqual(refused.status, 401)
        assert.include(refused.text, "send the token")
      }
      assert.strictEqual((yield* Effect.flip(client.callTool("garbage", {})))._tag, "McpUnreachable")
      const gone = McpClient.make("http://127.0.0.1:9/mcp", Option.none())
      const unreachable = yield* Effect.flip(gone.request("server/discover"))
      assert.strictEqual(unreachable._tag, "McpUnreachable")
    }))
})
