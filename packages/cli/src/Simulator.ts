/**
 * The simulator: a built-in scripted model behind a local fake of the Anthropic Messages API, so the real
 * `claude` CLI runs end to end with no account, no network and no spend (`flotta run --simulate`, and every
 * integration test that drives the real CLI). This module is the server; the "model" is the rule engine in
 * `SimulatorRules.ts` (its keyword table is there), and `SimulatorWire.ts` encodes its answers.
 *
 * The server (`start`, `layer`): `POST /v1/messages` (any query string) on 127.0.0.1, answering with the SSE
 * event stream when the request says `stream: true` and with one JSON message otherwise; anything else is a 404
 * error JSON. Every request is recorded with the rule that answered it.
 *
 * The offline environment (`offlineLayout`, `offlineEnv`) points a CLI at a running simulator. The CLI's side of
 * the wire (what it sends, and the environment that keeps it offline) is in CLAUDE-CLI.md.
 */
import {
  FileSystem,
  Headers,
  HttpIncomingMessage,
  HttpRouter,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Clock, Context, Duration, Effect, Layer, Option, Ref } from "effect"
import * as Http from "node:http"
import * as path from "node:path"
import { isObject } from "./internal/requestJson.js"
import { decide, defaultUsage, TOOL_ID_PREFIX, type Usage } from "./SimulatorRules.js"
import { errorJson, messageJson, sseEvents } from "./SimulatorWire.js"

// ---------------------------------------------------------------------------------------------------------
// The server
// ---------------------------------------------------------------------------------------------------------

export interface RecordedRequest {
  readonly time: number // epoch ms (Clock) when the body was complete
  readonly method: string
  readonly url: string // with the query string, e.g. "/v1/messages?beta=true"
  readonly headers: Headers.Headers
  readonly model: string | undefined
  readonly body: unknown // parsed JSON, or the raw text if it was not JSON
  readonly rule: string // which rule answered: "ECHO", "READ", "READ:result", "side:probe", "not_found", ...
  readonly prompt: string | undefined // the user text the rule matched, if any
}

export interface Options {
  /** 0 (the default) takes any free port. */
  readonly port?: number
  /** The default is 127.0.0.1. */
  readonly host?: string
  /** The usage every answer reports (EXPENSIVE excepted); the default is 100 input, 20 output tokens. */
  readonly usage?: Usage
  /**
   * Report input tokens as the request's own size (a token per four characters of its messages), as a real API's
   * grow with the conversation and shrink when it is compacted; output stays `usage`'s.
   */
  readonly measure?: boolean
}

/** A running simulator. */
export interface Handle {
  /** The base URL for `ANTHROPIC_BASE_URL`, e.g. `http://127.0.0.1:41234`. */
  readonly url: string
  readonly port: number
  /** The requests so far (POSTs only), oldest first: a snapshot. */
  readonly requests: () => ReadonlyArray<RecordedRequest>
}

export class Simulator extends Context.Tag("@flotta/cli/Simulator")<Simulator, Handle>() {}

const MAX_BODY_BYTES = 64 * 1024 * 1024

const parseBody = (raw: string): unknown => {
  if (raw === "") return undefined
  return Option.getOrElse(Option.liftThrowable((s: string): unknown => JSON.parse(s))(raw), () => raw)
}

const formatHost = (host: string) => host.includes(":") ? `[${host}]` : host

/**
 * Starts a simulator in the current scope. Closing the scope stops the server and ends its open
 * connections (a HANG or SLOW stream included).
 */
