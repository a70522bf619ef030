/**
 * Admission: at most `slots` effects at once, the rest waiting in arrival order. A queue of tokens rather than
 * Effect's Semaphore, whose release wakes every waiter to compete for the freed permit: with a thousand starts
 * waiting, that made each start cost a thousand wake-ups.
 */
import { Effect, Queue } from "effect"

export const make = Effect.fnUntraced(function*(slots: number) {
  const tokens = yield* Queue.bounded<void>(slots)
  yield* Queue.offerAll(tokens, Array.from({ length: slots }, () => undefined))
  /** Runs `effect` once a slot is free (the wait is interruptible; the slot is always given back). */
  return <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.uninterruptibleMask((restore) =>
      Effect.zipRight(
        restore(Queue.take(tokens)),
        restore(effect).pipe(Effect.ensuring(Queue.offer(tokens, undefined)))
      )
    )
})
