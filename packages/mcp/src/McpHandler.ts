/**
 * The MCP endpoint as a route, `/mcp` on the fleet's one HTTP stack (`Http.Routes`): POST, GET and DELETE, each
 * behind the shared guard (`HttpGuard`: Host, Origin, bearer token); any other method gets 405 with `Allow`, any
 * other path 404. `fetch` is the same routes as a web-standard `fetch(Request) => Promise<Response>`, socket-free,
 * so tests and the HTTP server share every line of it. The body of a POST is read once, under 4 MiB (413 above),
 * parsed for routing, and handed to its protocol era:
 *
 * - 2026-07-28 requests (a per-request `_meta` envelope) go to the SDK's sessionless modern handler; closing the
 *   response stream is the cancellation.
 * - 2025-era requests (`initialize` first) get a session: one SDK server and transport per `Mcp-Session-Id`, so
 *   a client's `notifications/cancelled` (a separate POST) reaches the running tool. Sessions are capped
 *   (least recently used goes first), expire when idle, and close with the handler. A legacy client that keeps
 *   no session id is still served, statelessly.
 */
import { HttpApp, HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import type { Flotta } from "@flotta/core/Flotta"
import * as Http from "@flotta/core/Http"
import * as HttpGuard from "@flotta/core/HttpGuard"
import {
  createMcpHandler,
  isInitializeRequest,
  isLegacyRequest,
  legacyStatelessFallback,
  WebStandardStreamableHTTPServerTransport
} from "@modelcontextprotocol/server"
import type { McpServer as SdkServer } from "@modelcontextprotocol/server"
import { Clock, Duration, Effect, Option, Runtime, Schedule, Schema } from "effect"
import { randomUUID } from "node:crypto"
import type { McpSettings } from "./McpConfig.js"
import { PATH } from "./McpConfig.js"
import * as ServerFactory from "./ServerFactory.js"

export interface McpHandler {
  /** Serves one HTTP request of either era, guards and routing included. Never rejects. */
  readonly fetch: (request: Request) => Promise<Response>
  /** Live 2025-era sessions. */
  readonly sessions: () => number
  /** The endpoint's route and its 404, for the HTTP server. */
  readonly routes: Http.Routes
}

interface Session {
  readonly server: SdkServer
  readonly transport: WebStandardStreamableHTTPServerTransport
  lastSeen: number
}

/** The first revision without `initialize` (2026-07-28); revisions sort as dates. */
const MODERN_ERA = "2026-07-28"

/** The SDK's own bound on a request body. */
const MAX_BODY = 4 * 1024 * 1024

const jsonRpcError = (status: number, code: number, message: string, headers: Record<string, string> = {}) =>
  Response.json({ jsonrpc: "2.0", error: { code, message }, id: null }, { status, headers })

/** The same error as an HTTP response of the stack. */
const refusal = (status: number, message: string, headers: Record<string, string> = {}) =>
  HttpServerResponse.unsafeJson(
    { jsonrpc: "2.0", error: { code: status >= 500 ? -32603 : -32000, message }, id: null },
    {
      status,
      headers
    }
  )

const decodeJson = Schema.decodeUnknownOption(Schema.parseJson())

export const make = Effect.fn("McpHandler.make")(function*(settings: McpSettings) {
  const runtime = yield* Effect.runtime<Flotta>()
  const runFork = Runtime.runFork(runtime)
  const factory = ServerFactory.make(runtime)
  const onerror = (error: Error) => {
    runFork(Effect.logDebug(`MCP: ${error.message}`))
  }
  const modern = createMcpHandler(({ requestInfo }) => factory(requestInfo), { legacy: "reject", onerror })
  const stateless = legacyStatelessFallback(() => factory(), onerror)
  const sessions = new Map<string, Session>()

  const guard = HttpGuard.make({
    host: settings.host,
    allowedHosts: settings.allowedHosts,
    allowedOrigins: settings.allowedOrigins,
    origins: "loopback",
    originlessPosts: "allow",
    token: settings.token,
    requireToken: true,
    refuse: refusal
  })

  const closeSession = (id: string, session: Session) =>
    Effect.promise(() => session.server.close().catch(() => undefined)).pipe(
      Effect.ensuring(Effect.sync(() => sessions.delete(id)))
    )

  /** Makes room under the cap: the least recently used session goes. */
  const evict = Effect.suspend(() => {
    if (sessions.size < settings.maxSessions) return Effect.void
    let oldest: [string, Session] | undefined
    for (const entry of sessions) if (oldest === undefined || entry[1].lastSeen < oldest[1].lastSeen) oldest = entry
    return oldest === undefined
      ? Effect.void
      : Effect.logInfo(`MCP: session cap (${settings.maxSessions}) reached, closing the least recently used`)
        .pipe(Effect.zipRight(closeSession(oldest[0], oldest[1])))
  })

  const openSession = Effect.fn("McpHandler.openSession")(function*(request: Request, body: unknown) {
    yield* evict
    const server = factory()
    const now = yield* Clock.currentTimeMillis
    const transport: WebStandardStreamableHTTPServerTransport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        sessions.set(id, { server, transport, lastSeen: now })
      },
      onsessionclosed: (id) => {
        sessions.delete(id)
      }
    })
    yield* Effect.promise(() => server.connect(transport))
    server.server.onclose = () => {
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId)
    }
    return yield* Effect.promise(() => transport.handleRequest(request, { parsedBody: body }))
  })

  const serveLegacy = Effect.fn("McpHandler.serveLegacy")(function*(request: Request, body: unknown) {
    const id = request.headers.get("mcp-session-id")
    if (id !== null) {
      const session = sessions.get(id)
      if (session === undefined) {
        return jsonRpcError(404, -32001, "Session not found: it ended or expired; initialize a new one")
      }
      session.lastSeen = yield* Clock.currentTimeMillis
      return yield* Effect.promise(() =>
        session.transport.handleRequest(request, body === undefined ? {} : { parsedBody: body })
      )
    }
    if (isInitializeRequest(body)) return yield* openSession(request, body)
    // A client that keeps no session id: served statelessly (no cancellation, no GET stream).
    return yield* Effect.promise(() => stateless(request))
  })

  /** One request, as the SDK takes it, to its era: a modern revision in the version header needs no body. */
  const dispatch = (request: Request, body: unknown): Effect.Effect<Response> => {
    const version = request.headers.get("mcp-protocol-version")
    if (version !== null && version >= MODERN_ERA) return Effect.promise(() => modern.fetch(request))
    return Effect.promise(() => body === undefined ? isLegacyRequest(request) : isLegacyRequest(request, body))
      .pipe(
        Effect.flatMap((legacy) => legacy ? serveLegacy(request, body) : Effect.promise(() => modern.fetch(request)))
      )
  }

  const endpoint = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const text = request.method === "POST" ? yield* Http.bodyText(MAX_BODY) : undefined
    const abort = new AbortController()
    const web = new Request(`http://${request.headers["host"] ?? "localhost"}${request.url}`, {
      method: request.method,
      headers: request.headers,
      signal: abort.signal,
      ...(text === undefined || text.length === 0 ? {} : { body: text })
    })
    const body = text === undefined ? undefined : Option.getOrUndefined(decodeJson(text))
    const response = yield* dispatch(web, body).pipe(Effect.onInterrupt(() => Effect.sync(() => abort.abort())))
    return yield* Http.respondWeb(response)
  }).pipe(
    Effect.catchTag("BodyRefused", (refused) =>
      // A body over the bound was not read to its end: the connection cannot carry another request.
      Effect.succeed(refusal(refused.status, refused.reason, refused.status === 413 ? { connection: "close" } : {}))),
    Effect.catchAllCause((cause) =>
      Effect.logError("MCP: request failed", cause).pipe(Effect.as(refusal(500, "Internal error")))
    )
  )

  const routes: Http.Routes = {
    router: HttpRouter.empty.pipe(
      Http.route(PATH, Http.methods({ POST: endpoint, GET: endpoint, DELETE: endpoint }, refusal)),
      HttpRouter.use(guard)
    ),
    notFound: guard(Effect.succeed(refusal(404, `Not found: the endpoint is ${PATH}`)))
  }

  // Clients often never DELETE their session: close the idle ones.
  const idleMs = Duration.toMillis(settings.sessionIdleTimeout)
  const sweep = Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const stale = [...sessions].filter(([, s]) => now - s.lastSeen >= idleMs)
    if (stale.length > 0) yield* Effect.logDebug(`MCP: closing ${stale.length} idle session(s)`)
    yield* Effect.forEach(stale, ([id, s]) => closeSession(id, s), { discard: true })
  })
  yield* sweep.pipe(
    Effect.schedule(Schedule.spaced(Duration.millis(Math.max(1000, Math.min(60_000, idleMs / 4))))),
    Effect.forkScoped
  )
  yield* Effect.addFinalizer(() =>
    Effect.forEach([...sessions], ([id, s]) => closeSession(id, s), { concurrency: "unbounded", discard: true })
      .pipe(Effect.zipRight(Effect.promise(() => modern.close().catch(() => undefined))))
  )

  const fetch = HttpApp.toWebHandlerRuntime(runtime)(yield* Http.toApp([routes]))
  return {
    fetch: (request: Request) => fetch(request),
    sessions: () => sessions.size,
    routes
  } satisfies McpHandler
})
