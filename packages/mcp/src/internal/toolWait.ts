/**
 * The agent tools' waits, as a client sees them: a turn, a run or a broadcast waited for at most the call's
 * bound, with progress in words, and a `done: false` answer that says what is still going and what to call next.
 * A turn is watched with `Flotta.watch` (not `Flotta.wait`, which cancels the turn when interrupted) and a run
 * with `awaitRun` (which only reads), so giving up on a wait never cancels what it waited for.
 */
import type { Flotta } from "@flotta/core/Flotta"
import { Clock, Effect, Either, Option } from "effect"
import type { Failure, ToolContext } from "../Tool.js"
import { bounded, secondsText, waitBound, withProgress } from "./wait.js"

/** The status of an agent in words, for progress and for a wait that ended before the turn did. */
const describeTurn = (fleet: Flotta, name: string, turnId: string, waitedMs: number) =>
  Effect.gen(function*() {
    const status = yield* fleet.status(name)
    if (status.current === turnId) {
      const now = yield* Clock.currentTimeMillis
      const since = status.currentStartedAt === null ? waitedMs : now - Date.parse(status.currentStartedAt)
      const queued = status.queued > 0 ? ` (${status.queued} queued)` : ""
      return { status, message: `agent ${name}: turn ${turnId} running for ${secondsText(since)}${queued}` }
    }
    const ahead = status.current === null ? "" : `, behind ${status.current}`
    return {
      status,
      message: `agent ${name}: turn ${turnId} queued${ahead} (${status.queued} queued), waited ${secondsText(waitedMs)}`
    }
  }).pipe(
    Effect.catchAll(() => Effect.succeed({ status: undefined, message: `agent ${name}: turn ${turnId} pending` }))
  )

const describeRun = (fleet: Flotta, name: string, waitedMs: number) =>
  fleet.status(name).pipe(
    Effect.map((s) => `run ${name}: ${s.status}, waited ${secondsText(waitedMs)}`),
    Effect.orElseSucceed(() => `run ${name}: running, waited ${secondsText(waitedMs)}`)
  )

/**
 * A bounded wait's answer: `done: true` with the result when it came within the bound, else `done: false` with
 * what is still going (`pending`) and what to call next.
 */
const answer = <A, E, R, Subject extends object, Pending extends { readonly message: string }>(
  waited: Effect.Effect<{ readonly outcome: Option.Option<A>; readonly waitedMs: number }, E, R>,
  subject: Subject,
  finished: (result: A) => string,
  pending: (waitedMs: number) => Effect.Effect<Pending>
) =>
  Effect.gen(function*() {
    const { outcome, waitedMs } = yield* waited
    if (Option.isSome(outcome)) {
      return { done: true, ...subject, waitedMs, result: outcome.value, message: finished(outcome.value) }
    }
    return { done: false, ...subject, waitedMs, ...(yield* pending(waitedMs)) }
  })

/** The turn to wait for when none is named: the agent's most recent one. */
export const latestTurn = Effect.fn("toolWait.latestTurn")(function*(fleet: Flotta, name: string) {
  const turns = yield* fleet.transcript(name)
  const last = turns[turns.length - 1]
  if (last === undefined) {
    return yield* Effect.fail<Failure>({ _tag: "NoResult", message: `"${name}" has no turn yet` })
  }
  return last.turnId
})

/** Whether `name` is an async run or verify the fleet knows (running or finished). */
export const isRun = Effect.fn("toolWait.isRun")(function*(fleet: Flotta, name: string) {
  return yield* fleet.runResult(name).pipe(
    Effect.as(true),
    Effect.catchAll((e) => Effect.succeed(e._tag !== "RunNotFound"))
  )
})

/** Waits for one turn within the bound, with progress; a failed turn is a failure of the call. */
export const waitTurn = Effect.fn("toolWait.waitTurn")(
  function*(fleet: Flotta, name: string, turnId: string, boundSeconds: number | undefined, ctx: ToolContext) {
    return yield* answer(
      bounded(fleet.watch(name, turnId), waitBound(boundSeconds), {
        ctx,
        describe: (waitedMs) => Effect.map(describeTurn(fleet, name, turnId, waitedMs), ({ message }) => message)
      }),
      { name, kind: "turn" as const, turnId },
      () => `agent ${name}: turn ${turnId} finished`,
      (waitedMs) =>
        Effect.map(describeTurn(fleet, name, turnId, waitedMs), ({ message, status }) => ({
          ...(status === undefined ? {} : { status }),
          message: `${message}; call flotta_wait again with this turnId`
        }))
    )
  }
)

/** Waits for an async run (or verify) within the bound, with progress; a failed run is a failure of the call. */
export const waitRun = Effect.fn("toolWait.waitRun")(
  function*(fleet: Flotta, name: string, boundSeconds: number | undefined, ctx: ToolContext) {
    return yield* answer(
      bounded(fleet.awaitRun(name), waitBound(boundSeconds), {
        ctx,
        describe: (waitedMs) => describeRun(fleet, name, waitedMs)
      }),
      { name, kind: "run" as const },
      (result) => `${result.kind} ${name} finished`,
      (waitedMs) =>
        Effect.map(describeRun(fleet, name, waitedMs), (message) => ({ message: `${message}; call flotta_wait again` }))
    )
  }
)

const errorView = (error: Failure) => ({ _tag: error._tag, message: error.message })

/** Errors that mean there is no turn to wait for (as opposed to a turn that failed). */
const isMissing = (error: Failure) => error._tag === "AgentNotFound" || error._tag === "NoResult"

/**
 * Prompts every named agent and waits for each reply within one bound, with progress on how many answered.
 * Each agent's entry is its reply, its error, or `done: false` with the turn id to wait for.
 */
export const waitBroadcast = Effect.fn("toolWait.waitBroadcast")(
  function*(
    fleet: Flotta,
    names: ReadonlyArray<string>,
    prompt: (name: string) => Effect.Effect<string, Failure>,
    boundSeconds: number | undefined,
    ctx: ToolContext
  ) {
    const bound = waitBound(boundSeconds)
    let answered = 0
    const one = (name: string) =>
      Effect.gen(function*() {
        const turnId = yield* prompt(name)
        const { outcome } = yield* bounded(Effect.either(fleet.watch(name, turnId)), bound)
        if (Option.isNone(outcome)) return { name, done: false, ok: true, turnId }
        const reply = outcome.value
        if (Either.isLeft(reply) && isMissing(reply.left)) return yield* Effect.fail(reply.left)
        answered++
        if (Either.isLeft(reply)) return { name, done: true, ok: false, turnId, error: errorView(reply.left) }
        return { name, done: true, ok: true, turnId, text: reply.right.text, costUsd: reply.right.costUsd }
      }).pipe(
        Effect.catchAll((error: Failure) => Effect.succeed({ name, done: true, ok: false, error: errorView(error) }))
      )
    return yield* withProgress(Effect.forEach(names, one, { concurrency: "unbounded" }), bound, {
      ctx,
      describe: (waitedMs) =>
        Effect.succeed(`broadcast: ${answered} of ${names.length} agents answered, waited ${secondsText(waitedMs)}`)
    }).pipe(Effect.map((agents) => ({ agents })))
  }
)
