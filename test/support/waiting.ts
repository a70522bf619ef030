/**
 * Waiting for a condition in real time, in tests that drive real processes: each polls briefly and fails naming
 * what it waited for. (Tests under TestClock use `eventually` from packages/core/test/support.ts instead.)
 */
import { Clock, Effect } from "effect"

/** Polls a synchronous check until it holds. */
export const waitUntil = async (check: () => boolean, ms: number, what: string) => {
  const end = Date.now() + ms
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** Polls an async read until its value satisfies `done`, and returns that value. */
export const eventually = async <A>(read: () => Promise<A>, done: (value: A) => boolean, ms: number, what: string) => {
  const end = Date.now() + ms
  while (true) {
    const value = await read()
    if (done(value)) return value
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(value)}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

const realClock = Clock.make()

/** Polls an Effect's view until it satisfies `predicate` (on the real clock, whatever the test's). */
export const waitFor = <A, E, R>(
  view: Effect.Effect<A, E, R>,
  predicate: (a: A) => boolean,
  what = "the condition",
  ms = 60_000
) =>
  Effect.gen(function*() {
    const end = Date.now() + ms
    while (true) {
      const value = yield* view
      if (predicate(value)) return value
      if (Date.now() > end) {
        return yield* Effect.dieMessage(
          `timed out waiting for ${what} (${ms / 1000} s); last: ${JSON.stringify(value)}`
        )
      }
      yield* Effect.sleep("50 millis").pipe(Effect.withClock(realClock))
    }
  })
