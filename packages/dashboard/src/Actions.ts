/**
 * What the dashboard's buttons do: every state change is a POST to one of these routes, and each runs the same
 * operation the other surfaces run (queue a turn, interrupt, close, fork, compact, clear, hibernate, wake, decide an
 * approval, steer the scheduler).
 * The body (a form, or a JSON object) is read under 64 KiB and decoded with Schema into its fields. An action
 * answers with JSON, or fails with a typed error that the server turns into a status and a message.
 */
import type { HttpRouter } from "@effect/platform"
import { HttpServerRequest } from "@effect/platform"
import { Flotta } from "@flotta/core/Flotta"
import * as Http from "@flotta/core/Http"
import { Scheduler } from "@flotta/scheduler/Scheduler"
import { Data, Effect, Either, Fiber, FiberSet, Predicate, Schedule, Schema } from "effect"

/** A request the dashboard cannot act on: an unknown path, or a missing or malformed field. */
export class BadAction extends Data.TaggedError("BadAction")<{ readonly status: number; readonly reason: string }> {
  override get message() {
    return this.reason
  }
}

/** The decoded body of a POST: form fields or a JSON object's scalar fields, as text. */
export type Fields = ReadonlyMap<string, string>

/** Bodies of actions are small forms: anything bigger is refused before it is read whole. */
const MAX_BODY = 64 * 1024

const JsonObject = Schema.parseJson(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
const decodeJsonObject = Schema.decodeUnknownEither(JsonObject)

const bad = (status: number, reason: string) => new BadAction({ status, reason })

/** The body of the request as fields: JSON (an object), or a form (urlencoded, plain text or untyped). */
export const fields: Effect.Effect<Fields, BadAction, HttpServerRequest.HttpServerRequest> = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const text = yield* Http.bodyText(MAX_BODY).pipe(
    Effect.mapError((refused) =>
      bad(refused.status, refused.status === 413 ? "the request body is over 64 KiB" : refused.reason)
    )
  )
  const type = (request.headers["content-type"] ?? "").split(";", 1)[0]!.trim().toLowerCase()
  if (type === "application/json") {
    const body = decodeJsonObject(text.length === 0 ? "{}" : text)
    if (Either.isLeft(body)) return yield* bad(400, "the body is not a JSON object")
    const scalars = Object.entries(body.right).flatMap(([key, value]) =>
      Predicate.isString(value) || Predicate.isNumber(value) || Predicate.isBoolean(value)
        ? [[key, String(value)] as const]
        : []
    )
    return new Map(scalars)
  }
  if (type === "" || type === "application/x-www-form-urlencoded" || type === "text/plain") {
    return new Map(new URLSearchParams(text))
  }
  return yield* bad(415, `send a form or JSON, not ${type}`)
})

const field = (fields: Fields, name: string) => {
  const value = fields.get(name)?.trim()
  return value === undefined || value.length === 0 ? undefined : value
}

const required = (fields: Fields, name: string, what: string) => {
  const value = field(fields, name)
  return value === undefined ? Effect.fail(bad(400, `${what} is empty`)) : Effect.succeed(value)
}

const decision = (behavior: "allow" | "deny", fields: Fields) => {
  const message = field(fields, "message")
  return {
    behavior,
    by: "dashboard",
    ...(message === undefined ? {} : { message }),
    ...(behavior === "allow" && fields.get("always") === "1" ? { always: true } : {})
  }
}

const steer = <A, E>(use: (scheduler: Scheduler) => Effect.Effect<A, E>) => Effect.flatMap(Scheduler.enabled, use)

/** One action: its path params (URI-decoded by the router) and the body's fields, to an answer. */
export type Action = (
  params: Readonly<Record<string, string | undefined>>,
  fields: Fields
) => Effect.Effect<unknown, unknown, Flotta>

const fleet = <A, E>(use: (fleet: Flotta) => Effect.Effect<A, E>) => Effect.flatMap(Flotta, use)

