/**
 * The server on a real loopback port: both eras over the socket, the Host/Origin guards (DNS rebinding), the
 * bearer token, the refusal of an unauthenticated non-loopback bind, config-driven composition, legacy session
 * bookkeeping (DELETE, expiry, cap), 405 and 404 from the one HTTP stack, the body bound, a port shared with
 * other routes (the dashboard's), and no port left open once the layer's scope closes. The fleet is the
 * in-memory Claude (no process) and every timer runs on the TestClock; a socket is the only real thing here.
 */
import { HttpRouter, HttpServerResponse } from "@effect/platform"
import { assert, describe, it } from "@effect/vitest"
import * as Http from "@flotta/core/Http"
import * as HttpGuard from "@flotta/core/HttpGuard"
import { Context, Duration, Effect, Exit, Fiber, Layer, Option, Scope, TestClock } from "effect"
import * as http from "node:http"
import * as net from "node:net"
import * as McpConfig from "../src/McpConfig.js"
import * as McpServer from "../src/McpServer.js"
import type { Era } from "./support.js"
import { armed, call, connect, ERAS, fleet, forkArmed, recordingTracer, structured, until } from "./support.js"

const TOKEN = "test-token-0123456789abcdef"

const INITIALIZE = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "0" } }
})

/** One raw HTTP request (node:http, so the Host header and the method can be anything). */
const send = (method: string, url: string, headers: Record<string, string>, body?: string) =>
  Effect.async<{ status: number; headers: http.IncomingHttpHeaders; body: string }, Error>((resume) => {
    const request = http.request(url, {
      method,
      agent: false,
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        ...headers
      }
    }, (response) => {
      let text = ""
      response.setEncoding("utf8")
      response.on("data", (chunk: string) => (text += chunk))
      response.on(
        "end",
        () => resume(Effect.succeed({ status: response.statusCode ?? 0, headers: response.headers, body: text }))
      )
    })
    request.on("error", (error) => resume(Effect.fail(error)))
    request.end(body)
  })

/** One raw HTTP POST, an `initialize` by default. */
const post = (url: string, headers: Record<string, string>, body = INITIALIZE) => send("POST", url, headers, body)

/**
 * A layer built in the test's scope. The server's idle-session sweeper sleeps on the TestClock from the start, and
 * a TestClock slept on but never moved starts a live 5 s timer to warn that the test may hang: moving it by
 * nothing says the test drives it, which ends that warning.
 */
const built = <A, E>(layer: Layer.Layer<A, E>) =>
  Layer.build(layer).pipe(Effect.tap(() => TestClock.adjust(Duration.zero)))

/** The server's layer over a fresh in-memory fleet, built in the test's scope. */
const serve = (config: McpConfig.McpConfigInput = {}) =>
  built(McpServer.layer({ port: 0, ...config }).pipe(Layer.provide(fleet()))).pipe(
    Effect.map(Context.get(McpServer.McpServer))
  )

const overSocket = (url: string, era: Era, headers: Record<string, string> = {}) =>
  connect((request) => fetch(request), era, url, headers)

const freePort = Effect.async<number>((resume) => {
  const server = net.createServer()
  server.listen(0, "127.0.0.1", () => {
    const { port } = server.address() as net.AddressInfo
    server.close(() => resume(Effect.succeed(port)))
  })
})

const refused = (url: string) =>
  post(url, {}).pipe(Effect.match({ onFailure: (e) => /ECONNREFUSED/.test(String(e)), onSuccess: () => false }))

