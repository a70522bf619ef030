/**
 * What the fleet's HTTP servers (the MCP endpoint, the dashboard) share: one stack, `HttpRouter` routes served by
 * `NodeHttpServer` for the life of a scope (`serve`), a path's methods as one route that answers 405 with `Allow`
 * for the others (`methods`), the loopback and origin names the guards (`HttpGuard`) compare, and the config
 * fields of a server section (`ServerFields`). This is the one module that touches `node:http`.
 */
import type { HttpApp } from "@effect/platform"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Option, Predicate, Schema } from "effect"
import type { Scope } from "effect"
import * as http from "node:http"
import * as net from "node:net"
import { exact } from "./Decode.js"

const LOOPBACK_NAMES = new Set(["localhost", "127.0.0.1", "::1", "[::1]"])

export const isLoopback = (host: string): boolean => {
  if (LOOPBACK_NAMES.has(host.toLowerCase())) return true
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host
  if (net.isIPv4(bare)) return bare.startsWith("127.")
  if (net.isIPv6(bare)) return bare === "::1" || bare.toLowerCase().startsWith("::ffff:127.")
  return false
}

/** An origin as the guards compare it: its hostname (`https://a.example:8443` → `a.example`). */
export const originHostname = (entry: string): string => {
  const trimmed = entry.trim()
  if (/^[a-z][a-z0-9+.-]*:\/\/\*$/i.test(trimmed) || !trimmed.includes("://")) return trimmed.toLowerCase()
  try {
    return new URL(trimmed).hostname.toLowerCase()
  } catch {
    return trimmed.toLowerCase()
  }
}

/** The hostname of a Host header or a configured name (`[::1]:4099` → `[::1]`); none when it is not one. */
export const hostnameOf = (host: string): Option.Option<string> => {
  if (host.length === 0) return Option.none()
  try {
    const { hostname, pathname, search } = new URL(`http://${host}`)
    return pathname === "/" && search === "" ? Option.some(hostname) : Option.none()
  } catch {
    return Option.none()
  }
}

/** The part of a server that is served: its routes (each behind its guard), and what answers a path none takes. */
export interface Routes {
  readonly router: HttpRouter.HttpRouter
  readonly notFound: HttpApp.Default
}

type Method = "GET" | "HEAD" | "POST" | "DELETE" | "PUT" | "PATCH"

/**
 * One path's handlers by method, as a single route: any other method gets 405 with `Allow` (a method no route
 * takes, TRACE included, never reaches a handler). `refuse` writes the 405 in the server's own format.
 */
export const methods = <R>(
  handlers: Partial<Record<Method, Effect.Effect<HttpServerResponse.HttpServerResponse, never, R>>>,
  refuse: (status: 405, message: string) => HttpServerResponse.HttpServerResponse
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, R | HttpServerRequest.HttpServerRequest> => {
  const allow = Object.keys(handlers).join(", ")
  const byMethod: Readonly<Record<string, Effect.Effect<HttpServerResponse.HttpServerResponse, never, R> | undefined>> =
    handlers
  return Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const handler = Object.hasOwn(byMethod, request.method) ? byMethod[request.method] : undefined
    return handler ?? Effect.succeed(
      HttpServerResponse.setHeader(refuse(405, `${request.method} is not supported here: use ${allow}`), "allow", allow)
    )
  })
}

/** Adds the route `path` (every method) to a router: see `methods`. */
export const route =
  <R>(path: HttpRouter.PathInput, handler: HttpRouter.Route.Handler<never, R>) =>
  <E0, R0>(router: HttpRouter.HttpRouter<E0, R0>) => HttpRouter.all(router, path, handler)

/**
 * The parts' routes as one app: the first part's `notFound` answers a path that no route takes, and a defect is
 * logged and answered with 500. What `serve` serves, and what an in-process client calls (`HttpApp.toWebHandler`).
 */
export const toApp = (parts: ReadonlyArray<Routes>): Effect.Effect<HttpApp.Default> =>
  Effect.map(
    HttpRouter.toHttpApp(HttpRouter.concatAll(...parts.map((part) => part.router))),
    (app) =>
      app.pipe(
        Effect.catchTag(
          "RouteNotFound",
          () => parts[0]?.notFound ?? Effect.succeed(HttpServerResponse.empty({ status: 404 }))
        ),
        Effect.catchAllCause((cause) =>
          Effect.as(Effect.logError("HTTP: request failed", cause), HttpServerResponse.empty({ status: 500 }))
        )
      )
  )

