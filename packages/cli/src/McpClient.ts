/**
 * How a command talks to a flotta serve: MCP over Streamable HTTP in the modern era (2026-07-28), which a serve
 * speaks beside the legacy one: one POST per request, its version and client in `_meta` and the `Mcp-Method` and
 * `Mcp-Name` headers, no handshake, no session. The answer is JSON, or an event stream that ends with it (progress
 * notifications before it are passed over). On node:http: a command makes one or two calls, and pays neither for
 * the legacy handshake (initialize, a GET stream, a DELETE: four more round trips) nor for loading a general client
 * and its validator. The serve's own conformance to both eras is tested with the official SDK and other clients.
 */
import { Data, Effect, Option, Predicate } from "effect"
import * as http from "node:http"
import * as https from "node:https"
import { version } from "./Version.js"

export const PROTOCOL_VERSION = "2026-07-28"

/** A request that got no answer it could read: the server is down, or no MCP server is at the URL. */
export class McpUnreachable extends Data.TaggedError("McpUnreachable")<{ readonly reason: string }> {}

/** The server answered with an HTTP status that is not a JSON-RPC answer (401, 403, 404, 5xx ...). */
export class McpHttpError extends Data.TaggedError("McpHttpError")<{
  readonly status: number
  readonly statusText: string | undefined
  /** The body, as the server sent it (a flotta serve's is a JSON-RPC error). */
  readonly text: string
}> {}

/** The server answered the request with a JSON-RPC error. */
export class McpRequestFailed extends Data.TaggedError("McpRequestFailed")<{
  readonly code: number
  readonly message: string
}> {}

export type McpFailure = McpUnreachable | McpHttpError | McpRequestFailed

export interface McpClient {
  readonly url: string
  /** One request and its result. */
  readonly request: (method: string, params?: Record<string, unknown>, name?: string) => Effect.Effect<
    unknown,
    McpFailure
  >
  /** `tools/call`: the tool's result (`content`, `structuredContent`, `isError`). */
  readonly callTool: (name: string, args: Record<string, unknown>) => Effect.Effect<unknown, McpFailure>
}

const META = {
  "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
  "io.modelcontextprotocol/clientCapabilities": {},
  "io.modelcontextprotocol/clientInfo": { name: "flotta-cli", version }
}

/** The JSON-RPC message among `messages` that answers request `id`, if any. */
const answerOf = (messages: ReadonlyArray<unknown>, id: number) =>
  messages.find((m) => Predicate.isRecord(m) && m["id"] === id && ("result" in m || "error" in m))

/** The messages of an event stream's complete events in `text` (each event's `data:` lines, as JSON). */
const eventMessages = (text: string): Array<unknown> =>
  text.split(/\r?\n\r?\n/).flatMap((event) => {
    const data = event.split(/\r?\n/).filter((line) => line.startsWith("data:"))
      .map((line) => line.slice(line.startsWith("data: ") ? 6 : 5)).join("\n")
    if (data.length === 0) return []
    return Option.toArray(Option.liftThrowable(() => JSON.parse(data) as unknown)())
  })

/** A JSON-RPC answer's result, or its error as a failure. */
const resultOf = (answer: unknown): Effect.Effect<unknown, McpFailure> => {
  if (!Predicate.isRecord(answer)) return Effect.fail(new McpUnreachable({ reason: "the answer is not JSON-RPC" }))
  const error = answer["error"]
  if (Predicate.isRecord(error)) {
    return Effect.fail(
      new McpRequestFailed({
        code: typeof error["code"] === "number" ? error["code"] : 0,
        message: typeof error["message"] === "string" ? error["message"] : JSON.stringify(error)
      })
    )
  }
  const result = answer["result"]
  if (Predicate.isRecord(result) && result["resultType"] === "input_required") {
    return Effect.fail(
      new McpRequestFailed({ code: 0, message: "the server asked for input a command cannot give" })
    )
  }
  return Effect.succeed(result)
}

/** A client for the MCP endpoint at `url`, sending `token` as a bearer token when there is one. */
export const make = (url: string, token: Option.Option<string>, timeoutMs = 120_000): McpClient => {
  const target = new URL(url)
  const transport = target.protocol === "https:" ? https : http
  let ids = 0
  const request = (method: string, params: Record<string, unknown> = {}, name?: string) =>
    Effect.flatMap(
      Effect.async<unknown, McpFailure>(
        (resumeOnce, signal) => {
          const id = ++ids
          // An event stream's answer is taken as soon as it is whole, and the rest of the response ignored.
          let settled = false
          const resume: typeof resumeOnce = (effect) => {
            if (settled) return
            settled = true
            resumeOnce(effect)
          }
          const body = JSON.stringify({ jsonrpc: "2.0", id, method, params: { ...params, _meta: META } })
          const req = transport.request(target, {
            method: "POST",
            signal,
            timeout: timeoutMs,
            headers: {
              "content-type": "application/json",
              accept: "application/json, text/event-stream",
              "mcp-protocol-version": PROTOCOL_VERSION,
              "mcp-method": method,
              ...(name === undefined ? {} : { "mcp-name": name }),
              ...(Option.isSome(token) ? { authorization: `Bearer ${token.value}` } : {})
            }
          }, (res) => {
            const status = res.statusCode ?? 0
            const stream = (res.headers["content-type"] ?? "").startsWith("text/event-stream")
            let text = ""
            res.setEncoding("utf8")
            res.on("data", (chunk: string) => {
              text += chunk
              if (!stream) return
              const answer = answerOf(eventMessages(text), id)
              if (answer !== undefined) {
                resume(Effect.succeed(answer))
                res.destroy()
              }
            })
            res.on("end", () => {
              if (status < 200 || status >= 300) {
                // A JSON-RPC error in the body is still an answer (a flotta serve's 400s, 404s).
                const parsed = Option.liftThrowable(() => JSON.parse(text) as unknown)()
                const answer = Option.filter(parsed, (m) => Predicate.isRecord(m) && m["id"] === id && "error" in m)
                return resume(
                  Option.isSome(answer) && status !== 401 && status !== 403
                    ? Effect.succeed(answer.value)
                    : Effect.fail(new McpHttpError({ status, statusText: res.statusMessage, text }))
                )
              }
              const answer = stream
                ? answerOf(eventMessages(text), id)
                : Option.getOrUndefined(Option.liftThrowable(() => JSON.parse(text) as unknown)())
              resume(
                answer === undefined
                  ? Effect.fail(new McpUnreachable({ reason: `no answer to ${method} in what the server sent` }))
                  : Effect.succeed(answer)
              )
            })
            res.on("error", (error) => resume(Effect.fail(new McpUnreachable({ reason: error.message }))))
          })
          req.on("timeout", () => req.destroy(new Error(`no answer to ${method} within ${timeoutMs / 1000} s`)))
          req.on("error", (error) => resume(Effect.fail(new McpUnreachable({ reason: error.message }))))
          req.end(body)
        }
      ),
      resultOf
    )
  return {
    url,
    request,
    callTool: (tool, args) => request("tools/call", { name: tool, arguments: args }, tool)
  }
}
