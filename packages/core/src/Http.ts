/**
 * What the fleet's HTTP servers (the MCP endpoint, the dashboard) share: one stack, `HttpRouter` routes served by
 * `NodeHttpServer` for the life of a scope (`serve`), a path's methods as one route that answers 405 with `Allow`
 * for the others (`methods`), a body read under a bound (`bodyText`), a fetch-style handler's `Response` as the
 * answer (`respondWeb`), and the host names the guards (`HttpGuard`) compare (the plain rules of a server section
 * are ServerSection's). This is the one module that touches `node:http`.
 */
import type { HttpApp } from "@effect/platform"
import {
  HttpIncomingMessage,
  HttpMiddleware,
  HttpRouter,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import { NodeHttpServer, NodeHttpServerRequest } from "@effect/platform-node"
import { Cause, Context, Data, Effect, Layer, Option, Predicate } from "effect"
import type { Redacted, Scope } from "effect"
import * as http from "node:http"
import type { Html } from "./Markup.js"
import type { StoreUnavailable } from "./StoreErrors.js"

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

/** What a mounted part learns of the server it is mounted on: who it answers to and its token. */
export interface MountedOn {
  readonly host: string
  readonly allowedHosts: ReadonlyArray<string>
  readonly token: Option.Option<Redacted.Redacted<string>>
}

/** A section a package adds to one of the dashboard's pages, rendered each time the page is. */
export interface Panel {
  /** The dashboard page it shows on (`schedule`). */
  readonly page: string
  readonly render: Effect.Effect<Html, StoreUnavailable>
}

/**
 * What a package contributes to the fleet's HTTP stack: routes, built for each fleet server with its settings (so
 * behind that server's guard), and panels for the dashboard. `root`: its routes answer the paths no route takes
 * (the dashboard, sharing the MCP server's port).
 */
export interface Contribution {
  readonly name: string
  readonly routes?: (server: MountedOn) => Routes
  readonly root?: boolean
  readonly panels?: ReadonlyArray<Panel>
}

/**
 * The one seam through which packages mount routes and panels: contributions accumulate (two packages never
 * shadow each other), each kept for the life of the layer that made it. The engine's layer provides it.
 */
export class Contributions extends Context.Tag("@flotta/core/Http/Contributions")<Contributions, {
  readonly add: (contribution: Contribution) => Effect.Effect<void, never, Scope.Scope>
  readonly all: Effect.Effect<ReadonlyArray<Contribution>>
}>() {
  static readonly layer: Layer.Layer<Contributions> = Layer.sync(Contributions, () => {
    const kept = new Set<Contribution>()
    return {
      add: (contribution) =>
        Effect.acquireRelease(
          Effect.sync(() => kept.add(contribution)),
          () => Effect.sync(() => kept.delete(contribution))
        ),
      all: Effect.sync(() => [...kept])
    }
  })
}

/** A layer that contributes, for as long as it lives. */
export const contribute = <E, R>(
  contribution: Effect.Effect<Contribution, E, R>
): Layer.Layer<never, E, Contributions | Exclude<R, Scope.Scope>> =>
  Layer.scopedDiscard(Effect.flatMap(Effect.zip(Contributions, contribution), ([seam, made]) => seam.add(made)))

const contributions = Effect.map(
  Effect.serviceOption(Contributions),
  Option.match({
    onNone: () => Effect.succeed<ReadonlyArray<Contribution>>([]),
    onSome: (seam) => seam.all
  })
).pipe(Effect.flatten)

/** The contributed routes for a server: those that answer unknown paths (`root`) first, then the rest. */
export const mountedOn = Effect.fnUntraced(function*(server: MountedOn) {
  return yield* Effect.map(contributions, (all) => ({
    root: all.flatMap((c) => (c.root === true && c.routes !== undefined ? [c.routes(server)] : [])),
    rest: all.flatMap((c) => (c.root !== true && c.routes !== undefined ? [c.routes(server)] : []))
  }))
})

/** The contributed panels of a dashboard page, in the order they were contributed. */
export const panels = Effect.fnUntraced(function*(page: string) {
  return yield* Effect.map(
    contributions,
    (all) => all.flatMap((c) => (c.panels ?? []).filter((panel) => panel.page === page))
  )
})

type Method = "GET" | "HEAD" | "POST" | "DELETE" | "PUT" | "PATCH"

/**
 * One path's handlers by method, as a single route: any other method gets 405 with `Allow` (a method no route
 * takes, TRACE included, never reaches a handler). `refuse` writes the 405 in the server's own format.
 */
export const methods = Effect.fnUntraced(
  function*<R>(
    handlers: Partial<Record<Method, Effect.Effect<HttpServerResponse.HttpServerResponse, never, R>>>,
    refuse: (status: 405, message: string) => HttpServerResponse.HttpServerResponse
  ) {
    const allow = Object.keys(handlers).join(", ")
    const byMethod: Readonly<
      Record<string, Effect.Effect<HttpServerResponse.HttpServerResponse, never, R> | undefined>
    > = handlers
    return yield* Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
      const handler = Object.hasOwn(byMethod, request.method) ? byMethod[request.method] : undefined
      return handler ?? Effect.succeed(
        HttpServerResponse.setHeader(
          refuse(405, `${request.method} is not supported here: use ${allow}`),
          "allow",
          allow
        )
      )
    })
  }
)

