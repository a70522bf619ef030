/**
 * The one HTTP stack on a real loopback port: a body read under its bound (`bodyText`), whether it says its
 * length or not, and a fetch-style `Response` written as the answer (`respondWeb`), streamed as its body yields,
 * without the headers about the connection, ended cleanly when its body errors, and let go when the client goes.
 */
import { HttpRouter, HttpServerResponse } from "@effect/platform"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Either, Exit, Layer, Option, Runtime, Scope } from "effect"
import * as http from "node:http"
import type { UnderlyingSource } from "node:stream/web"
import * as Http from "../src/Http.js"
import { html } from "../src/Markup.js"

interface Reply {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly body: string
}

/** One raw request; `chunks` are written one by one (chunked, no Content-Length). */
const send = (port: number, path: string, chunks: ReadonlyArray<string> = []) =>
  Effect.async<Reply, Error>((resume) => {
    const request = http.request({ host: "127.0.0.1", port, path, method: "POST", agent: false }, (response) => {
      let body = ""
      response.setEncoding("utf8")
      response.on("data", (chunk: string) => (body += chunk))
      response.on(
        "end",
        () => resume(Effect.succeed({ status: response.statusCode ?? 0, headers: response.headers, body }))
      )
    })
    request.on("error", (error) => resume(Effect.fail(error)))
    for (const chunk of chunks) request.write(chunk)
    request.end()
  })

const MAX = 1024

const serve = (routes: HttpRouter.HttpRouter) =>
  Http.serve([{ router: routes, notFound: Effect.succeed(HttpServerResponse.empty({ status: 404 })) }], {
    port: 0,
    host: "127.0.0.1",
    fail: (reason) => new Error(reason)
  })

/** Answers with the body's length, or with the refusal's status and reason. */
const echo = Effect.gen(function*() {
  const read = yield* Effect.either(Http.bodyText(MAX))
  return Either.match(read, {
    onLeft: (refused) => HttpServerResponse.text(refused.reason, { status: refused.status }),
    onRight: (text) => HttpServerResponse.text(`read ${text.length}`)
  })
})

/** A route answering with an event stream from `source` (a fresh stream per request). */
const eventStream = (source: UnderlyingSource<Uint8Array>, headers: Record<string, string> = {}) =>
  Effect.suspend(() =>
    Http.respondWeb(
      new Response(new ReadableStream(source), { headers: { "content-type": "text/event-stream", ...headers } })
    )
  )

