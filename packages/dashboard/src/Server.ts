/**
 * The dashboard's routes on the fleet's one HTTP stack (`Http.Routes`), so that the dashboard can have a port of
 * its own or share the MCP server's: the pages, `/events`, `/api/charts`, `/api/costs`, `/costs.csv`,
 * `/assets/<file>`, sign-in, and the actions (POSTs). Any other method on a route gets 405 with `Allow`; any other path the not-found page.
 *
 * Every route sits behind the shared guard (`HttpGuard`) with a browser's rules: the Host must be a name this
 * server answers to (against DNS rebinding); a foreign Origin is refused on every request, and only the page's
 * own origin passes (another port is another origin); a POST must name it, or carry the token as a Bearer
 * header (against cross-site requests). With a token configured, each request needs it, as a Bearer header, or
 * as the session cookie the browser got for it once (`/?token=…` or the sign-in form),
 * `HttpOnly; SameSite=Strict`: the assets and the sign-in page excepted.
 */
import type { HttpServerRequest } from "@effect/platform"
import { HttpRouter, HttpServerRequest as Request, HttpServerResponse } from "@effect/platform"
import type { Flotta } from "@flotta/core/Flotta"
import * as Http from "@flotta/core/Http"
import * as HttpGuard from "@flotta/core/HttpGuard"
import { Effect, FiberSet, Option, Predicate } from "effect"
import * as Actions from "./Actions.js"
import * as Assets from "./Assets.js"
import * as Charts from "./Charts.js"
import * as CostsPage from "./CostsPage.js"
import type { DashboardSettings } from "./DashboardConfig.js"
import * as Events from "./Events.js"
import * as Pages from "./Pages.js"

export const COOKIE = "flotta_session"

const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
    "frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "same-origin"
}

type Response = HttpServerResponse.HttpServerResponse
type Handler = Effect.Effect<Response, never, HttpServerRequest.HttpServerRequest | HttpGuard.Caller>

const text = (status: number, type: string, body: string | Uint8Array): Response => {
  const options = {
    status,
    contentType: type,
    headers: {
      ...SECURITY_HEADERS,
      "cache-control": type.startsWith("text/html") || type.startsWith("application/json") ? "no-store" : "no-cache"
    }
  }
  return typeof body === "string"
    ? HttpServerResponse.text(body, options)
    : HttpServerResponse.uint8Array(body, options)
}

const json = (status: number, body: unknown) => text(status, "application/json; charset=utf-8", JSON.stringify(body))

const errorJson = (status: number, tag: string, message: string, headers: Record<string, string> = {}) =>
  HttpServerResponse.setHeaders(json(status, { ok: false, error: { _tag: tag, message } }), headers)

const redirect = (location: string, cookie?: string): Response =>
  HttpServerResponse.empty({
    status: 303,
    headers: { ...SECURITY_HEADERS, location, ...(cookie === undefined ? {} : { "set-cookie": cookie }) }
  })

const refuse = (status: number, message: string, headers?: Record<string, string>) =>
  errorJson(
    status,
    status === 405 ? "MethodNotAllowed" : status === 401 ? "Unauthorized" : "Forbidden",
    message,
    headers
  )

/** The request's address, read against a placeholder origin (only its path and query matter here). */
const urlOf = (request: HttpServerRequest.HttpServerRequest) => new URL(request.url, "http://dashboard.invalid")

const wantsJson = (request: HttpServerRequest.HttpServerRequest) =>
  (request.headers["accept"] ?? "").includes("application/json")

/** Where a plain form goes back to after its POST: the page it came from, on this server only. */
const back = (request: HttpServerRequest.HttpServerRequest) => {
  try {
    const referer = new URL(request.headers["referer"] ?? "")
    if (referer.host === request.headers["host"]) return referer.pathname + referer.search
  } catch {
    // no referer: the start page
  }
  return "/"
}