/** Adds the route `path` (every method) to a router: see `methods`. */
export const route =
  <R>(path: HttpRouter.PathInput, handler: HttpRouter.Route.Handler<never, R>) =>
  <E0, R0>(router: HttpRouter.HttpRouter<E0, R0>) => HttpRouter.all(router, path, handler)

/**
 * The parts' routes as one app: the first part's `notFound` answers a path that no route takes, and a defect is
 * logged and answered with 500. What `serve` serves, and what an in-process client calls (`HttpApp.toWebHandler`).
 */
export const toApp = Effect.fnUntraced(function*(parts: ReadonlyArray<Routes>) {
  return yield* Effect.map(
    HttpRouter.toHttpApp(HttpRouter.concatAll(...parts.map((part) => part.router))),
    (app) =>
      app.pipe(
        Effect.catchTag(
          "RouteNotFound",
          () => parts[0]?.notFound ?? Effect.succeed(HttpServerResponse.empty({ status: 404 }))
        ),
        Effect.catchAllCause((cause) =>
          // Interrupted only: the client went away mid-answer, or the server is closing; nothing failed.
          Cause.isInterruptedOnly(cause)
            ? Effect.succeed(HttpServerResponse.empty({ status: 503 }))
            : Effect.as(Effect.logError("HTTP: request failed", cause), HttpServerResponse.empty({ status: 500 }))
        )
      )
  )
})

/**
 * How long a client is told it may keep an idle connection (`Keep-Alive: timeout=5`), and how long the server
 * really keeps one. Told the real figure, a client lets go a little before it (undici: 2 s), a margin a loaded
 * event loop eats: it then sends a request on a socket the server is closing, and gets ECONNRESET. The server
 * keeps it far longer, so whoever closes an idle connection is the client.
 */
const IDLE_TOLD_S = 5
const IDLE_KEPT_MS = 60_000

/** A body the server will not read: over its bound (413), or cut off before its end (400). */
export class BodyRefused extends Data.TaggedError("BodyRefused")<{
  readonly status: 400 | 413
  readonly reason: string
}> {
  override get message() {
    return this.reason
  }
}

const tooLarge = (maxBytes: number) =>
  new BodyRefused({ status: 413, reason: `Payload Too Large: Request body must not exceed ${maxBytes} bytes` })
const cutOff = new BodyRefused({ status: 400, reason: "the request body was cut off" })

/** A body off the socket, straight from Node's request: the platform's own reader cost an MCP call 0.1 ms. */
const readNode = (source: http.IncomingMessage, maxBytes: number) =>
  Effect.async<string, BodyRefused>((resume) => {
    const chunks: Array<Buffer> = []
    let size = 0
    const stop = () => {
      source.off("data", onData).off("end", onEnd).off("close", onClose).off("error", onClose)
    }
    function onData(chunk: Buffer) {
      size += chunk.length
      if (size <= maxBytes) return void chunks.push(chunk)
      stop()
      resume(Effect.fail(tooLarge(maxBytes)))
    }
    function onEnd() {
      stop()
      resume(Effect.succeed(Buffer.concat(chunks).toString("utf8")))
    }
    function onClose() {
      stop()
      resume(Effect.fail(cutOff))
    }
    source.on("data", onData).on("end", onEnd).on("close", onClose).on("error", onClose)
    return Effect.sync(stop)
  })

/**
 * The request's body as text, refused over `maxBytes` (by its Content-Length before a byte is read). Off the
 * socket it is read from Node's request; in process (`HttpApp.toWebHandler`) through the platform.
 */
export const bodyText = Effect.fnUntraced(function*(maxBytes: number) {
  return yield* Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    if (Number(request.headers["content-length"]) > maxBytes) return Effect.fail(tooLarge(maxBytes))
    const source = request.source
    return source instanceof http.IncomingMessage
      ? readNode(source, maxBytes)
      : request.text.pipe(
        HttpIncomingMessage.withMaxBodySize(Option.some(maxBytes)),
        Effect.mapError((error) =>
          Predicate.hasProperty(error.cause, "message") && error.cause.message === "maxBytes exceeded"
            ? tooLarge(maxBytes)
            : cutOff
        )
      )
  })
})

