/**
 * The dashboard's HTTP handler: the guards, then the routes. It is a plain Node handler so that the dashboard can
 * have a port of its own or share the MCP server's (which hands it every path that is not `/mcp`).
 *
 * The guards are the MCP server's rules for a browser: the Host must be a name this server answers to (against
 * DNS rebinding); a foreign Origin is refused on every request, and a POST must name an allowed Origin (against
 * cross-site requests); with a token configured, each request needs it, as a Bearer header, or as the session
 * cookie the browser got for it once (`/?token=…` or the login form), `HttpOnly; SameSite=Strict`.
 */
import { Flotta } from "@flotta/core/Flotta"
import { isLoopback } from "@flotta/core/Http"
import { Effect, FiberSet, Option, Redacted } from "effect"
import type { Scope } from "effect"
import { createHash, timingSafeEqual } from "node:crypto"
import type * as http from "node:http"
import * as Actions from "./Actions.js"
import * as Assets from "./Assets.js"
import * as Charts from "./Charts.js"
import type { DashboardSettings } from "./DashboardConfig.js"
import * as Events from "./Events.js"
import * as Pages from "./Pages.js"

export type Handler = (request: http.IncomingMessage, response: http.ServerResponse) => void

export const COOKIE = "flotta_session"
/** Bodies of actions are small forms: anything bigger is refused before it is read whole. */
const MAX_BODY = 64 * 1024

const LOOPBACK_HOSTS = ["localhost", "127.0.0.1", "[::1]"]

const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
    "frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "same-origin"
}

const digest = (text: string) => createHash("sha256").update(text, "utf8").digest()

/** What the cookie holds: not the token itself, but a value only the token's holder could have. */
const sessionOf = (token: string) => createHash("sha256").update(`flotta-dashboard:${token}`).digest("hex")

const same = (a: string, b: string) => timingSafeEqual(digest(a), digest(b))

const cookieOf = (request: http.IncomingMessage, name: string): string | undefined => {
  for (const part of (request.headers.cookie ?? "").split(";")) {
    const at = part.indexOf("=")
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim()
  }
  return undefined
}

/** The hostname of a Host header or an origin's host (`[::1]:4099` → `[::1]`). */
const hostnameOf = (host: string) => {
  const bracket = host.startsWith("[") ? host.indexOf("]") : -1
  if (bracket > 0) return host.slice(0, bracket + 1).toLowerCase()
  return host.split(":", 1)[0]!.toLowerCase()
}

type Reply =
  | { readonly _tag: "Text"; readonly status: number; readonly type: string; readonly body: string | Uint8Array }
  | { readonly _tag: "Redirect"; readonly location: string; readonly cookie?: string }

const json = (status: number, body: unknown): Reply => ({
  _tag: "Text",
  status,
  type: "application/json; charset=utf-8",
  body: JSON.stringify(body)
})
const htmlReply = (status: number, body: string): Reply => ({
  _tag: "Text",
  status,
  type: "text/html; charset=utf-8",
  body
})
const errorJson = (status: number, tag: string, message: string) =>
  json(status, { ok: false, error: { _tag: tag, message } })

/** The pages, by path; `null` when the path is none of them. */
const pageOf = (path: string): Omit<Pages.PageRequest, "fragment" | "query"> | null => {
  if (path === "/") return { page: "agents" }
  if (path === "/approvals") return { page: "approvals" }
  if (path === "/schedule") return { page: "schedule" }
  if (path === "/reports") return { page: "reports" }
  const agent = /^\/agents\/([^/]+)$/.exec(path)
  if (agent === null) return null
  try {
    return { page: "agent", name: decodeURIComponent(agent[1]!) }
  } catch {
    return { page: "notFound" }
  }
}

