/**
 * The heartbeat: a loop that brings the state up to the present, then sleeps until the next instant anything
 * can change (at most `tickMs`; a steering call or a fire's end wakes it early). Bringing the state up to
 * `now` counts working time toward interval routines, lifts rails on a new local day, expires overrides,
 * records wake and stop, and starts the routines that fell due (or records why each is skipped).
 */
import { Clock, Duration, Effect, Fiber, Queue, Ref } from "effect"
import * as Calendar from "./Calendar.js"
import type { Fires } from "./Fires.js"
import type { RoutineState, Shared, State, Steer } from "./internal/state.js"
import { overrideView } from "./Overrides.js"
import type { Routine } from "./Routine.js"
import * as Events from "./SchedulerEvents.js"
import { formatLocal, localDay } from "./WorkingHours.js"

export interface Heartbeat {
  /** Brings the state up to `now` (call it holding the lock) and returns when to look again. */
  readonly evaluate: (now: number) => Effect.Effect<number>
  /** The loop itself; it runs until interrupted. */
  readonly run: Effect.Effect<never>
  readonly steer: Steer
}

export const make = (shared: Shared, fires: Fires): Heartbeat => {
  const { locked, poke, record, state, tickMs, zone } = shared

  const evaluate = (now: number) =>
    Effect.gen(function*() {
      const s = yield* Ref.get(state)
      // A clock that went backwards counts no working time.
      const prev = Math.min(s.lastEval, now)
      const worked = s.mode === "working" ? Calendar.workingMs(Calendar.calendarOf(shared, s), prev, now) : 0
      const day = localDay(zone, now)
      const events: Array<Effect.Effect<unknown>> = []
      const due: Array<Routine> = []
      const routines = new Map<string, RoutineState>()
      for (const [name, r0] of s.routines) {
        let r = r0
        if (r.spentDay !== day) {
          if (r.railed) {
            events.push(record(Events.rail, { routine: name, action: "lifted", reason: "a new local day" }))
          }
          r = { ...r, spentDay: day, spentUsd: 0, railed: false }
        }
        const every = r.routine.every
        let firesAt: number | undefined
        if ("intervalMs" in every) {
          r = { ...r, workedMs: r.workedMs + worked }
          if (r.workedMs >= every.intervalMs) {
            firesAt = now
            r = { ...r, workedMs: 0 }
          }
        } else if ("dailyAt" in every) {
          // (A routine fired only on trigger never falls due.)
          const c = Calendar.dailyCrossing(zone, every.dailyAt, prev, now)
          if (
            c !== undefined && (r.lastSlot === null || c.instant > r.lastSlot) &&
            Calendar.isWorkDay(shared.hours, s, c.day)
          ) {
            firesAt = c.instant
            r = { ...r, lastSlot: c.instant }
          }
        }
        if (firesAt !== undefined) {
          const skip = s.mode === "paused"
            ? "paused"
            : Calendar.inStop(s, firesAt)
            ? "stopped for today"
            : r.railed
            ? "daily budget rail"
            : r.running !== null
            ? "previous fire still running"
            : undefined
          if (skip === undefined) due.push(r.routine)
          else {
            events.push(record(Events.skip, {
              routine: name,
              reason: skip,
              trigger: "schedule",
              localTime: formatLocal(zone, firesAt),
              ...(r.running === null ? {} : { running: r.running.fireId })
            }))
          }
        }
        routines.set(name, r)
      }
      const expired = s.overrides.filter((o) => o.until <= now)
      const next: State = {
        ...s,
        routines,
        overrides: s.overrides.filter((o) => o.until > now),
        // Yesterday's stays: the next evaluation may look back at a `dailyAt` crossing on it.
        workDays: new Set([...s.workDays].filter((d) => d >= day - 1)),
        lastEval: now
      }
      const isWorking = Calendar.workingNow(shared, next, now)
      yield* Ref.set(state, { ...next, working: isWorking })
      for (const o of expired) {
        yield* record(Events.override, { action: o.kind, phase: "expired", ...overrideView(o) })
      }
      yield* Effect.all(events, { discard: true })
      if (isWorking !== s.working) {
        yield* record(isWorking ? Events.wake : Events.stop, {
          reason: Calendar.reasonAt(shared, next, now),
          localTime: formatLocal(zone, now)
        })
      }
      for (const routine of due) yield* fires.start({ _tag: "Routine", routine }, "schedule", now)
      return Calendar.nextWake(shared, yield* Ref.get(state), now)
    })

  const run = Effect.gen(function*() {
    // The pending wake-up. A poke that leaves the next wake where it was keeps it: a sleep dropped on every
    // poke (each fire's end is one) is a timer made and cleared for nothing, and a step more for TestClock.
    let alarm: { readonly at: number; readonly fiber: Fiber.RuntimeFiber<void> } | undefined
    while (true) {
      const now = yield* Clock.currentTimeMillis
      const wakeAt = yield* locked(evaluate(now)).pipe(
        Effect.catchAllCause((cause) =>
          Effect.logError("scheduler heartbeat failed", cause).pipe(Effect.as(now + tickMs))
        )
      )
      const at = now + Math.max(1, Math.min(wakeAt - now, tickMs))
      if (alarm?.at !== at) {
        if (alarm !== undefined) yield* Fiber.interrupt(alarm.fiber)
        alarm = { at, fiber: yield* Effect.fork(Effect.sleep(Duration.millis(at - now))) }
      }
      const rang = yield* Effect.race(
        Effect.as(Fiber.await(alarm.fiber), true),
        Effect.as(Queue.take(poke), false)
      )
      if (rang) alarm = undefined
    }
  })

  const steer: Steer = (change) =>
    locked(Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      yield* evaluate(now)
      const result = yield* change(now)
      yield* evaluate(now)
      return result
    })).pipe(Effect.tap(() => Queue.offer(poke, undefined)))

  return { evaluate, run, steer }
}