/**
 * Headers about the connection, not the response (RFC 9110 §7.6.1): the server's own to write. The MCP SDK sends
 * `Connection: keep-alive` with every SSE answer; passed on, it kept Node from telling the client how long an
 * idle connection is kept, so the client guessed (undici: 4 s against Node's 5 s) and, under load, reused one the
 * server was closing at that moment: ECONNRESET.
 */
const HOP_BY_HOP = new Set(["connection", "keep-alive", "transfer-encoding", "upgrade", "proxy-connection"])

/** A web body written to Node's response as it comes, minding back-pressure; it ends when the client goes. */
const writeNode = (body: ReadableStream<Uint8Array>, response: http.ServerResponse) =>
  Effect.async<void>((resume) => {
    const reader = body.getReader()
    let drained: (() => void) | undefined
    let ended = false
    const finish = () => {
      if (ended) return
      ended = true
      response.off("close", onClose)
      // Not waiting for `finish`: a response whose client is gone never emits it.
      response.end()
      resume(Effect.void)
    }
    const pump = (): void => {
      reader.read().then(({ done, value }) => {
        if (done || response.destroyed) return finish()
        if (response.write(value)) return pump()
        drained = () => {
          drained = undefined
          pump()
        }
        response.once("drain", drained)
      }, finish) // The SDK ends an SSE stream by erroring it: the response ends cleanly, as its own Node adapter does.
    }
    function onClose() {
      reader.cancel().catch(() => undefined)
      drained?.()
    }
    response.once("close", onClose)
    pump()
    return Effect.sync(onClose)
  })

/**
 * A fetch-style handler's `Response` (the MCP SDK's) as the answer to the current request, without the headers
 * about the connection. Off the socket it is written straight to Node's response, chunk by chunk (through a
 * platform stream or a pipeline, each MCP tool call cost 0.4 ms more); in process the body passes through.
 */
export const respondWeb = Effect.fnUntraced(function*(response: Response) {
  return yield* Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const headers: Record<string, string> = {}
    for (const [name, value] of response.headers) if (!HOP_BY_HOP.has(name)) headers[name] = value
    const options = { status: response.status, headers }
    if (!(request.source instanceof http.IncomingMessage)) {
      return Effect.succeed(
        response.body === null ? HttpServerResponse.empty(options) : HttpServerResponse.raw(response.body, options)
      )
    }
    // Written here, the answer is done before the platform would write it: it sees the response ended.
    const node = NodeHttpServerRequest.toServerResponse(request)
    node.writeHead(response.status, { ...headers, "keep-alive": `timeout=${IDLE_TOLD_S}` })
    const written = response.body === null ? Effect.sync(() => void node.end()) : writeNode(response.body, node)
    return Effect.as(written, HttpServerResponse.empty(options))
  })
})

/** Effect's own tracer, which keeps spans in memory only: the one in place when no exporter is. */
const NATIVE_TRACER = Effect.runSync(Effect.tracer)

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
 * Serves the parts (`toApp`) on `host:port` until the scope closes, and says where it listens.
 * Closing drops open connections: SSE streams and keep-alive sockets would otherwise hold the close forever.
 */
export const serve = Effect.fnUntraced(function*<E>(parts: ReadonlyArray<Routes>, options: ServeOptions<E>) {
  const node = http.createServer()
  node.headersTimeout = 30_000
  node.keepAliveTimeout = IDLE_KEPT_MS
  if (options.requestTimeout !== undefined) node.requestTimeout = options.requestTimeout
  const server = yield* NodeHttpServer.make(() => node, { port: options.port, host: options.host }).pipe(
    Effect.catchTag(
      "ServeError",
      (error) => Effect.fail(options.fail(reasonOf(error.cause, options.port, options.host)))
    )
  )
  // A span per request only when spans go somewhere (OpenTelemetry): made for nothing, it cost a tool call 0.07 ms.
  const untraced = (yield* Effect.tracer) === NATIVE_TRACER
  yield* server.serve(
    Effect.map(
      yield* toApp(parts),
      (response) => HttpServerResponse.setHeader(response, "keep-alive", `timeout=${IDLE_TOLD_S}`)
    )
  ).pipe(HttpMiddleware.withTracerDisabledWhenEffect(() => untraced))
  // Runs before the platform's own close, which alone would wait for open streams forever.
  yield* Effect.addFinalizer(() =>
    Effect.async<void>((resume) => {
      node.close(() => resume(Effect.void))
      node.closeAllConnections()
    })
  )
  const address = server.address
  const host = address._tag === "TcpAddress" ? address.hostname : options.host
  const port = address._tag === "TcpAddress" ? address.port : options.port
  return { origin: `http://${host.includes(":") ? `[${host}]` : host}:${port}`, host, port }
})
