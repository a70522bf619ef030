/**
 * The tools' bounded waits, as a client sees them: a turn, a run or a broadcast waited for at most the call's
 * bound, with progress in words every few seconds, and a `done: false` answer that says what is still going and
 * what to call next. Built on `wait.ts`, so giving up on a wait never cancels what it waited for.
 */
import type { Flotta } from "@flotta/core/Flotta"
import { Clock, Duration, Effect } from "effect"
import * as S from "../Schemas.js"
import type { Failure, ToolContext } from "../Tool.js"
import * as Wait from "./wait.js"

/** How often a wait reports progress. */
export const PROGRESS_INTERVAL = Duration.seconds(3)

/** A tool argument in seconds, as a Duration. */
export const seconds = (n: number) => Duration.millis(Math.round(n * 1000))

/** A call's wait bound: its `timeoutSeconds`, else the default, never above the maximum. */
export const waitBound = (n: number | undefined) =>
  seconds(Math.min(S.MAX_WAIT_SECONDS, Math.max(0, n ?? S.DEFAULT_WAIT_SECONDS)))

const secondsText = (ms: number) => `${Math.round(ms / 1000)} s`

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

/** The turn to wait for when none is named: the agent's most recent one. */
export const latestTurn = (fleet: Flotta, name: string) =>
  Effect.gen(function*() {
    const turns = yield* fleet.transcript(name)
    const last = turns[turns.length - 1]
    if (last === undefined) {
      return yield* Effect.fail<Failure>({ _tag: "NoResult", message: `"${name}" has no turn yet` })
    }
    return last.turnId
  })

/** Whether `name` is an async run or verify the fleet knows (running or finished). */
export const isRun = (fleet: Flotta, name: string) =>
  fleet.runResult(name).pipe(
    Effect.as(true),
    Effect.catchAll((e) => Effect.succeed(e._tag !== "RunNotFound"))
  )

/** Waits for one turn within the bound, with progress; a failed turn is a failure of the call. */
export const waitTurn = (
  fleet: Flotta,
  name: string,
  turnId: string,
  boundSeconds: number | undefined,
  ctx: ToolContext
) =>
  Effect.gen(function*() {
    const bound = waitBound(boundSeconds)
    const boundMs = Duration.toMillis(bound)
    const started = yield* Clock.currentTimeMillis
    const outcome = yield* Wait.turn(fleet, name, turnId, {
      bound,
      tick: PROGRESS_INTERVAL,
      onTick: (waitedMs) =>
        describeTurn(fleet, name, turnId, waitedMs).pipe(
          Effect.flatMap(({ message }) => ctx.progress(message, waitedMs / 1000, boundMs / 1000))
        )
    })
    const waitedMs = (yield* Clock.currentTimeMillis) - started
    if (outcome._tag === "Failed") return yield* Effect.fail(outcome.error)
    if (outcome._tag === "Done") {
      return {
        done: true,
        name,
        kind: "turn" as const,
        turnId,
        waitedMs,
        result: outcome.result,
        message: `agent ${name}: turn ${turnId} finished`
      }
    }
    const { message, status } = yield* describeTurn(fleet, name, turnId, waitedMs)
    return {
      done: false,
      name,
      kind: "turn" as const,
      turnId,
      waitedMs,
      ...(status === undefined ? {} : { status }),
      message: `${message}; call flotta_wait again with this turnId`
    }
  })

/** Waits for an async run (or verify) within the bound, with progress; a failed run is a failure of the call. */
export const waitRun = (fleet: Flotta, name: string, boundSeconds: number | undefined, ctx: ToolContext) =>
  Effect.gen(function*() {
    const bound = waitBound(boundSeconds)
    const boundMs = Duration.toMillis(bound)
    const started = yield* Clock.currentTimeMillis
    const outcome = yield* Wait.run(fleet, name, {
      bound,
      tick: PROGRESS_INTERVAL,
      onTick: (waitedMs) =>
        describeRun(fleet, name, waitedMs).pipe(
          Effect.flatMap((message) => ctx.progress(message, waitedMs / 1000, boundMs / 1000))
        )
    })
    const waitedMs = (yield* Clock.currentTimeMillis) - started
    if (outcome._tag === "Failed") return yield* Effect.fail(outcome.error)
    if (outcome._tag === "Done") {
      return {
        done: true,
        name,
        kind: "run" as const,
        waitedMs,
        result: outcome.result,
        message: `${outcome.result.kind} ${name} finished`
      }
    }
    return {
      done: false,
      name,
      kind: "run" as const,
      waitedMs,
      message: `${yield* describeRun(fleet, name, waitedMs)}; call flotta_wait again`
    }
  })

/**
 * Prompts every named agent and waits for each reply within one bound, with progress on how many answered.
 * Each agent's entry is its reply, its error, or `done: false` with the turn id to wait for.
 */
export const waitBroadcast = (
  fleet: Flotta,
  names: ReadonlyArray<string>,
  prompt: (name: string) => Effect.Effect<string, Failure>,
  boundSeconds: number | undefined,
  ctx: ToolContext
) =>
  Effect.gen(function*() {
    const bound = waitBound(boundSeconds)
    const boundMs = Duration.toMillis(bound)
    let answered = 0
    const started = yield* Clock.currentTimeMillis
    const progress = Effect.gen(function*() {
      const waited = (yield* Clock.currentTimeMillis) - started
      yield* ctx.progress(
        `broadcast: ${answered} of ${names.length} agents answered, waited ${secondsText(waited)}`,
        waited / 1000,
        boundMs / 1000
      )
    }).pipe(Effect.delay(PROGRESS_INTERVAL), Effect.forever)
    const one = (name: string) =>
      Effect.gen(function*() {
        const turnId = yield* prompt(name)
        const outcome = yield* Wait.turn(fleet, name, turnId, { bound, tick: bound })
        if (outcome._tag === "Pending") return { name, done: false, ok: true, turnId }
        answered++
        if (outcome._tag === "Failed") return { name, done: true, ok: false, turnId, error: outcome.error }
        return { name, done: true, ok: true, turnId, text: outcome.result.text, costUsd: outcome.result.costUsd }
      }).pipe(
        Effect.catchAll((error: Failure) =>
          Effect.succeed({ name, done: true, ok: false, error: { _tag: error._tag, message: error.message } })
        )
      )
    const agents = yield* Effect.forEach(names, one, { concurrency: "unbounded" }).pipe(Effect.raceFirst(progress))
    return { agents }
  })
