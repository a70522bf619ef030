/**
 * The one guard in front of every route of the fleet's HTTP servers (the MCP endpoint, the dashboard): the rules
 * that keep a loopback server from being reached by other sites or machines, as an `HttpRouter` middleware.
 *
 * - Host: a name this server answers to (loopback names, the bound host, the configured ones), against DNS
 *   rebinding. Behind a non-loopback bind with no names configured, the token is the guard.
 * - Origin: absent (a non-browser client), or allowed: a configured hostname, a configured `<scheme>://*`, and
 *   either any loopback origin (`origins: "loopback"`: MCP clients such as the Inspector run on their own port)
 *   or only the page's own (`origins: "same-origin"`: the dashboard, whose cookie every loopback port would share).
 * - A POST with no Origin (`originlessPosts: "bearer"`): only with a valid Bearer token, never by cookie alone.
 * - The token: a Bearer header, or (with `cookie`) the session cookie a browser got for it once, which holds a
 *   digest, never the token. With `requireToken` a request without it is refused with 401; otherwise the routes
 *   read the verdict (`Caller`) and answer it their own way (a sign-in page).
 */
import { HttpServerRequest } from "@effect/platform"
import type { HttpApp, HttpServerResponse } from "@effect/platform"
import { Context, Effect, Option, Redacted } from "effect"
import { createHash, timingSafeEqual } from "node:crypto"
import { hostnameOf } from "./Http.js"
import { isLoopback } from "./ServerSection.js"

export interface Rules {
  /** The address the server is bound to. */
  readonly host: string
  readonly allowedHosts: ReadonlyArray<string>
  /** Hostnames, or `<scheme>://*` for a whole non-web scheme (browser extensions). */
  readonly allowedOrigins: ReadonlyArray<string>
  readonly origins: "loopback" | "same-origin"
  readonly originlessPosts: "allow" | "bearer"
  readonly token: Option.Option<Redacted.Redacted<string>>
  /** The session cookie's name, when a browser may hold the token as one. */
  readonly cookie?: string | undefined
  readonly requireToken: boolean
  /** A refusal, in the server's own format. */
  readonly refuse: (
    status: 401 | 403,
    message: string,
    headers?: Record<string, string>
  ) => HttpServerResponse.HttpServerResponse
}

/** Who is calling, as the guard found: whether they carry the token, and how. */
export class Caller extends Context.Tag("@flotta/core/HttpGuard/Caller")<Caller, {
  readonly authorized: boolean
  /** The token came as a Bearer header (not a cookie). */
  readonly bearer: boolean
}>() {}

const LOOPBACK = ["localhost", "127.0.0.1", "[::1]"]

const digest = (text: string) => createHash("sha256").update(text, "utf8").digest()

/** The same text, compared in a time that does not depend on where they differ. */
export const same = (a: string, b: string) => timingSafeEqual(digest(a), digest(b))

/** What the session cookie holds: not the token itself, but a value only the token's holder could have. */
export const sessionOf = (token: Redacted.Redacted<string>) =>
  createHash("sha256").update(`flotta-dashboard:${Redacted.value(token)}`).digest("hex")

/** The token given matches the configured one (any, when none is configured). */
export const tokenMatches = (rules: Pick<Rules, "token">, given: string) =>
  Option.match(rules.token, { onNone: () => true, onSome: (token) => same(given, Redacted.value(token)) })

/** `Set-Cookie` for the session, when there is a token to hold. */
export const sessionCookie = (rules: Pick<Rules, "token" | "cookie">): string | undefined =>
  rules.cookie === undefined || Option.isNone(rules.token)
    ? undefined
    : `${rules.cookie}=${sessionOf(rules.token.value)}; HttpOnly; SameSite=Strict; Path=/`

/** The token of an `Authorization: Bearer` header, if the request carries one. */
export const bearerOf = (request: HttpServerRequest.HttpServerRequest) => {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers["authorization"] ?? "")
  return match === null ? undefined : match[1]!
}

/** The checks of `rules`, compiled once. */
export const make = (rules: Rules) => {
  const bound = rules.host.includes(":") && !rules.host.startsWith("[") ? `[${rules.host}]` : rules.host
  const wildcard = bound === "0.0.0.0" || bound === "[::]"
  const hosts = new Set(
    [...LOOPBACK, ...(wildcard ? [] : [bound]), ...rules.allowedHosts].flatMap((name) =>
      Option.toArray(hostnameOf(name))
    )
  )
  const checkHost = isLoopback(rules.host) || rules.allowedHosts.length > 0
  const session = Option.map(rules.token, sessionOf)

  const hostRefusal = (request: HttpServerRequest.HttpServerRequest) => {
    if (!checkHost) return undefined
    const host = request.headers["host"] ?? ""
    const name = hostnameOf(host)
    return Option.isSome(name) && hosts.has(name.value)
      ? undefined
      : `the Host ${host || "(none)"} is not one this server answers to`
  }

  const originAllowed = (origin: string, request: HttpServerRequest.HttpServerRequest) => {
    let url: URL
    try {
      url = new URL(origin)
    } catch {
      return false
    }
    if (url.hostname === "") return false
    const web = url.protocol === "http:" || url.protocol === "https:"
    if (!web && rules.allowedOrigins.includes(`${url.protocol}//*`)) return true
    if (rules.allowedOrigins.includes(url.hostname)) return true
    return rules.origins === "loopback"
      ? LOOPBACK.includes(url.hostname)
      : url.host === (request.headers["host"] ?? "").toLowerCase()
  }

  const callerOf = (request: HttpServerRequest.HttpServerRequest) => {
    const given = bearerOf(request)
    if (Option.isNone(session)) return { authorized: true, bearer: given !== undefined }
    if (given !== undefined) return { authorized: tokenMatches(rules, given), bearer: true }
    const cookie = rules.cookie === undefined ? undefined : request.cookies[rules.cookie]
    return { authorized: cookie !== undefined && same(cookie, session.value), bearer: false }
  }

  /** The guard as a middleware: refusals first, then the app with its `Caller`. */
  return <E, R>(
    app: HttpApp.Default<E, R>
  ): HttpApp.Default<E, Exclude<R, Caller> | HttpServerRequest.HttpServerRequest> =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
      const badHost = hostRefusal(request)
      if (badHost !== undefined) return Effect.succeed(rules.refuse(403, badHost))
      const origin = request.headers["origin"]
      if (origin !== undefined && origin !== "" && !originAllowed(origin, request)) {
        return Effect.succeed(rules.refuse(403, `the Origin ${origin} is not allowed here`))
      }
      const caller = callerOf(request)
      if (
        rules.originlessPosts === "bearer" && request.method === "POST" && (origin === undefined || origin === "") &&
        !(caller.bearer && caller.authorized)
      ) {
        return Effect.succeed(
          rules.refuse(403, "a POST must come from this server's own page (it carries no Origin) or carry the token")
        )
      }
      if (rules.requireToken && !caller.authorized) {
        return Effect.succeed(rules.refuse(401, "Unauthorized: send Authorization: Bearer <token>", {
          "www-authenticate": "Bearer realm=\"flotta\""
        }))
      }
      return Effect.provideService(app, Caller, caller)
    })
}
