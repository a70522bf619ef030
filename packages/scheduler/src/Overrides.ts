/**
 * Overrides: steering that changes the schedule at runtime. `keepGoing` and `workOn`/`workToday` add working
 * time, `stopForToday` removes it; each is an override that expires by itself. `pause` and `resume` switch
 * the mode (`resume` also undoes a stop for today and lifts the daily rails). Every change is recorded.
 */
import { Clock, Effect, Ref } from "effect"
import * as Calendar from "./Calendar.js"
import { InvalidSchedule } from "./Errors.js"
import { hex } from "./internal/ids.js"
import type { OverrideState, Shared, Steer } from "./internal/state.js"
import * as Events from "./SchedulerEvents.js"
import type { Override, SchedulerStatus, WindowInput } from "./Steering.js"
import type { Hours, Window } from "./WorkingHours.js"
import { formatDate, formatWindow, iso, localDay, MINUTE, parseDate, parseWindow, windowOn } from "./WorkingHours.js"

/** An override as steering shows it: ISO instants and local dates. */
export const overrideView = (o: OverrideState): Override => ({
  id: o.id,
  kind: o.kind,
  from: iso(o.from),
  until: iso(o.until),
  ...(o.date === undefined ? {} : { date: formatDate(o.date) }),
  ...(o.window === undefined ? {} : { window: formatWindow(o.window) }),
  ...(o.minutes === undefined ? {} : { minutes: o.minutes })
})

/** A one-off shift's default window: the span of the first working weekday's windows, else 09:00-17:00. */
export const defaultWindow = (hours: Hours): Window => {
  for (const weekday of ["mon", "tue", "wed", "thu", "fri", "sat", "sun"] as const) {
    const windows = hours[weekday] ?? []
    if (windows.length === 0) continue
    if (windows.some((w) => w.end <= w.start)) return windows[0]!
    return { start: Math.min(...windows.map((w) => w.start)), end: Math.max(...windows.map((w) => w.end)) }
  }
  return { start: 9 * 60, end: 17 * 60 }
}

export const make = (shared: Shared, steer: Steer, status: Effect.Effect<SchedulerStatus>) => {
  const { hours, record, state, zone } = shared

  const addOverride = (o: OverrideState) =>
    Ref.update(state, (s) => ({ ...s, overrides: [...s.overrides, o] })).pipe(
      Effect.zipRight(record(Events.override, { action: o.kind, phase: "start", ...overrideView(o) })),
      Effect.as(overrideView(o))
    )

  const cancelOverrides = (kind: Override["kind"], now: number) =>
    Effect.gen(function*() {
      const s = yield* Ref.get(state)
      const cancelled = s.overrides.filter((o) => o.kind === kind && o.until > now)
      yield* Ref.set(state, { ...s, overrides: s.overrides.filter((o) => !cancelled.includes(o)) })
      for (const o of cancelled) {
        yield* record(Events.override, { action: o.kind, phase: "cancelled", ...overrideView(o) })
      }
    })

  const keepGoing = Effect.fn("Scheduler.keepGoing")(function*(minutes: number) {
    if (!(Number.isInteger(minutes) && minutes > 0 && minutes <= 24 * 60)) {
      return yield* new InvalidSchedule({ field: "minutes", reason: "a whole number of minutes from 1 to 1440" })
    }
    return yield* steer((now) =>
      Effect.gen(function*() {
        yield* cancelOverrides("stop_for_today", now)
        const s = yield* Ref.get(state)
        // Stacks on a keep-going already running: the new one starts where the current stretch ends.
        const until = Calendar.stretchEnd(shared, s, now) + minutes * MINUTE
        yield* cancelOverrides("keep_going", now)
        return yield* addOverride({ id: `override-${hex(4)}`, kind: "keep_going", from: now, until, minutes })
      })
    )
  })

  const workOnDay = (date: string, windowInput: WindowInput | undefined) =>
    Effect.gen(function*() {
      const day = parseDate(date)
      if (day === undefined) {
        return yield* new InvalidSchedule({ field: "date", reason: `"${date}" is not a date (YYYY-MM-DD)` })
      }
      let window = defaultWindow(hours)
      if (windowInput !== undefined) {
        const parsed = parseWindow(windowInput)
        if (typeof parsed === "string") return yield* new InvalidSchedule({ field: "window", reason: parsed })
        window = parsed
      }
      return yield* steer((now) =>
        Effect.gen(function*() {
          const today = localDay(zone, now)
          if (day < today) {
            return yield* new InvalidSchedule({
              field: "date",
              reason: `${date} is in the past (today is ${formatDate(today)})`
            })
          }
          if (day > today + 366) {
            return yield* new InvalidSchedule({ field: "date", reason: `${date} is more than a year ahead` })
          }
          const span = windowOn(zone, day, window)
          if (span.until <= now) {
            const { end, start } = formatWindow(window)
            return yield* new InvalidSchedule({
              field: "window",
              reason: `the ${start}-${end} window on ${date} is already over: keepGoing(minutes) works from now`
            })
          }
          yield* Ref.update(state, (s) => ({ ...s, workDays: new Set([...s.workDays, day]) }))
          return yield* addOverride({
            id: `override-${hex(4)}`,
            kind: "work_on",
            from: span.from,
            until: span.until,
            date: day,
            window
          })
        })
      )
    })

  const workOn = Effect.fn("Scheduler.workOn")(function*(date: string, window?: WindowInput) {
    return yield* workOnDay(date, window)
  })

  const workToday = Effect.fn("Scheduler.workToday")(function*(window?: WindowInput) {
    const now = yield* Clock.currentTimeMillis
    return yield* workOnDay(formatDate(localDay(zone, now)), window)
  })

  const pause = steer(() =>
    Effect.gen(function*() {
      const s = yield* Ref.get(state)
      if (s.mode === "paused") return
      yield* Ref.set(state, { ...s, mode: "paused" as const })
      yield* record(Events.override, { action: "pause", phase: "start" })
    })
  ).pipe(Effect.zipRight(status), Effect.withSpan("Scheduler.pause"))

  const resume = steer((now) =>
    Effect.gen(function*() {
      yield* cancelOverrides("stop_for_today", now)
      const s = yield* Ref.get(state)
      const day = localDay(zone, now)
      const routines = new Map(s.routines)
      const resetRails: Array<string> = []
      for (const [name, r] of s.routines) {
        if (!r.railed) continue
        resetRails.push(name)
        routines.set(name, { ...r, railed: false, spentUsd: 0, spentDay: day })
      }
      yield* Ref.set(state, { ...s, mode: "working" as const, routines })
      // `resetRails` is what a restart reads to know today's spend before it no longer counts.
      yield* record(Events.override, {
        action: "resume",
        phase: "start",
        wasPaused: s.mode === "paused",
        resetRails
      })
      for (const name of resetRails) {
        yield* record(Events.rail, { routine: name, action: "lifted", reason: "resume" })
      }
    })
  ).pipe(Effect.zipRight(status), Effect.withSpan("Scheduler.resume"))

  const stopForToday = steer((now) =>
    Effect.gen(function*() {
      yield* cancelOverrides("keep_going", now)
      const s = yield* Ref.get(state)
      // To midnight, or to the end of a shift that runs past it.
      const until = Math.max(Calendar.nextMidnight(zone, now), Calendar.stretchEnd(shared, s, now))
      return yield* addOverride({ id: `override-${hex(4)}`, kind: "stop_for_today", from: now, until })
    })
  ).pipe(Effect.withSpan("Scheduler.stopForToday"))

  return { keepGoing, workOn, workToday, pause, resume, stopForToday } as const
}
