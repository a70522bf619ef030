/**
 * Triggers in, as routes on the fleet's HTTP server (contributed through `Http.Contributions` to the MCP server and the
 * dashboard's own), behind the servers' Host and Origin rules:
 * - `POST /hooks/routines/NAME` fires a routine, for a caller holding the server's token or the routine's own
 *   secret (`Authorization: Bearer …`); an optional JSON body goes into its prompt; 202 with the fire id.
 * - `POST /hooks/github` takes GitHub's deliveries: the signature checked against `github.secret` (401), the
 *   size bounded (413), each delivery id handled once (kept in the store, so a redelivery fires nothing twice),
 *   the mapped routines fired and run templates started with the event in their prompt; an unmapped event is
 *   recorded and answered 202.
 * Every trigger, and every refusal, is an entry in the report log under `hooks`.
 */
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { HttpRouter } from "@effect/platform"
import type { Flotta } from "@flotta/core/Flotta"
import * as Http from "@flotta/core/Http"
import * as HttpGuard from "@flotta/core/HttpGuard"
import type { ReportLog } from "@flotta/core/ReportLog"
import { withEvent } from "@flotta/scheduler/Actions"
import type { Scheduler } from "@flotta/scheduler/Scheduler"
import { Effect, Either, Option, Redacted } from "effect"
import * as GitHub from "./GitHub.js"
import type { Deliveries } from "./internal/deliveries.js"
import type { GithubSection } from "./WebhooksConfig.js"
import { DEFAULT_MAX_BODY } from "./WebhooksConfig.js"
import * as Events from "./WebhooksEvents.js"

/** The largest body a routine trigger reads. */
export const MAX_ROUTINE_BODY = 64 * 1024

export interface TriggerDeps {
  readonly fleet: Flotta
  readonly log: ReportLog
  readonly scheduler: Option.Option<Scheduler>
  readonly github: Option.Option<GithubSection>
  readonly deliveries: Deliveries
}

type Response = HttpServerResponse.HttpServerResponse

const json = (status: number, body: unknown, headers: Record<string, string> = {}): Response =>
  HttpServerResponse.unsafeJson(body, { status, headers: { "cache-control": "no-store", ...headers } })

const refusal = (status: number, tag: string, message: string, headers?: Record<string, string>) =>
  json(status, { ok: false, error: { _tag: tag, message } }, headers)

const errorView = (error: { readonly _tag: string; readonly message: string }) => ({
  _tag: error._tag,
  message: error.message
})

/** The HTTP status a scheduler's refusal of a fire is. */
const statusOfRefusal = (tag: string) => tag === "RoutineNotFound" ? 404 : tag === "SchedulerNotEnabled" ? 503 : 409

