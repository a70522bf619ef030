/**
 * Pure time math for working hours: time zones, local wall-clock time ↔ instants, the working intervals a
 * week of windows and a set of overrides give, and the boundaries between them. Nothing here reads a clock.
 *
 * Local wall-clock time is handled as "local milliseconds": the wall-clock reading written as if it were UTC
 * (`Date.UTC(y, m, d, h, mi)`), and a local date as its epoch day. Converting local time to an instant follows
 * the rule of `Temporal`'s "compatible" disambiguation, so a daylight-saving change neither loses nor doubles
 * anything:
 * - a wall-clock time the clocks skip (02:30 on a spring-forward night) is moved forward by the gap (03:30);
 * - a wall-clock time that happens twice (01:30 on a fall-back night) means its first occurrence.
 * A window is the interval between its two instants, so on a fall-back night the repeated hour is not worked
 * twice, and a window inside a spring-forward gap is shifted rather than dropped.
 */
import type { Weekday } from "./Steering.js"

export const MINUTE = 60_000
export const HOUR = 60 * MINUTE
export const DAY = 24 * HOUR

export type TimeZone =
  | { readonly _tag: "Utc" }
  | { readonly _tag: "Offset"; readonly seconds: number }
  | { readonly _tag: "Zone"; readonly name: string }

/** Indexed like `Date.getUTCDay()`: 0 is Sunday. */
export const WEEKDAYS: ReadonlyArray<Weekday> = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]

/** Minutes since local midnight; `end <= start` means the window runs past midnight into the next day. */
export interface Window {
  readonly start: number
  readonly end: number
}

export type Hours = Readonly<Partial<Record<Weekday, ReadonlyArray<Window>>>>

/** A half-open interval of instants, `[from, until)`. */
export interface Interval {
  readonly from: number
  readonly until: number
}

// ------------------------------------------------------------------------------------------ clock texts

/** `"HH:MM"` → minutes; `"24:00"` only when `allowEndOfDay`. */
export const parseClock = (text: string, allowEndOfDay = false): number | undefined => {
  const match = /^(\d{2}):(\d{2})$/.exec(text)
  if (match === null) return undefined
  const hours = Number(match[1])
  const minutes = Number(match[2])
  if (minutes > 59) return undefined
  if (hours === 24 && minutes === 0 && allowEndOfDay) return 24 * 60
  return hours > 23 ? undefined : hours * 60 + minutes
}

export const formatClock = (minutes: number): string =>
  `${String(Math.floor(minutes / 60)).padStart(2, "0")}:${String(minutes % 60).padStart(2, "0")}`

/**
 * `["09:00", "17:00"]` or `"09:00-17:00"` → a window, or the reason it is not one. `24:00` may end a window;
 * an end before the start runs past midnight.
 */
export const parseWindow = (input: unknown): Window | string => {
  let pair: ReadonlyArray<unknown>
  if (typeof input === "string") pair = input.split("-").map((s) => s.trim())
  else if (Array.isArray(input)) pair = input
  else return "expected [\"HH:MM\", \"HH:MM\"] or \"HH:MM-HH:MM\""
  if (pair.length !== 2 || typeof pair[0] !== "string" || typeof pair[1] !== "string") {
    return "expected [\"HH:MM\", \"HH:MM\"] or \"HH:MM-HH:MM\""
  }
  const start = parseClock(pair[0])
  if (start === undefined) return `start "${pair[0]}" is not a time of day (HH:MM, 00:00 to 23:59)`
  const end = parseClock(pair[1], true)
  if (end === undefined) return `end "${pair[1]}" is not a time of day (HH:MM, 00:00 to 24:00)`
  if (end === start) return "start and end are the same time: the window would be empty"
  return { start, end }
}

export const formatWindow = (window: Window) => ({ start: formatClock(window.start), end: formatClock(window.end) })

// ------------------------------------------------------------------------------------------ dates

/** `"YYYY-MM-DD"` → epoch day, if it is a real date. */
export const parseDate = (text: string): number | undefined => {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text)
  if (match === null) return undefined
  const ms = Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]))
  const day = Math.floor(ms / DAY)
  return formatDate(day) === text ? day : undefined
}

export const formatDate = (day: number): string => new Date(day * DAY).toISOString().slice(0, 10)

export const weekdayOf = (day: number): Weekday => WEEKDAYS[new Date(day * DAY).getUTCDay()]!

// ------------------------------------------------------------------------------------------ time zones

const formatters = new Map<string, Intl.DateTimeFormat>()

const formatterFor = (name: string): Intl.DateTimeFormat => {
  let formatter = formatters.get(name)
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat("en-US", {
      timeZone: name,
      hourCycle: "h23",
      era: "short",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric"
    })
    formatters.set(name, formatter)
  }
  return formatter
}

/** The canonical IANA name, or undefined when the runtime does not know the zone. */
export const resolveZone = (name: string): string | undefined => {
  try {
    return new Intl.DateTimeFormat("en-US", { timeZone: name }).resolvedOptions().timeZone
  } catch {
    return undefined
  }
}

