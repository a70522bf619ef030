import type { CallToolResult } from "@modelcontextprotocol/client"
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import { Effect, Tracer } from "effect"
import type { Exit } from "effect"
import * as McpConfig from "../src/McpConfig.js"
import * as McpHandler from "../src/McpHandler.js"

export { fakeFleet, tempDir } from "../../core/test/support.js"

/** The two protocol eras a client can speak, as the SDK client's negotiation modes. */
export const ERAS = [
  { era: "legacy", negotiation: { mode: "legacy" } },
  { era: "modern", negotiation: { mode: { pin: "2026-07-28" } } }
] as const

export type Era = (typeof ERAS)[number]

/** Settings for an in-process handler (nothing listens). */
export const settings = (input: McpConfig.McpConfigInput = {}) => Effect.orDie(McpConfig.make(input))

/** The handler over the fleet in context, scoped. */
export const handler = (input: McpConfig.McpConfigInput = {}) => Effect.flatMap(settings(input), McpHandler.make)

/** An SDK client over a fetch function (in process: no socket), closed with the scope. */
export const connect = (
  fetch: (request: Request) => Promise<Response>,
  era: Era,
  url = "http://127.0.0.1/mcp",
  headers: Record<string, string> = {}
) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new Client({ name: "flotta-test", version: "0.0.0" }, { versionNegotiation: era.negotiation })
      const transport = new StreamableHTTPClientTransport(new URL(url), {
        // What a socket would carry: the Host header (the guards check it).
        fetch: (input, init) => {
          const request = new Request(input, init)
          if (!request.headers.has("host")) request.headers.set("host", new URL(request.url).host)
          return fetch(request)
        },
        requestInit: { headers }
      })
      await client.connect(transport)
      // As real clients do: the listing arms the client's validation of every result against its outputSchema.
      await client.listTools()
      return client
    }),
    (client) => Effect.promise(() => client.close().catch(() => undefined))
  )

/** A tool call; the result as the client got it. */
export const call = (
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
  options: Parameters<Client["callTool"]>[1] = {}
) => Effect.promise(() => client.callTool({ name, arguments: args }, options) as Promise<CallToolResult>)

/** A successful call's structured content. */
export const structured = <A = Record<string, unknown>>(result: CallToolResult): A => {
  if (result.isError === true) throw new Error(`unexpected tool error: ${JSON.stringify(result.content)}`)
  return result.structuredContent as A
}

export const text = (result: CallToolResult) =>
  result.content.map((block) => (block.type === "text" ? block.text : "")).join("\n")

/** A tracer that records each span's name and how it ended, for checking that a cancel reached a tool. */
export const recordingTracer = () => {
  const ended: Array<{ readonly name: string; readonly exit: Exit.Exit<unknown, unknown>; readonly at: number }> = []
  const tracer = Tracer.make({
    span: (name, parent, context, links, startTime, kind) => {
      const attributes = new Map<string, unknown>()
      const span: Tracer.Span = {
        _tag: "Span",
        name,
        spanId: Math.random().toString(16).slice(2),
        traceId: "trace",
        parent,
        context,
        status: { _tag: "Started", startTime },
        attributes,
        links,
        sampled: true,
        kind,
        end: (_endTime, exit) => {
          ended.push({ name, exit, at: Date.now() })
        },
        attribute: (key, value) => {
          attributes.set(key, value)
        },
        event: () => {},
        addLinks: () => {}
      }
      return span
    },
    context: (f) => f()
  })
  return { tracer, ended }
}

/** Polls (real time) until the predicate holds or the deadline passes. */
export const eventually = <A>(read: () => A, predicate: (a: A) => boolean, ms = 5000) =>
  Effect.promise(async () => {
    const end = Date.now() + ms
    let value = read()
    while (!predicate(value) && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 20))
      value = read()
    }
    return value
  })
