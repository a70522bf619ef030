/**
 * Bounded waits that never cancel what they wait for. `Flotta.wait` cancels a turn when its caller is
 * interrupted; an MCP client that gives up on a wait (timeout, cancellation, a closed stream) must not stop the
 * agent. So a turn is watched through the report log and read with `Flotta.result`, and a run through its
 * outcome (`awaitRun`, which only reads). Interrupting these effects only stops the watching.
 */
import type * as Agent from "@flotta/core/Agent"
import type { Flotta } from "@flotta/core/Flotta"
import type * as Run from "@flotta/core/Run"
import { Clock, Duration, Effect, Option, Queue, Stream } from "effect"

export interface Failure {
  readonly _tag: string
  readonly message: string
}

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

/** Waits for a wake-up or the next tick; runs `onTick` on a tick. Returns true when the bound is reached. */
const pause = <A>(
  wake: Queue.Queue<A>,
  started: number,
  options: WaitOptions,
  ticks: { count: number }
): Effect.Effect<{ readonly expired: boolean; readonly woke: Option.Option<A> }> =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const boundMs = Duration.toMillis(options.bound)
    const tickMs = Math.max(1, Duration.toMillis(options.tick))
    if (now - started >= boundMs) return { expired: true, woke: Option.none() }
    const nextTickAt = started + (ticks.count + 1) * tickMs
    const until = Math.min(nextTickAt, started + boundMs)
    const woke = yield* Queue.take(wake).pipe(Effect.timeoutOption(Duration.millis(Math.max(0, until - now))))
    if (Option.isNone(woke)) {
      const later = yield* Clock.currentTimeMillis
      if (later - started >= boundMs) return { expired: true, woke }
      if (later >= nextTickAt) {
        ticks.count = Math.floor((later - started) / tickMs)
        if (options.onTick) yield* options.onTick(later - started)
      }
    }
    return { expired: false, woke }
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
  Effect.scoped(Effect.gen(function*() {
    // Subscribed before the first read, so an end that lands in between is not missed.
    const feed = yield* fleet.subscribe({ agent: name, kinds: ["result", "error"], capacity: 64 })
    const wake = yield* Queue.sliding<Option.Option<Failure>>(16)
    yield* feed.pipe(
      Stream.runForEach((notice) => {
        if (notice._tag === "Missed") return Queue.offer(wake, Option.none())
        if (notice.entry.turnId !== turnId) return Effect.void
        const data = notice.entry.data as { readonly error?: Failure } | null
        return Queue.offer(wake, notice.entry.kind === "error" && data?.error ? Option.some(data.error) : Option.none())
      }),
      Effect.forkScoped
    )
    const started = yield* Clock.currentTimeMillis
    const ticks = { count: 0 }
    let reported: Failure | undefined
    while (true) {
      const read = yield* Effect.either(fleet.result(name, turnId))
      if (read._tag === "Right") return { _tag: "Done", result: read.right } as const
      const error = read.left
      if (error._tag === "AgentNotFound" || error._tag === "NoResult") {
        // The agent was closed and removed after the turn ended: the report log still says how it ended.
        if (reported !== undefined) return { _tag: "Failed", error: view(reported) } as const
        return yield* Effect.fail(view(error))
      }
      if (error._tag !== "TurnPending") return { _tag: "Failed", error: view(error) } as const
      const { expired, woke } = yield* pause(wake, started, options, ticks)
      if (Option.isSome(woke) && Option.isSome(woke.value)) reported = woke.value.value
      if (expired) return { _tag: "Pending" } as const
    }
  }))

/** Waits for an async run (or verify) within the bound. Fails only when there is no such run. */
export const run = (
  fleet: Flotta,
  name: string,
  options: WaitOptions
): Effect.Effect<Outcome<Run.RunResult | Run.VerifyReport>, Failure> =>
  Effect.gen(function*() {
    const started = yield* Clock.currentTimeMillis
    const boundMs = Duration.toMillis(options.bound)
    const tickMs = Math.max(1, Duration.toMillis(options.tick))
    let ticks = 0
    while (true) {
      const now = yield* Clock.currentTimeMillis
      const nextTickAt = started + (ticks + 1) * tickMs
      const until = Math.min(nextTickAt, started + boundMs)
      // `awaitRun` only reads the run's outcome: timing it out never touches the run.
      const outcome = yield* fleet.awaitRun(name).pipe(
        Effect.timeoutOption(Duration.millis(Math.max(0, until - now))),
        Effect.either
      )
      if (outcome._tag === "Left") {
        if (outcome.left._tag === "RunNotFound") return yield* Effect.fail(view(outcome.left))
        return { _tag: "Failed", error: view(outcome.left) } as const
      }
      if (Option.isSome(outcome.right)) return { _tag: "Done", result: outcome.right.value } as const
      const later = yield* Clock.currentTimeMillis
      if (later - started >= boundMs) return { _tag: "Pending" } as const
      if (later >= nextTickAt) {
        ticks = Math.floor((later - started) / tickMs)
        if (options.onTick) yield* options.onTick(later - started)
      }
    }
  })