describe("Http", () => {
  it.scoped("reads a body under its bound, and refuses one over it whether it gives its length or not", () =>
    Effect.gen(function*() {
      const refused = yield* Deferred.make<string>()
      const reading = yield* Deferred.make<void>()
      const server = yield* serve(HttpRouter.empty.pipe(
        HttpRouter.post("/echo", echo),
        HttpRouter.post(
          "/cut",
          Effect.flatMap(
            Effect.zipRight(Deferred.succeed(reading, undefined), Effect.either(Http.bodyText(MAX))),
            (read) =>
              Effect.as(
                Deferred.succeed(refused, Either.isLeft(read) ? read.left.reason : "read whole"),
                HttpServerResponse.empty()
              )
          ).pipe(Effect.onInterrupt(() => Deferred.succeed(refused, "interrupted")))
        )
      ))
      const small = yield* send(server.port, "/echo", ["a".repeat(300), "b".repeat(300)])
      assert.deepStrictEqual([small.status, small.body], [200, "read 600"])
      // Chunked, so the bound is met while reading, not by a Content-Length.
      const big = yield* send(server.port, "/echo", ["a".repeat(600), "b".repeat(600)])
      assert.strictEqual(big.status, 413)
      assert.match(big.body, /must not exceed 1024 bytes/)
      // The client goes before the body's end: the read ends (the platform interrupts a request whose client is
      // gone, so which of the two ends it is a race), and the server goes on serving.
      const cut = http.request({ host: "127.0.0.1", port: server.port, path: "/cut", method: "POST", agent: false })
      cut.on("error", () => undefined)
      cut.write("a".repeat(100))
      yield* Deferred.await(reading)
      cut.destroy()
      assert.include(["the request body was cut off", "interrupted"], yield* Deferred.await(refused))
      assert.strictEqual((yield* send(server.port, "/echo", ["abc"])).body, "read 3")
    }))

  it.scoped("writes a web Response as it streams, without the headers about the connection", () =>
    Effect.gen(function*() {
      const encoder = new TextEncoder()
      const events = ["data: one\n\n", "data: two\n\n"]
      const server = yield* serve(HttpRouter.empty.pipe(
        HttpRouter.post(
          "/sse",
          eventStream({
            pull(controller) {
              const next = events.shift()
              // The MCP SDK ends an SSE stream by erroring it: the answer still ends cleanly.
              if (next === undefined) controller.error(new Error("stream closed"))
              else controller.enqueue(encoder.encode(next))
            }
          }, { connection: "keep-alive" })
        ),
        HttpRouter.post("/empty", Effect.suspend(() => Http.respondWeb(new Response(null, { status: 202 }))))
      ))
      const sse = yield* send(server.port, "/sse")
      assert.strictEqual(sse.status, 200)
      assert.strictEqual(sse.body, "data: one\n\ndata: two\n\n")
      assert.strictEqual(sse.headers["content-type"], "text/event-stream")
      assert.strictEqual(sse.headers["keep-alive"], "timeout=5")
      assert.strictEqual(sse.headers["connection"], "close")
      const empty = yield* send(server.port, "/empty")
      assert.deepStrictEqual([empty.status, empty.body], [202, ""])
    }))

  it.scoped("stops reading a Response's body once the client goes", () =>
    Effect.gen(function*() {
      const cancelled = yield* Deferred.make<void>()
      const runtime = yield* Effect.runtime<never>()
      const server = yield* serve(HttpRouter.empty.pipe(
        HttpRouter.post(
          "/forever",
          eventStream({
            start(controller) {
              controller.enqueue(new TextEncoder().encode("data: first\n\n"))
            },
            cancel() {
              Runtime.runSync(runtime)(Deferred.succeed(cancelled, undefined))
            }
          })
        )
      ))
      yield* Effect.async<void>((resume) => {
        const request = http.request(
          { host: "127.0.0.1", port: server.port, path: "/forever", method: "POST", agent: false },
          (response) => response.once("data", () => (request.destroy(), resume(Effect.void)))
        )
        request.end()
      })
      yield* Deferred.await(cancelled)
    }))
})

describe("Http.Contributions", () => {
  const server: Http.MountedOn = { host: "127.0.0.1", allowedHosts: [], token: Option.none() }
  const routes = (text: string): Http.Routes => ({
    router: HttpRouter.empty.pipe(HttpRouter.get(`/${text}`, HttpServerResponse.text(text))),
    notFound: Effect.succeed(HttpServerResponse.empty({ status: 404 }))
  })
  const contribution = (name: string, root = false): Http.Contribution => ({
    name,
    root,
    routes: () => routes(name),
    panels: [{ page: "schedule", render: Effect.succeed(html`<p>${name}</p>`) }]
  })

  it.effect("accumulate: two packages contributing side by side both mount and show; none shadows the other", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const both = Layer.mergeAll(
        Http.contribute(Effect.succeed(contribution("one"))),
        Http.contribute(Effect.succeed(contribution("two"))),
        Http.contribute(Effect.succeed(contribution("pages", true)))
      ).pipe(Layer.provideMerge(Http.Contributions.layer))
      const context = yield* Layer.buildWithScope(both, scope)
      const seen = yield* Effect.provide(
        Effect.all({ mounted: Http.mountedOn(server), panels: Http.panels("schedule"), none: Http.panels("costs") }),
        context
      )
      assert.strictEqual(seen.mounted.root.length, 1, "the one that answers unknown paths")
      assert.strictEqual(seen.mounted.rest.length, 2)
      const texts = yield* Effect.forEach(seen.panels, (panel) => Effect.map(panel.render, (h) => h.value))
      assert.deepStrictEqual([...texts].sort(), ["<p>one</p>", "<p>pages</p>", "<p>two</p>"])
      assert.deepStrictEqual(seen.none, [])
      // A contribution lasts as long as the layer that made it.
      yield* Scope.close(scope, Exit.void)
      const after = yield* Effect.provide(Http.panels("schedule"), context)
      assert.deepStrictEqual(after, [])
    }))

  it.effect("none without the seam: a server mounts nothing more", () =>
    Effect.gen(function*() {
      const mounted = yield* Http.mountedOn(server)
      assert.deepStrictEqual([mounted.root.length, mounted.rest.length], [0, 0])
    }))
})