const readBody = (request: http.IncomingMessage) =>
  Effect.async<Actions.Fields, Actions.BadAction>((resume) => {
    const chunks: Array<Buffer> = []
    let size = 0
    request.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size > MAX_BODY) {
        request.destroy()
        resume(Effect.fail(new Actions.BadAction({ status: 413, reason: "the request body is over 64 KiB" })))
      } else chunks.push(chunk)
    })
    request.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8")
      const type = (request.headers["content-type"] ?? "").split(";", 1)[0]!.trim().toLowerCase()
      if (type === "application/json") {
        try {
          const body: unknown = text.length === 0 ? {} : JSON.parse(text)
          if (typeof body !== "object" || body === null || Array.isArray(body)) throw new Error("not an object")
          const fields = new Map<string, string>()
          for (const [k, v] of Object.entries(body)) {
            if (typeof v === "string" || typeof v === "number" || typeof v === "boolean") fields.set(k, String(v))
          }
          resume(Effect.succeed(fields))
        } catch {
          resume(Effect.fail(new Actions.BadAction({ status: 400, reason: "the body is not a JSON object" })))
        }
      } else if (type === "" || type === "application/x-www-form-urlencoded" || type === "text/plain") {
        resume(Effect.succeed(new Map(new URLSearchParams(text))))
      } else {
        resume(
          Effect.fail(new Actions.BadAction({ status: 415, reason: `send a form or JSON, not ${type}` }))
        )
      }
    })
    request.on("error", () =>
      resume(Effect.fail(new Actions.BadAction({ status: 400, reason: "the request body was cut off" }))))
  })