describe("the MCP server on a loopback port", () => {
  it.scoped("serves both eras on 127.0.0.1 and closes the port with its scope", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const server = yield* serve().pipe(Scope.extend(scope))
      assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+\/mcp$/)
      for (const era of ERAS) {
        const client = yield* overSocket(server.url, era).pipe(Scope.extend(scope))
        yield* call(client, "flotta_spawn", { name: `a-${era.era}` })
        const reply = structured<{ result: { text: string } }>(
          yield* call(client, "flotta_ask", { name: `a-${era.era}`, text: "hello" })
        )
        assert.strictEqual(reply.result.text, "echo: hello")
      }
      yield* Scope.close(scope, Exit.void)
      assert.isTrue(yield* refused(server.url), "the port is still open")
    }))

  it.scoped("over the socket, a client's cancellation reaches the running wait in both eras", () => {
    const { ended, endedSpan, tracer } = recordingTracer()
    return Effect.gen(function*() {
      const server = yield* serve()
      for (const era of ERAS) {
        const client = yield* overSocket(server.url, era)
        const name = `patient-${era.era}`
        yield* call(client, "flotta_spawn", { name })
        yield* call(client, "flotta_prompt", { name, text: "slow 1500 unbothered" })
        const abort = new AbortController()
        // Running on the server once its 45 s bound is armed.
        const waiting = yield* forkArmed(
          Effect.promise(() =>
            client.callTool({ name: "flotta_wait", arguments: { name, turnId: "t1" } }, {
              signal: abort.signal,
              onprogress: () => {}
            }).then(() => "answered", () => "rejected")
          ),
          "45 seconds"
        )
        const before = ended.length
        abort.abort()
        assert.strictEqual(yield* Fiber.join(waiting), "rejected")
        // The clock stands still, so only the cancellation can end the wait, and it must do so while the
        // client is still connected (a cancel that only arrives when the connection closes never would).
        const span = yield* endedSpan("mcp.flotta_wait", before)
        assert.isTrue(Exit.isInterrupted(span.exit), `${era.era}: the wait ended, but not by the cancellation`)
        yield* TestClock.adjust("1500 millis")
        const done = structured<{ result: { text: string } }>(
          yield* call(client, "flotta_wait", { name, turnId: "t1" })
        )
        assert.strictEqual(done.result.text, "slow done unbothered")
      }
    }).pipe(Effect.withTracer(tracer))
  })

  it.scoped("validates Host and Origin on every request: a foreign Origin gets 403 (DNS rebinding)", () =>
    Effect.gen(function*() {
      const server = yield* serve({ allowedOrigins: ["https://app.example.com:8443"] })
      const host = `127.0.0.1:${server.port}`
      const evil = yield* post(server.url, { host, origin: "http://evil.example" })
      assert.strictEqual(evil.status, 403)
      assert.match(evil.body, /origin/i)
      assert.strictEqual((yield* post(server.url, { host, origin: "null" })).status, 403)
      const rebound = yield* post(server.url, { host: `attacker.example:${server.port}` })
      assert.strictEqual(rebound.status, 403)
      // Loopback origins, configured ones, and clients that send no Origin pass.
      assert.strictEqual((yield* post(server.url, { host, origin: `http://localhost:${server.port}` })).status, 200)
      assert.strictEqual((yield* post(server.url, { host, origin: "https://app.example.com" })).status, 200)
      assert.strictEqual((yield* post(server.url, { host: `localhost:${server.port}` })).status, 200)
      // Guards come before routing: a modern request from a foreign origin is refused the same way.
      const modern = yield* post(server.url, {
        host,
        origin: "http://evil.example",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/list"
      }, JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }))
      assert.strictEqual(modern.status, 403)
      assert.strictEqual((yield* post(server.url.replace("/mcp", "/other"), { host })).status, 404)
    }))

  it.scoped("with a token, a missing or wrong one gets 401 and the right one works in both eras", () =>
    Effect.gen(function*() {
      const server = yield* serve({ token: TOKEN })
      const host = `127.0.0.1:${server.port}`
      const missing = yield* post(server.url, { host })
      assert.strictEqual(missing.status, 401)
      assert.match(String(missing.headers["www-authenticate"]), /^Bearer/)
      assert.strictEqual((yield* post(server.url, { host, authorization: "Bearer wrong-token" })).status, 401)
      assert.strictEqual((yield* post(server.url, { host, authorization: `Basic ${TOKEN}` })).status, 401)
      assert.strictEqual((yield* post(server.url, { host, authorization: `Bearer ${TOKEN}x` })).status, 401)
      assert.strictEqual((yield* post(server.url, { host, authorization: `Bearer ${TOKEN}` })).status, 200)
      for (const era of ERAS) {
        const client = yield* overSocket(server.url, era, { authorization: `Bearer ${TOKEN}` })
        assert.deepStrictEqual(structured(yield* call(client, "flotta_list")), { agents: [] })
      }
    }))

  it.scoped("refuses to bind beyond loopback without a token, with a clear message", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(serve({ host: "0.0.0.0" }))
      assert.isTrue(Exit.isFailure(exit))
      const error = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined
      assert.instanceOf(error, McpConfig.McpConfigError)
      assert.match(String(error?.message), /0\.0\.0\.0 .*no token.*FLOTTA_MCP_TOKEN.*127\.0\.0\.1/)
      const short = yield* Effect.exit(serve({ token: "short" }))
      assert.isTrue(Exit.isFailure(short))
      // With a token it starts.
      const open = yield* serve({ host: "0.0.0.0", token: TOKEN })
      assert.strictEqual(
        (yield* post(`http://127.0.0.1:${open.port}/mcp`, { authorization: `Bearer ${TOKEN}` })).status,
        200
      )
    }))

  it.scoped("the layer opens a port only when the config has an mcp section", () =>
    Effect.gen(function*() {
      const port = yield* freePort
      const url = `http://127.0.0.1:${port}/mcp`
      const build = (section: McpConfig.FileSection | undefined) =>
        built(McpServer.layer(McpConfig.fromFile(section)).pipe(Layer.provide(fleet())))
      yield* Effect.scoped(Effect.gen(function*() {
        yield* build(undefined)
        assert.isTrue(yield* refused(url))
        yield* build({ enabled: false, port })
        assert.isTrue(yield* refused(url))
      }))
      yield* Effect.scoped(Effect.gen(function*() {
        yield* build({ port })
        assert.strictEqual((yield* post(url, { host: `127.0.0.1:${port}` })).status, 200)
      }))
      assert.isTrue(yield* refused(url), "the port outlived the layer")
    }))

  it.scoped("legacy sessions: DELETE ends one, an unknown id gets 404, idle ones expire, the cap holds", () =>
    Effect.gen(function*() {
      const server = yield* serve({ sessionIdleTimeout: "1 minute", maxSessions: 2 })
      const legacy = ERAS[0]
      const scope = yield* Scope.make()
      const first = yield* overSocket(server.url, legacy).pipe(Scope.extend(scope))
      assert.strictEqual(server.handler.sessions(), 1)
      const transport = first.transport as unknown as { terminateSession: () => Promise<void> }
      yield* Effect.promise(() => transport.terminateSession())
      assert.strictEqual(server.handler.sessions(), 0)
      const stale = yield* post(server.url, { host: `127.0.0.1:${server.port}`, "mcp-session-id": "no-such-session" })
      assert.strictEqual(stale.status, 404)

      yield* overSocket(server.url, legacy).pipe(Scope.extend(scope))
      yield* overSocket(server.url, legacy).pipe(Scope.extend(scope))
      const newest = yield* overSocket(server.url, legacy).pipe(Scope.extend(scope))
      assert.strictEqual(server.handler.sessions(), 2, "the cap was not enforced")
      // A legacy client that keeps no session id is still served (statelessly).
      const stateless = yield* post(
        server.url,
        {
          host: `127.0.0.1:${server.port}`,
          "mcp-protocol-version": "2025-11-25"
        },
        JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "flotta_list", arguments: {} } })
      )
      assert.strictEqual(stateless.status, 200)
      assert.include(stateless.body, "\"agents\":[]")
      assert.deepStrictEqual(structured(yield* call(newest, "flotta_list")), { agents: [] })
      // Idle sessions expire on the clock (swept every 15 s here): none before its idle minute, all after it.
      yield* TestClock.adjust("59 seconds")
      yield* armed("1 second") // the sweep at 45 s is done: the next one is due at 60 s
      assert.strictEqual(server.handler.sessions(), 2, "a session was closed before its idle time")
      yield* TestClock.adjust("1 second")
      yield* until(Effect.sync(() => server.handler.sessions()), (n) => n === 0, "the idle sessions to close")
      yield* Scope.close(scope, Exit.void)
    }))

  it.scoped("answers 405 with Allow for a method the endpoint does not take, and 404 for a path that is no route", () =>
    Effect.gen(function*() {
      const server = yield* serve()
      const host = `127.0.0.1:${server.port}`
      const base = `http://${host}`
      // [method, path, status]: TRACE once answered 500, and every path under /mcp/ reached the endpoint.
      const table: Array<[string, string, number]> = [
        ["TRACE", "/mcp", 405],
        ["PUT", "/mcp", 405],
        ["OPTIONS", "/mcp", 405],
        ["PATCH", "/mcp", 405],
        ["TRACE", "/mcp/anything", 404],
        ["GET", "/mcp/anything", 404],
        ["POST", "/mcp/tools", 404],
        ["DELETE", "/mcp/x/y", 404],
        ["GET", "/", 404],
        ["TRACE", "/", 404],
        ["POST", "/other", 404]
      ]
      for (const [method, path, status] of table) {
        const reply = yield* send(method, `${base}${path}`, { host }, method === "POST" ? INITIALIZE : undefined)
        assert.strictEqual(reply.status, status, `${method} ${path}: ${reply.body}`)
        if (status === 405) assert.strictEqual(reply.headers["allow"], "POST, GET, DELETE", `${method} ${path}`)
        if (method !== "HEAD") assert.strictEqual(JSON.parse(reply.body).jsonrpc, "2.0", `${method} ${path}`)
      }
      // The guards come first, for a path that is no route too.
      assert.strictEqual((yield* send("TRACE", `${base}/mcp`, { host: "attacker.example" })).status, 403)
      assert.strictEqual((yield* send("GET", `${base}/nowhere`, { host, origin: "http://evil.example" })).status, 403)
    }))

  it.scoped("refuses a body over 4 MiB with 413 before reading it whole", () =>
    Effect.gen(function*() {
      const server = yield* serve()
      const host = `127.0.0.1:${server.port}`
      const big = JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/list",
        params: { pad: "x".repeat(5 * 1024 * 1024) }
      })
      const reply = yield* post(server.url, { host }, big)
      assert.strictEqual(reply.status, 413)
      assert.match(reply.body, /Payload Too Large/)
    }))

  it.scoped("serves what two packages contribute beside /mcp: the root one's takes every other path, each guarded", () =>
    Effect.gen(function*() {
      // As the dashboard contributes when it shares this port: it answers the paths no route takes.
      const shared = Http.contribute(Effect.succeed<Http.Contribution>({
        name: "pages",
        root: true,
        routes: () => ({
          router: HttpRouter.empty.pipe(HttpRouter.get("/page", HttpServerResponse.text("a page"))),
          notFound: Effect.succeed(HttpServerResponse.text("theirs: not found", { status: 404 }))
        })
      }))
      // As the webhooks contribute: routes behind the server's own Host and Origin rules (its guard).
      const hooks = Http.contribute(Effect.succeed<Http.Contribution>({
        name: "hooks",
        routes: (on) => {
          const guard = HttpGuard.make({
            host: on.host,
            allowedHosts: on.allowedHosts,
            allowedOrigins: [],
            origins: "same-origin",
            originlessPosts: "allow",
            token: Option.none(),
            requireToken: false,
            refuse: (status, message) => HttpServerResponse.text(message, { status })
          })
          return {
            router: HttpRouter.empty.pipe(
              HttpRouter.get("/hook", guard(Effect.succeed(HttpServerResponse.text("a hook"))))
            ),
            notFound: Effect.succeed(HttpServerResponse.empty({ status: 404 }))
          }
        }
      }))
      const server = yield* built(
        McpServer.layer({ port: 0 }).pipe(
          // Merged side by side: neither shadows the other.
          Layer.provide(Layer.mergeAll(shared, hooks)),
          Layer.provideMerge(fleet())
        )
      ).pipe(Effect.map(Context.get(McpServer.McpServer)))
      const host = `127.0.0.1:${server.port}`
      const base = `http://${host}`
      assert.strictEqual((yield* post(server.url, { host })).status, 200)
      assert.strictEqual((yield* send("GET", `${base}/page`, { host })).body, "a page")
      assert.strictEqual((yield* send("GET", `${base}/hook`, { host })).body, "a hook")
      const foreign = yield* send("GET", `${base}/hook`, { host: "evil.example" })
      assert.strictEqual(foreign.status, 403, "the guard applies to a contributed route")
      for (const path of ["/mcp/anything", "/nowhere"]) {
        const reply = yield* send("GET", `${base}${path}`, { host })
        assert.deepStrictEqual([reply.status, reply.body], [404, "theirs: not found"], path)
      }
      const trace = yield* send("TRACE", server.url, { host })
      assert.deepStrictEqual([trace.status, trace.headers["allow"]], [405, "POST, GET, DELETE"])
    }))
})
