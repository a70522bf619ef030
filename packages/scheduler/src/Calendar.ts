/**
 * The scheduler's calendar: what the working hours and the overrides in force make of time. Working time
 * (the hours' windows, plus keep-going and one-off shifts, minus stop-for-today), whether an instant is
 * working time and why, a day's windows, when a routine fires next, and the next instant anything can change
 * (which is when the heartbeat wakes). Pure functions of the state and an instant; nothing here reads a clock.
 */
import { clip, subtract } from "./internal/intervals.js"
import type { RoutineState, State } from "./internal/state.js"
import type { WindowView } from "./Steering.js"
import type { Hours, Interval, TimeZone } from "./WorkingHours.js"
import {
  DAY,
  dayStart,
  formatClock,
  formatDate,
  formatLocal,
  formatWindow,
  fromLocal,
  iso,
  localDay,
  MINUTE,
  parseClock,
  toLocal,
  weekdayOf,
  windowsOn
} from "./WorkingHours.js"

// ---------------------------------------------------------------------------------------------- working time

/** Working hours plus runtime changes: what decides whether an instant is working time. */
export interface Calendar {
  readonly zone: TimeZone
  readonly hours: Hours
  /** Extra working time (keep going, a one-off shift). */
  readonly added: ReadonlyArray<Interval>
  /** Time taken out (stop for today). */
  readonly removed: ReadonlyArray<Interval>
}

/** Working intervals within `[from, until)`, merged and clipped. */
export const working = (calendar: Calendar, from: number, until: number): Array<Interval> => {
  if (until <= from) return []
  const base: Array<Interval> = []
  // A window of the day before may run past midnight into the range.
  for (let day = localDay(calendar.zone, from) - 1; day <= localDay(calendar.zone, until); day++) {
    base.push(...windowsOn(calendar.zone, calendar.hours, day))
  }
  return clip(subtract([...base, ...calendar.added], calendar.removed), from, until)
}

export const isWorkingAt = (calendar: Calendar, instant: number): boolean =>
  working(calendar, instant, instant + 1).length > 0

/** Working time within `[from, until)`, in milliseconds. */
export const workingMs = (calendar: Calendar, from: number, until: number): number =>
  working(calendar, from, until).reduce((sum, i) => sum + (i.until - i.from), 0)

/** The first instant after `instant` where working time starts or stops, within `horizon`. */
export const nextEdge = (calendar: Calendar, instant: number, horizon = 8 * DAY): number | undefined => {
  for (const interval of working(calendar, instant, instant + horizon)) {
    if (interval.from > instant) return interval.from
    if (interval.until < instant + horizon) return interval.until
  }
  return undefined
}

/** The instant by which `ms` more of working time has passed after `from` (searching up to `horizon`). */
export const afterWorking = (
  calendar: Calendar,
  from: number,
  ms: number,
  horizon = 400 * DAY
): number | undefined => {
  let remaining = ms
  if (remaining <= 0) return from
  const chunk = 14 * DAY
  for (let start = from; start < from + horizon; start += chunk) {
    for (const interval of working(calendar, start, start + chunk)) {
      const length = interval.until - interval.from
      if (length >= remaining) return interval.from + remaining
      remaining -= length
    }
  }
  return undefined
}

// ---------------------------------------------------------------------------------------------- the scheduler's views

/** What the calendar reads from the settings: the time zone and the weekly hours. */
export interface Settings {
  readonly zone: TimeZone
  readonly hours: Hours
}

/** The working hours with the state's overrides: keep going and one-off shifts add time, stop for today cuts it. */
export const calendarOf = (settings: Settings, s: State): Calendar => ({
  zone: settings.zone,
  hours: settings.hours,
  added: s.overrides.filter((o) => o.kind !== "stop_for_today"),
  removed: s.overrides.filter((o) => o.kind === "stop_for_today")
})

export const workingNow = (settings: Settings, s: State, now: number) =>
  s.mode === "working" && isWorkingAt(calendarOf(settings, s), now)

/** A day with hours of its own, or made a working day by `workOn` (`dailyAt` routines fire only on these). */
export const isWorkDay = (hours: Hours, s: Pick<State, "workDays">, day: number) =>
  (hours[weekdayOf(day)]?.length ?? 0) > 0 || s.workDays.has(day)

/** Whether a stop-for-today covers the instant. */
export const inStop = (s: State, instant: number) =>
  s.overrides.some((o) => o.kind === "stop_for_today" && o.from <= instant && instant < o.until)

export const nextMidnight = (zone: TimeZone, now: number) => dayStart(zone, localDay(zone, now) + 1)

