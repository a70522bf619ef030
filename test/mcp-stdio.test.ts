/**
 * The same tools over stdio, in a child process as `flotta mcp` runs them: the legacy era spoken raw (so every
 * byte on stdout is checked to be protocol), the modern era with the SDK client (including a cancelled wait),
 * and a clean exit, agents included, when the client closes stdin. End to end: the server and its agents (the
 * fake claude CLI) are child processes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/client"
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as path from "node:path"
import * as readline from "node:readline"
import * as Tools from "../packages/mcp/src/Tools.js"
import { call, isAlive, structured, until, waitGone } from "./support/mcp.js"

const ROOT = path.resolve(import.meta.dirname, "..")
const SERVER = path.join(import.meta.dirname, "fixtures", "mcp-stdio-server.ts")
const NODE_ARGS = ["--import", "tsx", SERVER]

interface Message {
  readonly jsonrpc: string
  readonly id?: number
  readonly method?: string
  readonly result?: { readonly structuredContent?: Record<string, unknown>; readonly isError?: boolean }
  readonly params?: { readonly message?: string }
}

describe("the MCP server on stdio", () => {
  it.live(
    "speaks only protocol on stdout, serves the legacy era, and exits with its agents when stdin closes",
    () =>
      Effect.promise(async () => {
        const child = spawn(process.execPath, NODE_ARGS, { cwd: ROOT, stdio: ["pipe", "pipe", "pipe"] })
        const lines: Array<string> = []
        let stderr = ""
        child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
        const waiters = new Map<number, (message: Message) => void>()
        readline.createInterface({ input: child.stdout }).on("line", (line) => {
          lines.push(line)
          const message = JSON.parse(line) as Message
          if (message.id !== undefined) waiters.get(message.id)?.(message)
        })
        const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
        let nextId = 1
        const send = (message: object) => child.stdin.write(JSON.stringify({ jsonrpc: "2.0", ...message }) + "\n")
        const request = (method: string, params: object) => {
          const id = nextId++
          const answer = new Promise<Message>((resolve) => waiters.set(id, resolve))
          send({ id, method, params })
          return answer
        }
        const tool = (name: string, args: object, meta: object = {}) =>
          request("tools/call", { name, arguments: args, _meta: meta })

        const init = await request("initialize", {
          protocolVersion: "2025-11-25",
          capabilities: {},
          clientInfo: { name: "raw", version: "0" }
        })
        assert.strictEqual((init.result as { protocolVersion?: string }).protocolVersion, "2025-11-25")
        send({ method: "notifications/initialized" })
        const spawned = await tool("flotta_spawn", { name: "piped" })
        const pid = spawned.result?.structuredContent?.pid as number
        assert.isTrue(isAlive(pid))
        // The turn outlasts the wait's first progress tick (3 s) by a clear margin.
        const asked = await tool("flotta_ask", { name: "piped", text: "slow 4000 over stdio" }, { progressToken: "p1" })
        assert.deepInclude(asked.result?.structuredContent?.result, { text: "slow done over stdio" })
        child.stdin.end()
        assert.strictEqual(await exited, 0)

        // Every line on stdout is a JSON-RPC message: responses and the wait's progress, nothing else.
        const messages = lines.map((line) => JSON.parse(line) as Message)
        assert.isTrue(messages.every((m) => m.jsonrpc === "2.0"))
        const progress = messages.filter((m) => m.method === "notifications/progress")
        assert.isAtLeast(progress.length, 1)
        assert.match(progress[0]!.params?.message ?? "", /^agent piped: turn t1 running for \d+ s$/)
        // The fixture logged and wrote with console.log while serving: both went to stderr.
        assert.include(stderr, "a log line while serving")
        assert.include(stderr, "a console.log while serving")
        assert.isTrue(await Effect.runPromise(waitGone(pid)), "the agent outlived it")
      }),
    60_000
  )

  it.scopedLive(
    "serves the modern era to the SDK client; a cancelled wait leaves the turn running",
    () =>
      Effect.gen(function*() {
        /** Methods (and tool names) the client has written to the server's stdin. */
        const sent: Array<string> = []
        const client = yield* Effect.acquireRelease(
          Effect.promise(async () => {
            const client = new Client({ name: "stdio-test", version: "0" }, {
              versionNegotiation: { mode: { pin: "2026-07-28" } }
            })
            const transport = new StdioClientTransport({
              command: process.execPath,
              args: NODE_ARGS,
              cwd: ROOT,
              stderr: "ignore"
            })
            const send = transport.send.bind(transport)
            transport.send = (message) =>
              send(message).then(() => {
                if ("method" in message) {
                  const params = message.params as { readonly name?: string } | undefined
                  sent.push(params?.name === undefined ? message.method : `${message.method} ${params.name}`)
                }
              })
            await client.connect(transport)
            return client
          }),
          (client) => Effect.promise(() => client.close())
        )
        const { tools } = yield* Effect.promise(() => client.listTools())
        assert.strictEqual(tools.length, Tools.tools.length)
        yield* call(client, "flotta_spawn", { name: "modern" })
        yield* call(client, "flotta_prompt", { name: "modern", text: "slow 2000 still here" })
        const abort = new AbortController()
        const waiting = Effect.promise(() =>
          client.callTool({ name: "flotta_wait", arguments: { name: "modern", turnId: "t1" } }, {
            signal: abort.signal
          })
            .then(() => "answered", () => "rejected")
        )
        const fiber = yield* Effect.fork(waiting)
        // The request is on the server's stdin before the cancellation, which follows it on the same pipe.
        yield* until(Effect.sync(() => sent), (methods) => methods.includes("tools/call flotta_wait"), "the wait sent")
        abort.abort()
        assert.strictEqual(yield* fiber.await.pipe(Effect.flatMap((exit) => exit)), "rejected")
        const status = structured<{ current: string | null }>(yield* call(client, "flotta_status", { name: "modern" }))
        assert.strictEqual(status.current, "t1")
        const done = structured<{ done: boolean; result: { text: string } }>(
          yield* call(client, "flotta_wait", { name: "modern", turnId: "t1" })
        )
        assert.strictEqual(done.result.text, "slow done still here")
      }),
    60_000
  )
})
