/**
 * What the dashboard's buttons do: every state change is a POST to one of these paths, and each runs the same
 * operation the other surfaces run (queue a turn, interrupt, close, decide an approval, steer the scheduler).
 * An action answers with JSON, or fails with a typed error that the server turns into a status and a message.
 */
import { Flotta } from "@flotta/core/Flotta"
import { Scheduler } from "@flotta/scheduler/Scheduler"
import { Data, Effect, Fiber, Schedule } from "effect"

/** A request the dashboard cannot act on: an unknown path, or a missing or malformed field. */
export class BadAction extends Data.TaggedError("BadAction")<{ readonly status: number; readonly reason: string }> {
  override get message() {
    return this.reason
  }
}

/** The decoded body of a POST: form fields or a JSON object's string fields. */
export type Fields = ReadonlyMap<string, string>

const field = (fields: Fields, name: string) => {
  const value = fields.get(name)?.trim()
  return value === undefined || value.length === 0 ? undefined : value
}

const required = (fields: Fields, name: string, what: string) => {
  const value = field(fields, name)
  return value === undefined
    ? Effect.fail(new BadAction({ status: 400, reason: `${what} is empty` }))
    : Effect.succeed(value)
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

/** The routes, by path pattern; each name in the path is URI-decoded. */
const routes: ReadonlyArray<
  readonly [RegExp, (args: ReadonlyArray<string>, fields: Fields) => Effect.Effect<unknown, unknown, Flotta>]
> = [
  [/^\/agents\/([^/]+)\/prompt$/, ([name], fields) =>
    Effect.gen(function*() {
      const text = yield* required(fields, "text", "the prompt")
      const turnId = yield* (yield* Flotta).prompt(name!, text)
      return { turnId }
    })],
  [
    /^\/agents\/([^/]+)\/interrupt$/,
    ([name]) =>
      Effect.map(Effect.flatMap(Flotta, (fleet) => fleet.interrupt(name!)), (interrupted) => ({ interrupted }))
  ],
  [/^\/agents\/([^/]+)\/close$/, ([name]) => Effect.flatMap(Flotta, (fleet) => fleet.close(name!))],
  [
    /^\/approvals\/([^/]+)\/approve$/,
    ([id], fields) => Effect.flatMap(Flotta, (fleet) => fleet.decide(id!, decision("allow", fields)))
  ],
  [
    /^\/approvals\/([^/]+)\/deny$/,
    ([id], fields) => Effect.flatMap(Flotta, (fleet) => fleet.decide(id!, decision("deny", fields)))
  ],
  [/^\/schedule\/pause$/, () => steer((s) => s.pause)],
  [/^\/schedule\/resume$/, () => steer((s) => s.resume)],
  [/^\/schedule\/stop-for-today$/, () => steer((s) => s.stopForToday)],
  [/^\/schedule\/keep-going$/, (_, fields) => {
    const minutes = Number(field(fields, "minutes") ?? "60")
    return Number.isInteger(minutes) && minutes > 0
      ? steer((s) => s.keepGoing(minutes))
      : Effect.fail(new BadAction({ status: 400, reason: `minutes must be a positive whole number` }))
  }],
  // A fire can run for minutes: the answer comes once it runs (or fails to start), and the page follows it.
  [/^\/schedule\/routines\/([^/]+)\/run$/, ([name]) =>
    steer((scheduler) =>
      Effect.gen(function*() {
        const fire = yield* Effect.forkDaemon(scheduler.runRoutine(name!))
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

/** The action a POST to `path` runs, or `BadAction` (404) when no action lives there. */
export const run = (path: string, fields: Fields): Effect.Effect<unknown, unknown, Flotta> => {
  for (const [pattern, action] of routes) {
    const match = pattern.exec(path)
    if (match === null) continue
    let args: Array<string>
    try {
      args = match.slice(1).map(decodeURIComponent)
    } catch {
      return Effect.fail(new BadAction({ status: 400, reason: `the path ${path} is not well encoded` }))
    }
    return action(args, fields)
  }
  return Effect.fail(new BadAction({ status: 404, reason: `nothing to do at ${path}` }))
}

/** The HTTP status of a failed action, from its error's tag. */
export const statusOf = (error: unknown): number => {
  if (error instanceof BadAction) return error.status
  const tag = typeof error === "object" && error !== null && "_tag" in error ? String(error._tag) : ""
  if (/NotFound$/.test(tag)) return 404
  if (tag === "InvalidSpec" || tag === "InvalidSchedule" || tag === "InvalidName") return 400
  return 409
}