export const start = Effect.fn("Simulator.start")(function*(options: Options = {}) {
  const usage = options.usage ?? defaultUsage
  const recorded: Array<RecordedRequest> = []
  const counter = yield* Ref.make(0) // answered /v1/messages requests: the n of msg_fake_n and req_fake_n

  const nodeServer = Http.createServer()
  // A client that goes away mid-request, or sends garbage, must not take the server down.
  nodeServer.on("clientError", (_error, socket) => socket.destroy())
  nodeServer.on("request", (req: Http.IncomingMessage, res: Http.ServerResponse) => {
    req.on("error", () => {})
    res.on("error", () => {})
  })
  const server = yield* NodeHttpServer.make(() => nodeServer, {
    port: options.port ?? 0,
    host: options.host ?? "127.0.0.1"
  })

  const record = (request: HttpServerRequest.HttpServerRequest, body: unknown, rule: string, prompt?: string) =>
    Effect.flatMap(Clock.currentTimeMillis, (time) =>
      Effect.sync(() => {
        recorded.push({
          time,
          method: request.method,
          url: request.originalUrl,
          headers: request.headers,
          model: isObject(body) && typeof body.model === "string" ? body.model : undefined,
          body,
          rule,
          prompt
        })
      }))

  const readBody = (request: HttpServerRequest.HttpServerRequest) => Effect.map(request.text, parseBody)

  const errorResponse = (status: number, message: string, type?: string, headers: Record<string, string> = {}) =>
    Effect.map(Ref.get(counter), (n) =>
      HttpServerResponse.unsafeJson(errorJson(status, message, type), {
        status,
        headers: { ...headers, "request-id": `req_fake_${n}` }
      }))

  const messages = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const body = yield* readBody(request)
    if (!isObject(body)) {
      yield* record(request, body, "bad_request")
      return yield* errorResponse(400, "fake: body is not a JSON object")
    }
    const n = yield* Ref.updateAndGet(counter, (n) => n + 1)
    const now = yield* Clock.currentTimeMillis
    const asked = options.measure === true
      ? { ...usage, input_tokens: Math.ceil(JSON.stringify(body.messages ?? []).length / 4) }
      : usage
    const { decision, prompt, rule } = decide(body, { usage: asked, toolId: `${TOOL_ID_PREFIX}${n}`, now })
    yield* record(request, body, rule, prompt)
    if (decision._tag === "error") {
      return yield* errorResponse(
        decision.status,
        decision.message ?? `fake error ${decision.status}`,
        undefined,
        decision.headers
      )
    }
    const extraHeaders = decision._tag === "message" ? decision.headers ?? {} : {}

    const id = `msg_fake_${n}`
    const model = typeof body.model === "string" ? body.model : "claude-fake"
    const requestId = `req_fake_${n}`
    if (body.stream === true) {
      return HttpServerResponse.stream(sseEvents(id, model, decision, asked), {
        contentType: "text/event-stream",
        headers: { ...extraHeaders, "cache-control": "no-cache", connection: "keep-alive", "request-id": requestId }
      })
    }
    if (decision._tag === "hang") return yield* Effect.never // no answer until the client gives up
    if (decision.slowMs !== undefined) yield* Effect.sleep(Duration.millis(decision.slowMs))
    return HttpServerResponse.unsafeJson(
      messageJson(id, model, decision.content, decision.stopReason, decision.usage),
      { headers: { ...extraHeaders, "request-id": requestId } }
    )
  })

  const notFound = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const pathname = new URL(request.originalUrl, "http://simulator").pathname
    if (request.method === "POST") yield* record(request, yield* readBody(request), "not_found")
    return yield* errorResponse(404, `fake: no route ${request.method} ${pathname}`, "not_found_error")
  })

  const app = HttpRouter.empty.pipe(
    HttpRouter.post("/v1/messages", messages),
    Effect.catchTag("RouteNotFound", () => notFound),
    Effect.catchTag("RequestError", (error) => errorResponse(400, `fake: cannot read the request: ${error.message}`)),
    Effect.catchAllDefect((defect) =>
      errorResponse(500, `fake: ${defect instanceof Error ? defect.message : String(defect)}`)
    )
  )
  // The handlers run in the context captured here, so the body limit is set once.
  yield* server.serve(app).pipe(HttpIncomingMessage.withMaxBodySize(Option.some(MAX_BODY_BYTES)))

  // Runs before the platform's own `server.close()`, which alone would wait for open streams forever.
  yield* Effect.addFinalizer(() =>
    Effect.async<void>((resume) => {
      nodeServer.close(() => resume(Effect.void))
      nodeServer.closeAllConnections()
    })
  )

  const address = server.address
  const port = address._tag === "TcpAddress" ? address.port : 0
  const url = `http://${address._tag === "TcpAddress" ? formatHost(address.hostname) : "127.0.0.1"}:${port}`
  yield* Effect.logDebug("simulator listening").pipe(Effect.annotateLogs({ url }))
  return { url, port, requests: () => recorded.slice() } satisfies Handle
})

/** The simulator as a layer: it listens while the layer is alive. */
export const layer = (options?: Options) => Layer.scoped(Simulator, start(options))

// ---------------------------------------------------------------------------------------------------------
// The offline environment
// ---------------------------------------------------------------------------------------------------------

/**
 * How the offline CLI logs in: `api-key` (`ANTHROPIC_API_KEY=dummy`), or `subscription`
 * (`CLAUDE_CODE_OAUTH_TOKEN=simulated`, no API key), the only kind for which the CLI reads the usage limiter's
 * headers, so that a LIMIT parks (CLAUDE-CLI.md, "Usage limits"). Both work offline against the simulator.
 */
export type Login = "api-key" | "subscription"

/**
 * The environment of CLAUDE-CLI.md section 0 as data: the CLI talks only to the simulator at `url`, and all
 * its state lives under `root`. `dirs` must exist before the CLI starts (`offlineEnv` makes them).
 */
export const offlineLayout = (url: string, root: string, login: Login = "api-key") => {
  const home = path.join(root, "home")
  const configDir = path.join(home, ".claude")
  const tmp = path.join(home, "tmp")
  const env: Record<string, string> = {
    HOME: home,
    CLAUDE_CONFIG_DIR: configDir,
    CLAUDE_CODE_TMPDIR: tmp,
    ANTHROPIC_BASE_URL: url,
    // An empty key is no key to the CLI: one the host has does not win over the subscription.
    ...(login === "api-key"
      ? { ANTHROPIC_API_KEY: "dummy" }
      : { CLAUDE_CODE_OAUTH_TOKEN: "simulated", ANTHROPIC_API_KEY: "", ANTHROPIC_AUTH_TOKEN: "" }),
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1", // no DNS, no api.anthropic.com
    DISABLE_AUTOUPDATER: "1",
    CLAUDE_CODE_MAX_RETRIES: "0", // a failure shows at once instead of after ten retries
    API_TIMEOUT_MS: "10000", // not 2000: SLOW replies may take several seconds
    NO_PROXY: "127.0.0.1,localhost"
  }
  return { env, dirs: [home, configDir, tmp] as ReadonlyArray<string> }
}

/** Makes the directories of `offlineLayout(url, root)` and returns its environment. */
export const offlineEnv = Effect.fn("Simulator.offlineEnv")(
  function*(url: string, root: string, login: Login = "api-key") {
    const fs = yield* FileSystem.FileSystem
    const { dirs, env } = offlineLayout(url, root, login)
    yield* Effect.forEach(dirs, (dir) => fs.makeDirectory(dir, { recursive: true }), { discard: true })
    return env
  }
)
