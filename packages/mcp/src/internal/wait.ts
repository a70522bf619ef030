/**
 * Bounded waits that never cancel what they wait for. An MCP client that gives up on a wait (timeout,
 * cancellation, a closed stream) must not stop the agent, so a turn is waited for with `Flotta.watch` (not
 * `Flotta.wait`, which cancels the turn when interrupted) and a run with `awaitRun` (which only reads).
 * Interrupting these effects, or running out of time, only stops the watching.
 */
import type * as Agent from "@flotta/core/Agent"
import type { Flotta } from "@flotta/core/Flotta"
import type * as Run from "@flotta/core/Run"
import { Clock, Duration, Effect, Either, Option } from "effect"
import type { Failure } from "../Tool.js"

export type Outcome<A> =
  | { readonly _tag: "Done"; readonly result: A }
  | { readonly _tag: "Failed"; readonly error: Failure }
  | { readonly _tag: "Pending" }

export interface WaitOptions {
  /** How long to wait at most. */
  readonly bound: Duration.Duration
  /** How often `onTick` runs while waiting. */
  readonly tick: Duration.Duration
  /** Runs every `tick` while the wait goes on, with the time waited so far. */
  readonly onTick?: (waitedMs: number) => Effect.Effect<void>
}

const view = (error: Failure): Failure => ({ _tag: error._tag, message: error.message })

/** Runs `onTick` at every multiple of `tick` from `started`, short of the bound; never ends. */
const ticker = (started: number, options: WaitOptions): Effect.Effect<never> => {
  const { onTick } = options
  if (onTick === undefined) return Effect.never
  const tickMs = Math.max(1, Duration.toMillis(options.tick))
  const boundMs = Duration.toMillis(options.bound)
  return Effect.gen(function*() {
    while (true) {
      const waited = (yield* Clock.currentTimeMillis) - started
      const next = (Math.floor(waited / tickMs) + 1) * tickMs
      if (next >= boundMs) return yield* Effect.never // the wait ends there: no tick at the bound
      yield* Effect.sleep(Duration.millis(next - waited))
      yield* onTick((yield* Clock.currentTimeMillis) - started)
    }
  })
}

/**
 * Waits for `effect` within the bound, ticking meanwhile. Errors for which `isMissing` holds fail the wait
 * (nothing to wait for); any other error is a `Failed` outcome.
 */
const bounded = <A, E extends Failure>(
  effect: Effect.Effect<A, E>,
  isMissing: (error: E) => boolean,
  options: WaitOptions
): Effect.Effect<Outcome<A>, Failure> =>
  Effect.gen(function*() {
    const started = yield* Clock.currentTimeMillis
    const outcome = yield* Effect.either(effect).pipe(
      Effect.raceFirst(ticker(started, options)),
      Effect.timeoutOption(options.bound)
    )
    if (Option.isNone(outcome)) return { _tag: "Pending" } as const
    if (Either.isRight(outcome.value)) return { _tag: "Done", result: outcome.value.right } as const
    const error = outcome.value.left
    if (isMissing(error)) return yield* Effect.fail(view(error))
    return { _tag: "Failed", error: view(error) } as const
  })

/**
 * Waits for one turn within the bound. Fails only when there is nothing to wait for (no such agent or turn);
 * a turn that failed is a `Failed` outcome.
 */
export const turn = (
  fleet: Flotta,
  name: string,
  turnId: string,
  options: WaitOptions
): Effect.Effect<Outcome<Agent.TurnResult>, Failure> =>
  bounded(
    fleet.watch(name, turnId),
    (error) => error._tag === "AgentNotFound" || error._tag === "NoResult",
    options
  )

/** Waits for an async run (or verify) within the bound. Fails only when there is no such run. */
export const run = (
  fleet: Flotta,
  name: string,
  options: WaitOptions
): Effect.Effect<Outcome<Run.RunResult | Run.VerifyReport>, Failure> =>
  bounded(fleet.awaitRun(name), (error) => error._tag === "RunNotFound", options)