export interface Bound {
  readonly origin: string
  readonly host: string
  readonly port: number
}

export interface ServeOptions<E> {
  readonly port: number
  readonly host: string
  /** A bind failure, as the caller's typed error. */
  readonly fail: (reason: string) => E
  /** How long receiving one request may take (not answering it: streams last). */
  readonly requestTimeout?: number
}

/** Why a bind failed, in words: a taken port is the usual one. */
const reasonOf = (error: unknown, port: number, host: string) =>
  Predicate.hasProperty(error, "code") && error.code === "EADDRINUSE"
    ? `port ${port} on ${host} is already in use`
    : `cannot listen on ${host}:${port}: ${error instanceof Error ? error.message : String(error)}`

/**
 * How long a client is told it may keep an idle connection (`Keep-Alive: timeout=5`), and how long the server
 * really keeps one. Told the real figure, a client lets go a little before it (undici: 2 s), a margin a loaded
 * event loop eats: it then sends a request on a socket the server is closing, and gets ECONNRESET. The server
 * keeps it far longer, so whoever closes an idle connection is the client.
 */
const IDLE_TOLD_S = 5
const IDLE_KEPT_MS = 60_000

/**
 * Serves the parts (`toApp`) on `host:port` until the scope closes, and says where it listens.
 * Closing drops open connections: SSE streams and keep-alive sockets would otherwise hold the close forever.
 */
export const serve = <E>(
  parts: ReadonlyArray<Routes>,
  options: ServeOptions<E>
): Effect.Effect<Bound, E, Scope.Scope> =>
  Effect.gen(function*() {
    const node = http.createServer()
    node.headersTimeout = 30_000
    node.keepAliveTimeout = IDLE_KEPT_MS
    if (options.requestTimeout !== undefined) node.requestTimeout = options.requestTimeout
    const server = yield* NodeHttpServer.make(() => node, { port: options.port, host: options.host }).pipe(
      Effect.catchTag("ServeError", (error) =>
        Effect.fail(options.fail(reasonOf(error.cause, options.port, options.host))))
    )
    yield* server.serve(
      Effect.map(yield* toApp(parts), (response) =>
        HttpServerResponse.setHeader(response, "keep-alive", `timeout=${IDLE_TOLD_S}`))
    )
    // Runs before the platform's own close, which alone would wait for open streams forever.
    yield* Effect.addFinalizer(() =>
      Effect.async<void>((resume) => {
        node.close(() =>
          resume(Effect.void)
        )
        node.closeAllConnections()
      })
    )
    const address = server.address
    const host = address._tag === "TcpAddress" ? address.hostname : options.host
    const port = address._tag === "TcpAddress" ? address.port : options.port
    return { origin: `http://${host.includes(":") ? `[${host}]` : host}:${port}`, host, port }
  })

/**
 * The fields every server section of the config file has (`mcp`, `dashboard`): where it listens, who may call.
 * Their descriptions are the config reference's prose; a section may describe a field its own way.
 */
export const ServerFields = {
  enabled: exact(Schema.Boolean).annotations({ description: "`false` turns the section off, as if it were absent." }),
  port: exact(Schema.Number.pipe(Schema.int(), Schema.between(0, 65535))).annotations({
    description: "The port to listen on (0 picks a free one)."
  }),
  host: exact(Schema.String.pipe(Schema.minLength(1))).annotations({
    description: "The address to listen on (default 127.0.0.1). Anything but loopback needs a `token`."
  }),
  token: exact(Schema.String.pipe(Schema.minLength(16, { message: () => "at least 16 characters" }))).annotations({
    description: "A bearer token every request must carry (`Authorization: Bearer <token>`)."
  }),
  allowedOrigins: exact(Schema.Array(Schema.String)).annotations({
    description: "Origins allowed besides the loopback ones, as hostnames (any port): `https://app.example.com` " +
      "is read as its hostname, and `<scheme>://*` allows a whole scheme (browser extensions). A request from " +
      "any other Origin gets 403."
  }),
  allowedHosts: exact(Schema.Array(Schema.String)).annotations({
    description: "Host header names allowed besides the loopback ones and the bound host (against DNS rebinding)."
  })
}
