/**
 * One timer for the whole fleet: turns set alarms (their deadline, the end of an interrupt's grace, a stall)
 * and cancel them when they end, with no fiber and no timer of their own. A single fiber sleeps, on the Effect
 * Clock (so TestClock drives it), until the earliest alarm, and runs the alarms that are due.
 *
 * Alarms are cancelled lazily: a cancelled one stays in the heap until it comes up, or until cancelled ones
 * outnumber the live ones and the heap is rebuilt. Setting one later than the earliest needs no wake-up, which
 * is the common case: a turn's deadline lies after the alarms already set.
 */
import { Duration, Effect, Queue } from "effect"
import type { Scope } from "effect"

interface Entry {
  readonly at: number
  readonly fire: Effect.Effect<void>
  cancelled: boolean
}

export interface Alarms {
  /** Runs `fire` at `at` (Clock millis) unless cancelled first; returns the function that cancels it. */
  readonly set: (at: number, fire: Effect.Effect<void>) => () => void
}

/** A binary min-heap of entries by `at`. */
class Heap {
  items: Array<Entry> = []
  push(entry: Entry) {
    const items = this.items
    items.push(entry)
    let i = items.length - 1
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (items[parent]!.at <= entry.at) break
      items[i] = items[parent]!
      i = parent
    }
    items[i] = entry
  }
  peek(): Entry | undefined {
    return this.items[0]
  }
  pop(): Entry | undefined {
    const items = this.items
    const top = items[0]
    const last = items.pop()
    if (top === undefined || last === undefined || items.length === 0) return top
    let i = 0
    while (true) {
      const left = 2 * i + 1
      if (left >= items.length) break
      const right = left + 1
      const child = right < items.length && items[right]!.at < items[left]!.at ? right : left
      if (items[child]!.at >= last.at) break
      items[i] = items[child]!
      i = child
    }
    items[i] = last
    return top
  }
  rebuild(keep: (entry: Entry) => boolean) {
    const live = this.items.filter(keep)
    this.items = []
    for (const entry of live) this.push(entry)
  }
}

/** The fleet's alarms, for as long as the scope lives (its fiber ends with it). */
export const make: Effect.Effect<Alarms, never, Scope.Scope> = Effect.gen(function*() {
  const heap = new Heap()
  let cancelled = 0
  /** When the fiber will next look (Infinity: it waits to be poked). */
  let nextLook = Number.POSITIVE_INFINITY
  const poke = yield* Queue.sliding<void>(1)

  const runDue = (now: number) =>
    Effect.suspend(() => {
      const due: Array<Effect.Effect<void>> = []
      for (let top = heap.peek(); top !== undefined && top.at <= now; top = heap.peek()) {
        heap.pop()
        if (top.cancelled) cancelled--
        else due.push(top.fire)
      }
      return due.length === 0 ? Effect.void : Effect.forEach(
        due,
        (fire) => Effect.catchAllCause(fire, (cause) => Effect.logError("an alarm failed", cause)),
        { discard: true }
      )
    })

  yield* Effect.gen(function*() {
    const clock = yield* Effect.clock
    while (true) {
      yield* runDue(clock.unsafeCurrentTimeMillis())
      // Cancelled alarms on top are dropped now rather than slept for.
      for (let top = heap.peek(); top !== undefined && top.cancelled; top = heap.peek()) {
        heap.pop()
        cancelled--
      }
      const now = clock.unsafeCurrentTimeMillis()
      const earliest = heap.peek()?.at
      if (earliest !== undefined && earliest <= now) continue
      nextLook = earliest ?? Number.POSITIVE_INFINITY
      yield* earliest === undefined
        ? Queue.take(poke)
        : Effect.raceFirst(Effect.sleep(Duration.millis(earliest - now)), Queue.take(poke))
    }
  }).pipe(Effect.forkScoped)

  const set = (at: number, fire: Effect.Effect<void>) => {
    const entry: Entry = { at, fire, cancelled: false }
    heap.push(entry)
    if (at < nextLook) {
      nextLook = at
      poke.unsafeOffer(undefined)
    }
    return () => {
      if (entry.cancelled) return
      entry.cancelled = true
      // Rebuilt when dead entries outnumber live ones: the heap stays within twice what is live.
      if (++cancelled > 64 && cancelled * 2 > heap.items.length) {
        heap.rebuild((e) => !e.cancelled)
        cancelled = 0
      }
    }
  }

  return { set } satisfies Alarms
})
