/**
 * The scheduler's calendar: what the working hours and the overrides in force make of time. Whether an
 * instant is working time and why, today's windows, when a routine fires next, and the next instant anything
 * can change (which is when the heartbeat wakes). Pure functions of the state and an instant; nothing here
 * reads a clock.
 */
import type { RoutineState, State } from "./internal/state.js"
import * as S from "./Schedule.js"
import type { WindowView } from "./Steering.js"

/** What the calendar reads from the settings: the time zone and the weekly hours. */
export interface Settings {
  readonly zone: S.TimeZone
  readonly hours: S.Hours
}

/** The working hours with the state's overrides: keep going and one-off shifts add time, stop for today cuts it. */
export const calendarOf = (settings: Settings, s: State): S.Calendar => ({
  zone: settings.zone,
  hours: settings.hours,
  added: s.overrides.filter((o) => o.kind !== "stop_for_today"),
  removed: s.overrides.filter((o) => o.kind === "stop_for_today")
})

export const workingNow = (settings: Settings, s: State, now: number) =>
  s.mode === "working" && S.isWorkingAt(calendarOf(settings, s), now)

/** A day with hours of its own, or made a working day by `workOn` (`dailyAt` routines fire only on these). */
export const isWorkDay = (hours: S.Hours, s: State, day: number) =>
  (hours[S.weekdayOf(day)]?.length ?? 0) > 0 || s.workDays.has(day)

/** Whether a stop-for-today covers the instant. */
export const inStop = (s: State, instant: number) =>
  s.overrides.some((o) => o.kind === "stop_for_today" && o.from <= instant && instant < o.until)

export const nextMidnight = (zone: S.TimeZone, now: number) => S.dayStart(zone, S.localDay(zone, now) + 1)

/** The instant a `dailyAt` time falls on a local date (DST rules as in `fromLocal`). */
export const dailyInstant = (zone: S.TimeZone, at: string, day: number) =>
  S.fromLocal(zone, day * S.DAY + S.parseClock(at)! * S.MINUTE)

/** The newest `dailyAt` crossing in `(from, to]`, if any. */
export const dailyCrossing = (zone: S.TimeZone, at: string, from: number, to: number) => {
  let found: { day: number; instant: number } | undefined
  for (let day = S.localDay(zone, from) - 1; day <= S.localDay(zone, to) + 1; day++) {
    const instant = dailyInstant(zone, at, day)
    if (instant > from && instant <= to) found = { day, instant }
  }
  return found
}

/** Why `now` is or is not working time, in words: `hours 08:47-17:00`, `paused`, `stopped for today`, ... */
export const reasonAt = (settings: Settings, s: State, now: number): string => {
  const { hours, zone } = settings
  if (s.mode === "paused") return "paused"
  if (inStop(s, now)) return "stopped for today"
  for (let day = S.localDay(zone, now) - 1; day <= S.localDay(zone, now); day++) {
    for (const w of S.windowsOn(zone, hours, day)) {
      if (w.from <= now && now < w.until) {
        return `hours ${S.formatClock(w.window.start)}-${S.formatClock(w.window.end)}`
      }
    }
  }
  for (const o of s.overrides) {
    if (o.from <= now && now < o.until) {
      if (o.kind === "keep_going") return `keep going until ${S.formatLocal(zone, o.until)}`
      if (o.kind === "work_on") return `one-off shift ${S.formatDate(o.date!)}`
    }
  }
  return "outside working hours"
}

/** A local date's windows: the hours', and the overrides' that add time on it (with their own edges). */
export const windowsOn = (settings: Settings, s: State, day: number): Array<WindowView> => {
  const { hours, zone } = settings
  const windows: Array<WindowView> = S.windowsOn(zone, hours, day).map((w) => ({
    ...S.formatWindow(w.window),
    from: S.iso(w.from),
    until: S.iso(w.until),
    source: "hours" as const
  }))
  for (const o of s.overrides) {
    if (
      o.kind === "stop_for_today" || S.localDay(zone, o.from) > day || S.localDay(zone, o.until - 1) < day
    ) continue
    windows.push({
      start: S.formatClock(Math.round((S.toLocal(zone, o.from) - day * S.DAY) / S.MINUTE)),
      end: S.formatClock(Math.min(24 * 60, Math.round((S.toLocal(zone, o.until) - day * S.DAY) / S.MINUTE))),
      from: S.iso(o.from),
      until: S.iso(o.until),
      source: o.kind === "keep_going" ? "keep_going" : "work_on"
    })
  }
  return windows
}

/** The end of the working stretch `now` is in, or `now` when it is not working time. */
export const stretchEnd = (settings: Settings, s: State, now: number) => {
  const first = S.working(calendarOf(settings, s), now, now + 8 * S.DAY)[0]
  return first !== undefined && first.from <= now ? first.until : now
}

/** When a routine fires next if nothing changes. */
export const nextFire = (
  settings: Settings,
  s: State,
  r: RoutineState,
  now: number
): number | undefined => {
  const { zone } = settings
  if (s.mode === "paused") return undefined
  const railedUntil = r.railed ? nextMidnight(zone, now) : now
  const every = r.routine.every
  if ("dailyAt" in every) {
    for (let day = S.localDay(zone, now); day <= S.localDay(zone, now) + 14; day++) {
      const instant = dailyInstant(zone, every.dailyAt, day)
      if (instant > now && instant >= railedUntil && isWorkDay(settings.hours, s, day) && !inStop(s, instant)) {
        return instant
      }
    }
    return undefined
  }
  const calendar = calendarOf(settings, s)
  let due = S.afterWorking(calendar, now, every.intervalMs - r.workedMs)
  // Fires that fall due while the rail holds are skipped; the cadence starts again from each.
  for (let i = 0; due !== undefined && due < railedUntil && i < 1000; i++) {
    due = S.afterWorking(calendar, due, every.intervalMs)
  }
  return due
}

/**
 * The next instant anything can change: a window opens or closes, an override expires, local midnight (rails
 * lift), a `dailyAt` time, an interval falls due while working; and at most `tickMs` away.
 */
export const nextWake = (settings: Settings & { readonly tickMs: number }, s: State, now: number): number => {
  const { tickMs, zone } = settings
  const candidates = [now + tickMs, nextMidnight(zone, now)]
  const edge = S.nextEdge(calendarOf(settings, s), now)
  if (edge !== undefined) candidates.push(edge)
  for (const o of s.overrides) if (o.until > now) candidates.push(o.until)
  const working = workingNow(settings, s, now)
  for (const r of s.routines.values()) {
    const every = r.routine.every
    if ("dailyAt" in every) {
      const today = S.localDay(zone, now)
      const first = [0, 1, 2].map((d) => dailyInstant(zone, every.dailyAt, today + d)).find((t) => t > now)
      if (first !== undefined) candidates.push(first)
    } else if (working) candidates.push(now + Math.max(1, every.intervalMs - r.workedMs))
  }
  return Math.min(...candidates)
}