/**
 * The instant a `dailyAt` time falls on a local date (DST rules as in `fromLocal`). Not `Cron.next`: in
 * effect 3.22 it can answer an instant before its start inside a fall-back night's repeated hour (01:30 asked
 * from 01:15 PST gives 01:30 PDT, an hour earlier), which would spin the heartbeat; and it costs ~3x as much.
 */
export const dailyInstant = (zone: TimeZone, at: string, day: number) =>
  fromLocal(zone, day * DAY + parseClock(at)! * MINUTE)

/** The newest `dailyAt` crossing in `(from, to]`, if any. */
export const dailyCrossing = (zone: TimeZone, at: string, from: number, to: number) => {
  let found: { day: number; instant: number } | undefined
  for (let day = localDay(zone, from) - 1; day <= localDay(zone, to) + 1; day++) {
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
  for (let day = localDay(zone, now) - 1; day <= localDay(zone, now); day++) {
    for (const w of windowsOn(zone, hours, day)) {
      if (w.from <= now && now < w.until) {
        return `hours ${formatClock(w.window.start)}-${formatClock(w.window.end)}`
      }
    }
  }
  for (const o of s.overrides) {
    if (o.from <= now && now < o.until) {
      if (o.kind === "keep_going") return `keep going until ${formatLocal(zone, o.until)}`
      if (o.kind === "work_on") return `one-off shift ${formatDate(o.date!)}`
    }
  }
  return "outside working hours"
}

/** A local date's windows: the hours', and the overrides' that add time on it (with their own edges). */
export const windowViews = (settings: Settings, s: State, day: number): Array<WindowView> => {
  const { hours, zone } = settings
  const windows: Array<WindowView> = windowsOn(zone, hours, day).map((w) => ({
    ...formatWindow(w.window),
    from: iso(w.from),
    until: iso(w.until),
    source: "hours" as const
  }))
  for (const o of s.overrides) {
    if (
      o.kind === "stop_for_today" || localDay(zone, o.from) > day || localDay(zone, o.until - 1) < day
    ) continue
    windows.push({
      start: formatClock(Math.round((toLocal(zone, o.from) - day * DAY) / MINUTE)),
      end: formatClock(Math.min(24 * 60, Math.round((toLocal(zone, o.until) - day * DAY) / MINUTE))),
      from: iso(o.from),
      until: iso(o.until),
      source: o.kind === "keep_going" ? "keep_going" : "work_on"
    })
  }
  return windows
}

/** The end of the working stretch `now` is in, or `now` when it is not working time. */
export const stretchEnd = (settings: Settings, s: State, now: number) => {
  const first = working(calendarOf(settings, s), now, now + 8 * DAY)[0]
  return first !== undefined && first.from <= now ? first.until : now
}

/** When a routine fires next if nothing changes (never, for one fired only on trigger). */
export const nextFire = (
  settings: Settings,
  s: State,
  r: RoutineState,
  now: number
): number | undefined => {
  const { zone } = settings
  const every = r.routine.every
  if (s.mode === "paused" || "triggered" in every) return undefined
  const railedUntil = r.railed ? nextMidnight(zone, now) : now
  if ("dailyAt" in every) {
    for (let day = localDay(zone, now); day <= localDay(zone, now) + 14; day++) {
      const instant = dailyInstant(zone, every.dailyAt, day)
      if (
        instant > now && instant >= railedUntil && (r.lastSlot === null || instant > r.lastSlot) &&
        isWorkDay(settings.hours, s, day) && !inStop(s, instant)
      ) {
        return instant
      }
    }
    return undefined
  }
  const calendar = calendarOf(settings, s)
  let due = afterWorking(calendar, now, every.intervalMs - r.workedMs)
  // Fires that fall due while the rail holds are skipped; the cadence starts again from each.
  for (let i = 0; due !== undefined && due < railedUntil && i < 1000; i++) {
    due = afterWorking(calendar, due, every.intervalMs)
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
  const edge = nextEdge(calendarOf(settings, s), now)
  if (edge !== undefined) candidates.push(edge)
  for (const o of s.overrides) if (o.until > now) candidates.push(o.until)
  const isWorking = workingNow(settings, s, now)
  for (const r of s.routines.values()) {
    const every = r.routine.every
    // A routine fired only on trigger never falls due: nothing to wake for.
    if ("triggered" in every) continue
    if ("dailyAt" in every) {
      const today = localDay(zone, now)
      const first = [0, 1, 2].map((d) => dailyInstant(zone, every.dailyAt, today + d)).find((t) => t > now)
      if (first !== undefined) candidates.push(first)
    } else if (isWorking) candidates.push(now + Math.max(1, every.intervalMs - r.workedMs))
  }
  return Math.min(...candidates)
}
