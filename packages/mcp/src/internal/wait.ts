/**
 * The bounded wait with progress, the one every waiting tool uses (a turn, a run, a broadcast, a scheduler
 * fire): it waits at most the call's bound (MCP clients give up on a call after about 60 s) and sends a progress
 * notification in words every few seconds meanwhile. What is waited for must only watch, never own, the work:
 * running out of time, or the client cancelling, interrupts the watching and nothing else.
 */
import { Clock, Duration, Effect, Option } from "effect"
import * as S from "../Schemas.js"
import type { ToolContext } from "../Tool.js"

/** How often a wait reports progress. */
export const PROGRESS_INTERVAL = Duration.seconds(3)

/** A tool argument in seconds, as a Duration. */
export const seconds = (n: number) => Duration.millis(Math.round(n * 1000))

/** A call's wait bound: its `timeoutSeconds`, else the default, never above the maximum. */
export const waitBound = (n: number | undefined) =>
  seconds(Math.min(S.MAX_WAIT_SECONDS, Math.max(0, n ?? S.DEFAULT_WAIT_SECONDS)))

/** A duration in whole seconds, for progress messages. */
export const secondsText = (ms: number) => `${Math.round(ms / 1000)} s`

/** Progress for one call: where it goes, and the state in words after `waitedMs`. */
export interface Progress {
  readonly ctx: ToolContext
  readonly describe: (waitedMs: number) => Effect.Effect<string>
}

/** How a bounded wait ended: with the value, or (`None`) at its bound; and how long it took. */
export interface Waited<A> {
  readonly outcome: Option.Option<A>
  readonly waitedMs: number
}

/** Sends progress at every multiple of the interval from `started`, short of the bound; never ends. */
const ticker = (started: number, bound: Duration.Duration, progress: Progress): Effect.Effect<never> => {
  const tickMs = Duration.toMillis(PROGRESS_INTERVAL)
  const boundMs = Duration.toMillis(bound)
  return Effect.gen(function*() {
    while (true) {
      const waited = (yield* Clock.currentTimeMillis) - started
      const next = (Math.floor(waited / tickMs) + 1) * tickMs
      if (next >= boundMs) return yield* Effect.never // the wait ends there: no progress at the bound
      yield* Effect.sleep(Duration.millis(next - waited))
      const waitedMs = (yield* Clock.currentTimeMillis) - started
      yield* Effect.flatMap(
        progress.describe(waitedMs),
        (message) => progress.ctx.progress(message, waitedMs / 1000, boundMs / 1000)
      )
    }
  })
}

/** Runs `effect` to its end, sending progress meanwhile (none at or past `bound`). */
export const withProgress = Effect.fn("wait.withProgress")(
  function*<A, E, R>(effect: Effect.Effect<A, E, R>, bound: Duration.Duration, progress: Progress) {
    return yield* Effect.flatMap(
      Clock.currentTimeMillis,
      (started) => Effect.raceFirst(effect, ticker(started, bound, progress))
    )
  }
)

/** Waits for `effect` at most `bound`, with progress when given; its failure is the wait's. */
export const bounded = Effect.fn("wait.bounded")(
  function*<A, E, R>(effect: Effect.Effect<A, E, R>, bound: Duration.Duration, progress?: Progress) {
    const started = yield* Clock.currentTimeMillis
    const timed = Effect.timeoutOption(effect, bound)
    const outcome = yield* (progress === undefined ? timed : withProgress(timed, bound, progress))
    return { outcome, waitedMs: (yield* Clock.currentTimeMillis) - started }
  }
)