/**
 * The actions, by route. `fires` is the dashboard's own set of fibers: a routine started from the page keeps
 * running after its request is answered, until it ends or the dashboard closes.
 */
export const table = (fires: FiberSet.FiberSet): ReadonlyArray<readonly [HttpRouter.PathInput, Action]> => [
  ["/agents/:name/prompt", ({ name }, fields) =>
    Effect.gen(function*() {
      const text = yield* required(fields, "text", "the prompt")
      const turnId = yield* fleet((f) => f.prompt(name!, text))
      return { turnId }
    })],
  [
    "/agents/:name/interrupt",
    ({ name }) => fleet((f) => Effect.map(f.interrupt(name!), (interrupted) => ({ interrupted })))
  ],
  ["/agents/:name/close", ({ name }) => fleet((f) => f.close(name!))],
  [
    "/agents/:name/compact",
    ({ name }, fields) =>
      Effect.map(fleet((f) => f.compact(name!, field(fields, "instructions"))), (turnId) => ({ turnId }))
  ],
  ["/agents/:name/clear", ({ name }) => Effect.map(fleet((f) => f.clear(name!)), (turnId) => ({ turnId }))],
  [
    "/agents/:name/hibernate",
    ({ name }) => fleet((f) => Effect.map(f.hibernate(name!), (hibernated) => ({ hibernated })))
  ],
  ["/agents/:name/wake", ({ name }) => fleet((f) => Effect.map(f.wake(name!), (woken) => ({ woken })))],
  // The fork's name is asked for on the page; `at` (a turn id) is optional: the source's last good turn.
  ["/agents/:name/fork", ({ name }, fields) =>
    Effect.gen(function*() {
      const forkName = yield* required(fields, "name", "the fork's name")
      const at = field(fields, "at")
      return yield* fleet((f) => f.fork(name!, forkName, at === undefined ? {} : { at }))
    })],
  ["/approvals/:id/approve", ({ id }, fields) => fleet((f) => f.decide(id!, decision("allow", fields)))],
  ["/approvals/:id/deny", ({ id }, fields) => fleet((f) => f.decide(id!, decision("deny", fields)))],
  ["/schedule/pause", () => steer((s) => s.pause)],
  ["/schedule/resume", () => steer((s) => s.resume)],
  ["/schedule/stop-for-today", () => steer((s) => s.stopForToday)],
  ["/schedule/keep-going", (_, fields) => {
    const minutes = Number(field(fields, "minutes") ?? "60")
    return Number.isInteger(minutes) && minutes > 0
      ? steer((s) => s.keepGoing(minutes))
      : Effect.fail(bad(400, `minutes must be a positive whole number`))
  }],
  // A fire can run for minutes: the answer comes once it runs (or fails to start), and the page follows it.
  ["/schedule/routines/:name/run", ({ name }) =>
    steer((scheduler) =>
      Effect.gen(function*() {
        const fire = yield* FiberSet.run(fires, scheduler.runRoutine(name!))
        const running = scheduler.status.pipe(
          Effect.repeat({
            until: (status) => status.running.some((f) => f.routine === name),
            schedule: Schedule.spaced("50 millis")
          })
        )
        return yield* Effect.raceFirst(
          Effect.map(Fiber.join(fire), (outcome) => ({ started: name, outcome })),
          Effect.as(running, { started: name })
        )
      })
    )]
]

/** No action lives at `path`. */
export const nothingAt = (path: string) => bad(404, `nothing to do at ${path}`)

/** The HTTP status of a failed action, from its error's tag. */
export const statusOf = (error: unknown): number => {
  if (error instanceof BadAction) return error.status
  const tag = Predicate.hasProperty(error, "_tag") ? String(error._tag) : ""
  if (/NotFound$/.test(tag)) return 404
  if (tag === "InvalidSpec" || tag === "InvalidSchedule" || tag === "InvalidName") return 400
  // The store cannot be read now: the fleet is there, try again.
  if (tag === "StoreUnavailable") return 503
  return 409
}
