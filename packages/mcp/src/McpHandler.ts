/**
 * The MCP endpoint as a web-standard `fetch(Request) => Promise<Response>`, socket-free so tests and the HTTP
 * server share every line of it. Every request passes the guards first (Host, Origin, bearer token), then goes
 * to its protocol era:
 *
 * - 2026-07-28 requests (a per-request `_meta` envelope) go to the SDK's sessionless modern handler; closing the
 *   response stream is the cancellation.
 * - 2025-era requests (`initialize` first) get a session: one SDK server and transport per `Mcp-Session-Id`, so
 *   a client's `notifications/cancelled` (a separate POST) reaches the running tool. Sessions are capped
 *   (least recently used goes first), expire when idle, and close with the handler. A legacy client that keeps
 *   no session id is still served, statelessly.
 */
import type { Flotta } from "@flotta/core/Flotta"
import {
  createMcpHandler,
  hostHeaderValidationResponse,
  isInitializeRequest,
  isLegacyRequest,
  legacyStatelessFallback,
  localhostAllowedHostnames,
  localhostAllowedOrigins,
  originValidationResponse,
  WebStandardStreamableHTTPServerTransport
} from "@modelcontextprotocol/server"
import type { McpServer as SdkServer } from "@modelcontextprotocol/server"
import { Clock, Duration, Effect, Option, Redacted, Runtime, Schedule } from "effect"
import type { Scope } from "effect"
import { createHash, randomUUID, timingSafeEqual } from "node:crypto"
import type { McpSettings } from "./McpConfig.js"
import { isLoopback, PATH } from "./McpConfig.js"
import * as ServerFactory from "./ServerFactory.js"

export interface McpHandler {
  /** Serves one HTTP request of either era. Never rejects. */
  readonly fetch: (request: Request) => Promise<Response>
  /** Live 2025-era sessions. */
  readonly sessions: () => number
}

interface Session {
  readonly server: SdkServer
  readonly transport: WebStandardStreamableHTTPServerTransport
  lastSeen: number
}

/** The first revision without `initialize` (2026-07-28); revisions sort as dates. */
const MODERN_ERA = "2026-07-28"

const jsonRpcError = (status: number, code: number, message: string, headers: Record<string, string> = {}) =>
  Response.json({ jsonrpc: "2.0", error: { code, message }, id: null }, { status, headers })

const digest = (text: string) => createHash("sha256").update(text, "utf8").digest()

/** The Host names a request may carry: loopback names, the bound host, and the configured ones. */
const hostNames = (settings: McpSettings) => {
  const bound = settings.host.includes(":") && !settings.host.startsWith("[") ? `[${settings.host}]` : settings.host
  const wildcard = bound === "0.0.0.0" || bound === "[::]"
  return [...localhostAllowedHostnames(), ...(wildcard ? [] : [bound]), ...settings.allowedHosts]
}

export const make = (settings: McpSettings): Effect.Effect<McpHandler, never, Flotta | Scope.Scope> =>
  Effect.gen(function*() {
    const runtime = yield* Effect.runtime<Flotta>()
    const runFork = Runtime.runFork(runtime)
    const factory = ServerFactory.make(runtime)
    const onerror = (error: Error) => {
      runFork(Effect.logDebug(`MCP: ${error.message}`))
    }
    const modern = createMcpHandler(({ requestInfo }) => factory(requestInfo), { legacy: "reject", onerror })
    const stateless = legacyStatelessFallback(() => factory(), onerror)
    const sessions = new Map<string, Session>()

    // Behind a non-loopback bind the token is the guard, and Host names are only checked when configured.
    const allowedHosts = isLoopback(settings.host) || settings.allowedHosts.length > 0 ? hostNames(settings) : null
    const allowedOrigins = [...localhostAllowedOrigins(), ...settings.allowedOrigins]
    const expected = Option.map(settings.token, (token) => digest(Redacted.value(token)))

    const authorized = (request: Request) => {
      if (Option.isNone(expected)) return true
      const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.get("authorization") ?? "")
      // Digests have one length, so the comparison takes the same time whatever the guess.
      return match !== null && timingSafeEqual(digest(match[1]!), expected.value)
    }

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

    const openSession = (request: Request, body: unknown) =>
      Effect.gen(function*() {
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

    const serveLegacy = (request: Request, body: unknown) =>
      Effect.gen(function*() {
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

    /** The body of a POST, parsed once for routing and the legacy transports; undefined when it is not JSON. */
    const readBody = (request: Request) =>
      request.method === "POST"
        ? Effect.promise(() => request.clone().json().then((body: unknown) => body, () => undefined))
        : Effect.succeed(undefined)

    const serve = (request: Request): Effect.Effect<Response> =>
      Effect.gen(function*() {
        const badHost = allowedHosts === null ? undefined : hostHeaderValidationResponse(request, allowedHosts)
        if (badHost !== undefined) return badHost
        const badOrigin = originValidationResponse(request, allowedOrigins)
        if (badOrigin !== undefined) return badOrigin
        if (new URL(request.url).pathname !== PATH) {
          return jsonRpcError(404, -32000, `Not found: the endpoint is ${PATH}`)
        }
        if (!authorized(request)) {
          return jsonRpcError(401, -32000, "Unauthorized: send Authorization: Bearer <token>", {
            "www-authenticate": "Bearer realm=\"flotta\""
          })
        }
        // A modern revision in the version header is always the modern path's to answer (even when malformed):
        // no need to read the body to classify it.
        const version = request.headers.get("mcp-protocol-version")
        if (version !== null && version >= MODERN_ERA) return yield* Effect.promise(() => modern.fetch(request))
        const body = yield* readBody(request)
        const legacy = yield* Effect.promise(() =>
          body === undefined ? isLegacyRequest(request) : isLegacyRequest(request, body)
        )
        return yield* (legacy ? serveLegacy(request, body) : Effect.promise(() => modern.fetch(request)))
      }).pipe(
        Effect.catchAllCause((cause) =>
          Effect.logError("MCP: request failed", cause).pipe(
            Effect.as(jsonRpcError(500, -32603, "Internal error"))
          )
        )
      )

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

    const runPromise = Runtime.runPromise(runtime)
    return {
      fetch: (request: Request) => runPromise(serve(request)),
      sessions: () => sessions.size
    } satisfies McpHandler
  })