/** The routes, built for the server they are mounted on. */
export const routes = (deps: TriggerDeps) => (server: Http.MountedOn): Http.Routes => {
  const { fleet, log, scheduler } = deps
  const refuse = (status: 401 | 403 | 405, message: string, headers?: Record<string, string>) =>
    refusal(
      status,
      status === 405 ? "MethodNotAllowed" : status === 401 ? "Unauthorized" : "Forbidden",
      message,
      headers
    )
  // The server's Host and Origin rules; who may fire what is each route's own check.
  const guard = HttpGuard.make({
    host: server.host,
    allowedHosts: server.allowedHosts,
    allowedOrigins: [],
    origins: "same-origin",
    originlessPosts: "allow",
    token: Option.none(),
    requireToken: false,
    refuse
  })

  const refused = (source: string, status: number, tag: string, reason: string, extra: object = {}) =>
    Effect.as(
      log.post("hooks", Events.triggerRefused, { source, status, reason, ...extra }),
      refusal(status, tag, reason)
    )

  const body = (max: number) =>
    Http.bodyText(max).pipe(
      Effect.map(Either.right),
      Effect.catchTag("BodyRefused", (e) => Effect.succeed(Either.left(e)))
    )

  const fireRoutine = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const { name } = yield* HttpRouter.params
    const routine = name ?? ""
    if (Option.isNone(scheduler)) {
      return yield* refused("webhook", 503, "SchedulerNotEnabled", "the scheduler is not running", { routine })
    }
    const secret = yield* scheduler.value.routineSecret(routine).pipe(Effect.either)
    const given = HttpGuard.bearerOf(request)
    const keys = [
      ...Option.toArray(server.token),
      ...(Either.isRight(secret) ? Option.toArray(secret.right) : [])
    ]
    if (keys.length === 0) {
      return yield* refused(
        "webhook",
        401,
        "Unauthorized",
        "this server has no token and the routine no secret: set mcp.token or the routine's secret",
        { routine }
      )
    }
    if (given === undefined || !keys.some((key) => HttpGuard.same(given, Redacted.value(key)))) {
      return yield* refused("webhook", 401, "Unauthorized", "send Authorization: Bearer <token or routine secret>", {
        routine
      })
    }
    if (Either.isLeft(secret)) {
      return yield* refused("webhook", 404, secret.left._tag, secret.left.message, { routine })
    }
    const text = yield* body(MAX_ROUTINE_BODY)
    if (Either.isLeft(text)) return yield* refused("webhook", text.left.status, "BodyRefused", text.left.reason)
    let payload: unknown = undefined
    if (text.right.trim().length > 0) {
      try {
        payload = JSON.parse(text.right)
      } catch {
        return yield* refused("webhook", 400, "BadRequest", "the body must be JSON (or empty)", { routine })
      }
    }
    // The scheduler cuts a long text to what a prompt takes.
    const fired = yield* scheduler.value.trigger(routine, {
      source: "webhook",
      ...(payload === undefined ? {} : {
        text: `The request that fired this routine:\n\`\`\`json\n${JSON.stringify(payload, null, 2)}\n\`\`\``
      }),
      detail: { path: `/hooks/routines/${routine}` }
    }).pipe(Effect.either)
    if (Either.isLeft(fired)) {
      const error = fired.left
      yield* log.post("hooks", Events.trigger, { source: "webhook", routine, fired: [], refused: [errorView(error)] })
      return refusal(statusOfRefusal(error._tag), error._tag, error.message)
    }
    yield* log.post("hooks", Events.trigger, {
      source: "webhook",
      routine,
      fired: [{ routine, fireId: fired.right.fireId }]
    })
    return json(202, { ok: true, routine, fireId: fired.right.fireId })
  })

  const fireGithub = (github: GithubSection) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const text = yield* body(github.maxBodyBytes ?? DEFAULT_MAX_BODY)
      if (Either.isLeft(text)) return yield* refused("github", text.left.status, "BodyRefused", text.left.reason)
      const delivery = request.headers["x-github-delivery"]
      if (!GitHub.verify(github.secret, text.right, request.headers["x-hub-signature-256"])) {
        return yield* refused("github", 401, "BadSignature", "X-Hub-Signature-256 does not match github.secret", {
          ...(delivery === undefined ? {} : { delivery })
        })
      }
      const event = request.headers["x-github-event"]
      if (event === undefined || delivery === undefined) {
        return yield* refused("github", 400, "BadRequest", "X-GitHub-Event and X-GitHub-Delivery are required")
      }
      return yield* deps.deliveries.once(delivery, handleEvent(github, event, delivery, text.right))
    })

  const handleEvent = (github: GithubSection, event: string, delivery: string, text: string) =>
    Effect.gen(function*() {
      const named = github.on.some((m) => m.event.split(".")[0] === event)
      if (!named) {
        yield* log.post("hooks", Events.trigger, { source: "github", event, delivery, fired: [], unmapped: true })
        return json(event === "ping" ? 200 : 202, { ok: true, delivery, fired: [], unmapped: true })
      }
      const payload = GitHub.decode(text)
      if (Either.isLeft(payload)) {
        yield* log.post("hooks", Events.triggerRefused, {
          source: "github",
          status: 400,
          reason: payload.left,
          delivery
        })
        return refusal(400, "BadRequest", payload.left)
      }
      const facts = GitHub.facts(event, payload.right)
      const mapped = GitHub.fired(github.on, event, payload.right)
      const told = GitHub.describe(event, payload.right)
      const fired: Array<Events.Fired> = []
      const refusedBy: Array<Events.Refused> = []
      for (const mapping of mapped) {
        if (mapping.routine !== undefined) {
          const outcome = Option.isNone(scheduler)
            ? Either.left({ _tag: "SchedulerNotEnabled", message: "the scheduler is not running" })
            : yield* scheduler.value.trigger(mapping.routine, {
              source: "github",
              text: told,
              detail: { delivery, ...facts }
            })
              .pipe(Effect.either)
          if (Either.isRight(outcome)) fired.push({ routine: mapping.routine, fireId: outcome.right.fireId })
          else refusedBy.push({ routine: mapping.routine, error: errorView(outcome.left) })
        } else if (mapping.run !== undefined) {
          const started = yield* startRun(mapping.run, told).pipe(Effect.either)
          if (Either.isRight(started)) fired.push({ run: mapping.run, name: started.right })
          else refusedBy.push({ run: mapping.run, error: errorView(started.left) })
        }
      }
      yield* log.post("hooks", Events.trigger, {
        source: "github",
        delivery,
        ...facts,
        fired,
        ...(refusedBy.length === 0 ? {} : { refused: refusedBy }),
        ...(mapped.length === 0 ? { unmapped: true } : {})
      })
      return json(202, {
        ok: true,
        delivery,
        fired,
        ...(refusedBy.length === 0 ? {} : { refused: refusedBy }),
        ...(mapped.length === 0 ? { unmapped: true } : {})
      })
    })

  /** A run of the template, its prompt with the event in it (in place of `{{event}}`, or after it). */
  const startRun = (template: string, told: string) =>
    Effect.gen(function*() {
      const spec = yield* fleet.template(template)
      const prompt = spec?.prompt === undefined ? told : withEvent(spec.prompt, told)
      return yield* fleet.runAsync({ template, prompt })
    })

  const routines = HttpRouter.empty.pipe(
    Http.route("/hooks/routines/:name", Http.methods({ POST: fireRoutine }, refuse))
  )
  const router = Option.match(deps.github, {
    onNone: () => routines,
    onSome: (github) => routines.pipe(Http.route("/hooks/github", Http.methods({ POST: fireGithub(github) }, refuse)))
  })
  return {
    router: HttpRouter.use(router, guard),
    notFound: Effect.succeed(refusal(404, "NotFound", "no such hook"))
  }
}