export const make = (settings: DashboardSettings): Effect.Effect<Handler, never, Flotta | Scope.Scope> =>
  Effect.gen(function*() {
    // Each request runs as a fiber of this set: closing the dashboard interrupts them all (open SSE streams too).
    const run = yield* FiberSet.makeRuntime<Flotta, void, never>()
    const wildcard = settings.host === "0.0.0.0" || settings.host === "::" || settings.host === "[::]"
    const hosts = new Set([
      ...LOOPBACK_HOSTS,
      ...(wildcard
        ? []
        : [
          hostnameOf(
            settings.host.includes(":") && !settings.host.startsWith("[") ? `[${settings.host}]` : settings.host
          )
        ]),
      ...settings.allowedHosts.map(hostnameOf)
    ])
    // Behind a non-loopback bind with no names configured, the token is the guard (as for MCP).
    const checkHost = isLoopback(settings.host) || settings.allowedHosts.length > 0
    const session = Option.map(settings.token, (token) => sessionOf(Redacted.value(token)))

    /** Same origin (scheme, host and port of this request), or a configured hostname. */
    const originAllowed = (origin: string, request: http.IncomingMessage) => {
      try {
        const url = new URL(origin)
        return url.host === request.headers.host || settings.allowedOrigins.includes(url.hostname.toLowerCase())
      } catch {
        return false
      }
    }

    const tokenMatches = (given: string) =>
      Option.match(settings.token, { onNone: () => true, onSome: (t) => same(given, Redacted.value(t)) })

    const bearer = (request: http.IncomingMessage) => {
      const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? "")
      return match === null ? undefined : match[1]!
    }

    const authorized = (request: http.IncomingMessage) => {
      if (Option.isNone(session)) return true
      const given = bearer(request)
      if (given !== undefined) return tokenMatches(given)
      const cookie = cookieOf(request, COOKIE)
      return cookie !== undefined && same(cookie, session.value)
    }

    const setCookie = () =>
      Option.match(session, {
        onNone: () => undefined,
        onSome: (value) => `${COOKIE}=${value}; HttpOnly; SameSite=Strict; Path=/`
      })

    const wantsJson = (request: http.IncomingMessage) => (request.headers.accept ?? "").includes("application/json")

    const page = (request: Omit<Pages.PageRequest, "fragment" | "query">, url: URL, status?: number) =>
      Effect.map(
        Pages.render({ ...request, fragment: url.searchParams.get("fragment") === "1", query: url.searchParams }),
        (rendered) => htmlReply(status ?? rendered.status, rendered.html)
      )

    const login = (url: URL, error?: string) =>
      page({ page: "login", ...(error === undefined ? {} : { error }) }, url, 401)

    /** Where a plain form goes back to after its POST: the page it came from, on this server only. */
    const back = (request: http.IncomingMessage) => {
      try {
        const referer = new URL(request.headers.referer ?? "")
        if (referer.host === request.headers.host) return referer.pathname + referer.search
      } catch {
        // no referer: the start page
      }
      return "/"
    }

    const post = (request: http.IncomingMessage, url: URL): Effect.Effect<Reply, never, Flotta> =>
      Effect.gen(function*() {
        const fields = yield* readBody(request)
        if (url.pathname === "/login") {
          const given = fields.get("token") ?? ""
          if (Option.isNone(session) || !tokenMatches(given)) return yield* login(url, "That token is not right.")
          const next = fields.get("next") ?? "/"
          const location = next.startsWith("/") && !next.startsWith("//") ? next : "/"
          const cookie = setCookie()
          return { _tag: "Redirect", location, ...(cookie === undefined ? {} : { cookie }) } as const
        }
        if (!authorized(request)) return errorJson(401, "Unauthorized", "sign in first: the token is missing")
        const result = yield* Actions.run(url.pathname, fields)
        return wantsJson(request)
          ? json(200, { ok: true, result })
          : { _tag: "Redirect", location: back(request) } as const
      }).pipe(
        Effect.catchAll((error) => {
          const status = Actions.statusOf(error)
          const tag = typeof error === "object" && error !== null && "_tag" in error ? String(error._tag) : "Error"
          const message = error instanceof Error ? error.message : String(error)
          return Effect.succeed(errorJson(status, tag, message))
        })
      )

    const get = (request: http.IncomingMessage, response: http.ServerResponse, url: URL) =>
      Effect.gen(function*() {
        const path = url.pathname
        if (path.startsWith("/assets/")) {
          const asset = yield* Assets.asset(path.slice("/assets/".length))
          return Option.match(asset, {
            onNone: () => errorJson(404, "NotFound", `no asset ${path}`),
            onSome: (a): Reply => ({ _tag: "Text", status: 200, type: a.type, body: a.body })
          })
        }
        // The token once in the address, then the cookie: the address bar and history lose it at once.
        const given = url.searchParams.get("token")
        if (given !== null && Option.isSome(session)) {
          if (!tokenMatches(given)) return yield* login(url, "That token is not right.")
          url.searchParams.delete("token")
          const cookie = setCookie()!
          return { _tag: "Redirect", location: url.pathname + url.search, cookie } as const
        }
        if (path === "/login") return yield* login(url)
        const known = pageOf(path)
        if (!authorized(request)) {
          return known !== null && !wantsJson(request)
            ? yield* login(url)
            : errorJson(401, "Unauthorized", "the dashboard's token is missing or wrong")
        }
        if (path === "/events") {
          yield* Effect.scoped(Events.stream(response, Events.cursorOf(request, url)))
          return null
        }
        if (path === "/api/charts") return json(200, yield* Charts.chartData)
        return yield* page(known ?? { page: "notFound" }, url)
      })

    const answer = (response: http.ServerResponse, reply: Reply) => {
      if (response.headersSent) return
      if (reply._tag === "Redirect") {
        response.writeHead(303, {
          ...SECURITY_HEADERS,
          location: reply.location,
          ...(reply.cookie === undefined ? {} : { "set-cookie": reply.cookie })
        })
        return response.end()
      }
      response.writeHead(reply.status, {
        ...SECURITY_HEADERS,
        "content-type": reply.type,
        "cache-control": reply.type.startsWith("text/html") || reply.type.startsWith("application/json")
          ? "no-store"
          : "no-cache"
      })
      response.end(reply.body)
    }

    const refuse = (response: http.ServerResponse, status: number, message: string) =>
      answer(response, errorJson(status, "Forbidden", message))

    return (request, response) => {
      const host = request.headers.host ?? ""
      if (checkHost && !hosts.has(hostnameOf(host))) {
        return refuse(response, 403, `the Host ${host || "(none)"} is not one this dashboard answers to`)
      }
      const origin = request.headers.origin
      if (origin !== undefined && !originAllowed(origin, request)) {
        return refuse(response, 403, `requests from ${origin} are not allowed`)
      }
      const method = request.method ?? "GET"
      if (method === "POST" && origin === undefined && (bearer(request) === undefined || !authorized(request))) {
        return refuse(response, 403, "a POST must come from the dashboard's own page (it carries no Origin)")
      }
      let url: URL
      try {
        url = new URL(request.url ?? "/", "http://dashboard.invalid")
      } catch {
        return refuse(response, 400, "the request's address is malformed")
      }
      const work = method === "POST"
        ? post(request, url)
        : method === "GET" || method === "HEAD"
        ? get(request, response, url)
        : Effect.succeed(errorJson(405, "MethodNotAllowed", `${method} is not supported here: use GET or POST`))
      const fiber = run(
        work.pipe(
          Effect.flatMap((reply) => Effect.sync(() => reply === null || answer(response, reply))),
          Effect.catchAllCause((cause) =>
            Effect.logError("dashboard: request failed", cause).pipe(
              Effect.zipRight(Effect.sync(() => answer(response, errorJson(500, "InternalError", "internal error"))))
            )
          ),
          Effect.asVoid
        )
      )
      // A client that goes away (an SSE stream closed by the browser) ends its fiber.
      response.on("close", () => fiber.unsafeInterruptAsFork(fiber.id()))
    }
  })