/** Local time minus UTC, in milliseconds, at an instant. */
export const offsetAt = (zone: TimeZone, instant: number): number => {
  switch (zone._tag) {
    case "Utc":
      return 0
    case "Offset":
      return zone.seconds * 1000
    case "Zone": {
      const parts: Record<string, string> = {}
      for (const part of formatterFor(zone.name).formatToParts(new Date(instant))) parts[part.type] = part.value
      const year = parts["era"] === "BC" || parts["era"] === "B" ? 1 - Number(parts["year"]) : Number(parts["year"])
      const local = Date.UTC(
        year,
        Number(parts["month"]) - 1,
        Number(parts["day"]),
        Number(parts["hour"]),
        Number(parts["minute"]),
        Number(parts["second"])
      )
      const second = Math.floor(instant / 1000) * 1000
      return local - second
    }
  }
}

export const toLocal = (zone: TimeZone, instant: number): number => instant + offsetAt(zone, instant)

/**
 * The instant a local wall-clock time means (see the module comment: a skipped time moves forward by the
 * gap, a repeated time is its first occurrence).
 */
export const fromLocal = (zone: TimeZone, local: number): number => {
  if (zone._tag !== "Zone") return local - offsetAt(zone, local)
  // The true instant is within 14 hours of `local`; a day either side sees the offsets before and after.
  const before = offsetAt(zone, local - DAY)
  const after = offsetAt(zone, local + DAY)
  const candidates = [...new Set([before, after, offsetAt(zone, local)])]
    .map((offset) => local - offset)
    .filter((instant) => toLocal(zone, instant) === local)
  if (candidates.length > 0) return Math.min(...candidates)
  // In a gap: read with the offset in force before it, which lands the same distance past the jump.
  return local - before
}

export const localDay = (zone: TimeZone, instant: number): number => Math.floor(toLocal(zone, instant) / DAY)

/** The instant a local date starts. */
export const dayStart = (zone: TimeZone, day: number): number => fromLocal(zone, day * DAY)

/** `utc`, `+05:30`, or the IANA name. */
export const describeZone = (zone: TimeZone): string => {
  switch (zone._tag) {
    case "Utc":
      return "utc"
    case "Offset":
      return formatOffset(zone.seconds * 1000)
    case "Zone":
      return zone.name
  }
}

const formatOffset = (offsetMs: number): string => {
  const sign = offsetMs < 0 ? "-" : "+"
  const total = Math.round(Math.abs(offsetMs) / MINUTE)
  return `${sign}${String(Math.floor(total / 60)).padStart(2, "0")}:${String(total % 60).padStart(2, "0")}`
}

/** The local time with its offset: `2025-03-10T09:15:00-07:00`. */
export const formatLocal = (zone: TimeZone, instant: number): string => {
  const offset = offsetAt(zone, instant)
  const local = new Date(instant + offset).toISOString().slice(0, 19)
  return `${local}${formatOffset(offset)}`
}

export const iso = (instant: number): string => new Date(instant).toISOString()

// ------------------------------------------------------------------------------------------ windows

/** The instants one window covers on a local date (a window past midnight ends on the next date). */
export const windowOn = (zone: TimeZone, day: number, window: Window): Interval => ({
  from: fromLocal(zone, day * DAY + window.start * MINUTE),
  until: fromLocal(zone, (window.end > window.start ? day : day + 1) * DAY + window.end * MINUTE)
})

/** The schedule's own windows that start on a local date, as instants. */
export const windowsOn = (zone: TimeZone, hours: Hours, day: number): Array<Interval & { readonly window: Window }> =>
  (hours[weekdayOf(day)] ?? []).map((window) => ({ ...windowOn(zone, day, window), window }))

/** Sorted, with overlapping and touching intervals joined. */
export const merge = (intervals: ReadonlyArray<Interval>): Array<Interval> => {
  const sorted = intervals.filter((i) => i.until > i.from).sort((a, b) => a.from - b.from)
  const out: Array<Interval> = []
  for (const interval of sorted) {
    const last = out[out.length - 1]
    if (last !== undefined && interval.from <= last.until) {
      out[out.length - 1] = { from: last.from, until: Math.max(last.until, interval.until) }
    } else out.push(interval)
  }
  return out
}

/** `intervals` minus `removed` (both merged). */
export const subtract = (intervals: ReadonlyArray<Interval>, removed: ReadonlyArray<Interval>): Array<Interval> => {
  let out = merge(intervals)
  for (const cut of merge(removed)) {
    out = out.flatMap((i) => {
      if (cut.until <= i.from || cut.from >= i.until) return [i]
      const parts: Array<Interval> = []
      if (cut.from > i.from) parts.push({ from: i.from, until: cut.from })
      if (cut.until < i.until) parts.push({ from: cut.until, until: i.until })
      return parts
    })
  }
  return out
}

export const clip = (intervals: ReadonlyArray<Interval>, from: number, until: number): Array<Interval> =>
  intervals.flatMap((i) => {
    const a = Math.max(i.from, from)
    const b = Math.min(i.until, until)
    return b > a ? [{ from: a, until: b }] : []
  })

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