export const make = Effect.fn("Server.make")(function*(settings: DashboardSettings) {
  // The handlers run on the context the dashboard was built in (the scheduler, when one runs, is found there).
  const context = yield* Effect.context<Flotta>()
  // Routines started from the page run in the dashboard's scope: they end with it, not with their request.
  const fires = yield* FiberSet.make()
  const rules = {
    host: settings.host,
    allowedHosts: settings.allowedHosts,
    allowedOrigins: settings.allowedOrigins,
    origins: "same-origin",
    originlessPosts: "bearer",
    token: settings.token,
    cookie: COOKIE,
    requireToken: false,
    refuse
  } satisfies HttpGuard.Rules
  const guard = HttpGuard.make(rules)
  const cookie = HttpGuard.sessionCookie(rules)

  const render = (page: Omit<Pages.PageRequest, "fragment" | "query">, url: URL, status?: number) =>
    Effect.map(
      Pages.render({ ...page, fragment: url.searchParams.get("fragment") === "1", query: url.searchParams }),
      (rendered) => text(status ?? rendered.status, "text/html; charset=utf-8", rendered.html)
    )

  const login = (url: URL, error?: string) =>
    render({ page: "login", ...(error === undefined ? {} : { error }) }, url, 401)

  /**
   * A GET: `?token=` once (then the cookie: the address bar and history lose it at once), else the caller's
   * token, else the sign-in page (for a browser, on a page) or 401; an `open` one needs no token.
   */
  const signedIn = (
    handle: (url: URL) => Effect.Effect<Response, never, Flotta | HttpServerRequest.HttpServerRequest>,
    kind: "page" | "data" | "open"
  ): Handler =>
    Effect.gen(function*() {
      const request = yield* Request.HttpServerRequest
      const url = urlOf(request)
      const given = url.searchParams.get("token")
      if (given !== null && cookie !== undefined) {
        if (!HttpGuard.tokenMatches(rules, given)) return yield* login(url, "That token is not right.")
        url.searchParams.delete("token")
        return redirect(url.pathname + url.search, cookie)
      }
      if (kind !== "open" && !(yield* HttpGuard.Caller).authorized) {
        return kind === "page" && !wantsJson(request)
          ? yield* login(url)
          : errorJson(401, "Unauthorized", "the dashboard's token is missing or wrong")
      }
      return yield* handle(url)
    }).pipe(Effect.provide(context))

  const page = (
    of: (params: Readonly<Record<string, string | undefined>>) => Omit<Pages.PageRequest, "fragment" | "query">,
    kind: "page" | "open" = "page"
  ) => Effect.flatMap(HttpRouter.params, (params) => signedIn((url) => render(of(params), url), kind))

  const signIn: Handler = Effect.gen(function*() {
    const request = yield* Request.HttpServerRequest
    const url = urlOf(request)
    const fields = yield* Actions.fields
    if (cookie === undefined || !HttpGuard.tokenMatches(rules, fields.get("token") ?? "")) {
      return yield* login(url, "That token is not right.")
    }
    const next = fields.get("next") ?? "/"
    return redirect(next.startsWith("/") && !next.startsWith("//") ? next : "/", cookie)
  }).pipe(Effect.catchAll(failed), Effect.provide(context))

  /** An action's answer: JSON for the script, else back to the page by redirect. */
  const act = (action: (fields: Actions.Fields) => Effect.Effect<unknown, unknown, Flotta>): Handler =>
    Effect.gen(function*() {
      const request = yield* Request.HttpServerRequest
      const fields = yield* Actions.fields
      if (!(yield* HttpGuard.Caller).authorized) {
        return errorJson(401, "Unauthorized", "sign in first: the token is missing")
      }
      const result = yield* action(fields)
      return wantsJson(request) ? json(200, { ok: true, result }) : redirect(back(request))
    }).pipe(Effect.catchAll(failed), Effect.provide(context))

  const asset = Effect.flatMap(HttpRouter.params, ({ file }) =>
    Effect.map(
      Assets.asset(file ?? ""),
      Option.match({
        onNone: () => errorJson(404, "NotFound", `no asset /assets/${file}`),
        onSome: (a) => text(200, a.type, a.body)
      })
    ))

  const events = signedIn(
    (url) =>
      Effect.flatMap(
        Request.HttpServerRequest,
        (request) => Events.stream(Events.cursorOf(request.headers["last-event-id"], url.searchParams.get("since")))
      ),
    "data"
  )

  /** `/costs.csv`: the cost console's groups as a download; a window or grouping it cannot read is a 400. */
  const costsCsv = signedIn(
    (url) =>
      CostsPage.csv(url.searchParams).pipe(
        Effect.map(({ body, filename }) =>
          HttpServerResponse.setHeaders(text(200, "text/csv; charset=utf-8", body), {
            "content-disposition": `attachment; filename="${filename}"`,
            "cache-control": "no-store"
          })
        ),
        Effect.catchAll(failed)
      ),
    "data"
  )
  const costsChart = signedIn(
    (url) => CostsPage.chartData(url.searchParams).pipe(Effect.map((data) => json(200, data)), Effect.catchAll(failed)),
    "data"
  )

  const GET = <R>(handler: Effect.Effect<Response, never, R>) => Http.methods({ GET: handler, HEAD: handler }, refuse)
  const POST = <R>(handler: Effect.Effect<Response, never, R>) => Http.methods({ POST: handler }, refuse)
  const pages = HttpRouter.empty.pipe(
    Http.route("/", GET(page(() => ({ page: "agents" })))),
    Http.route("/approvals", GET(page(() => ({ page: "approvals" })))),
    Http.route("/schedule", GET(page(() => ({ page: "schedule" })))),
    Http.route("/reports", GET(page(() => ({ page: "reports" })))),
    Http.route("/costs", GET(page(() => ({ page: "costs" })))),
    Http.route("/costs.csv", GET(costsCsv)),
    Http.route("/agents/:name", GET(page(({ name }) => ({ page: "agent", name })))),
    Http.route("/runs", GET(page(() => ({ page: "runs" })))),
    Http.route("/runs/:name", GET(page(({ name }) => ({ page: "run", name })))),
    Http.route("/login", Http.methods({ GET: page(() => ({ page: "login" }), "open"), POST: signIn }, refuse)),
    Http.route("/events", GET(events)),
    Http.route(
      "/api/charts",
      GET(signedIn(() =>
        Charts.chartData.pipe(
          Effect.map((data) => json(200, data)),
          Effect.catchAll((error) => Effect.succeed(json(503, { error: error._tag, message: error.message })))
        ), "data"))
    ),
    Http.route("/api/costs", GET(costsChart)),
    Http.route("/assets/:file", GET(asset))
  )
  const router = Actions.table(fires).reduce(
    (router, [path, action]) =>
      router.pipe(
        Http.route(path, POST(Effect.flatMap(HttpRouter.params, (params) => act((fields) => action(params, fields)))))
      ),
    pages
  )

  /** A path that is no route: the not-found page for a GET, `nothing to do` for a POST, 405 for the rest. */
  const notFound: Handler = Effect.flatMap(Request.HttpServerRequest, (request) => {
    const path = urlOf(request).pathname
    return request.method === "POST"
      ? act(() => Effect.fail(Actions.nothingAt(path)))
      : request.method === "GET" || request.method === "HEAD"
      ? signedIn((url) => render({ page: "notFound" }, url), "data")
      : Effect.succeed(errorJson(404, "NotFound", `no route ${request.method} ${path}`))
  })

  return {
    router: HttpRouter.use(router, guard),
    notFound: guard(notFound)
  } satisfies Http.Routes
})

/** A failed action or sign-in: its status and tag, and what went wrong. */
const failed = (error: unknown) =>
  Effect.succeed(
    errorJson(
      Actions.statusOf(error),
      Predicate.hasProperty(error, "_tag") ? String(error._tag) : "Error",
      error instanceof Error ? error.message : String(error)
    )
  )
