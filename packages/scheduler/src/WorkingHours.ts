/**
 * Working hours as written and as instants: times of day, windows and dates as config and steering write
 * them, time zones, local wall-clock time ↔ instants, and the instants a window covers on a local date.
 * Nothing here reads a clock. (What the hours and the overrides together make of time is in `Calendar`.)
 *
 * Local wall-clock time is handled as "local milliseconds": the wall-clock reading written as if it were UTC
 * (`Date.UTC(y, m, d, h, mi)`), and a local date as its epoch day. A named zone's offsets come from Effect's
 * `DateTime`; converting local time to an instant uses its (and `Temporal`'s) "compatible" disambiguation,
 * so a daylight-saving change neither loses nor doubles anything:
 * - a wall-clock time the clocks skip (02:30 on a spring-forward night) is moved forward by the gap (03:30);
 * - a wall-clock time that happens twice (01:30 on a fall-back night) means its first occurrence.
 * A window is the interval between its two instants, so on a fall-back night the repeated hour is not worked
 * twice, and a window inside a spring-forward gap is shifted rather than dropped.
 */
import { DateTime, Option } from "effect"
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

/** The canonical IANA name, or undefined when the runtime does not know the zone. */
export const resolveZone = (name: string): string | undefined =>
  Option.getOrUndefined(Option.map(DateTime.zoneMakeNamed(name), (zone) => zone.id))

const namedZone = (name: string): DateTime.TimeZone =>
  // `resolveZone` checked the name when the config was read.
  Option.getOrThrowWith(DateTime.zoneMakeNamed(name), () => new Error(`unknown time zone "${name}"`))

/** Local time minus UTC, in milliseconds, at an instant. */
export const offsetAt = (zone: TimeZone, instant: number): number => {
  switch (zone._tag) {
    case "Utc":
      return 0
    // A fixed offset has no daylight saving, so this stays plain arithmetic: through DateTime each conversion
    // allocates a Zoned (~0.8 µs against ~0.04 µs, measured), which doubled workingMs for a UTC schedule.
    case "Offset":
      return zone.seconds * 1000
    case "Zone":
      return DateTime.zonedOffset(DateTime.unsafeMakeZoned(instant, { timeZone: namedZone(zone.name) }))
  }
}

export const toLocal = (zone: TimeZone, instant: number): number => instant + offsetAt(zone, instant)

/**
 * The instant a local wall-clock time means (see the module comment: a skipped time moves forward by the
 * gap, a repeated time is its first occurrence). That is DateTime's "compatible" disambiguation.
 */
export const fromLocal = (zone: TimeZone, local: number): number =>
  zone._tag === "Zone"
    ? DateTime.toEpochMillis(
      DateTime.unsafeMakeZoned(local, {
        timeZone: namedZone(zone.name),
        adjustForTimeZone: true,
        disambiguation: "compatible"
      })
    )
    : local - offsetAt(zone, local)

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

export const iso = (instant: number): string => DateTime.formatIso(DateTime.unsafeMake(instant))

// ------------------------------------------------------------------------------------------ windows

/** The instants one window covers on a local date (a window past midnight ends on the next date). */
export const windowOn = (zone: TimeZone, day: number, window: Window): Interval => ({
  from: fromLocal(zone, day * DAY + window.start * MINUTE),
  until: fromLocal(zone, (window.end > window.start ? day : day + 1) * DAY + window.end * MINUTE)
})

/** The schedule's own windows that start on a local date, as instants. */
export const windowsOn = (zone: TimeZone, hours: Hours, day: number): Array<Interval & { readonly window: Window }> =>
  (hours[weekdayOf(day)] ?? []).map((window) => ({ ...windowOn(zone, day, window), window }))
