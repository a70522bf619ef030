/**
 * The scheduler's config: a `schedule` section (time zone, working hours, heartbeat, start mode) and a
 * `routines` array, as they appear in `flotta.config.json`:
 *
 * ```json
 * "schedule": { "timezone": "America/Los_Angeles", "hours": { "mon": [["08:47", "17:00"]] }, "tickMs": 60000 },
 * "routines": [{ "name": "morning-scan", "action": "scan", "every": { "dailyAt": "09:00" } }]
 * ```
 *
 * Without a `schedule` section there is no scheduler (`Scheduler.layer(undefined)` is `Layer.empty` and no
 * timer runs). A bad `schedule` section is `InvalidSpec` (its path and every problem); a bad routine is
 * skipped, reported with the path of its bad field. A window is `["HH:MM", "HH:MM"]` or `"HH:MM-HH:MM"`.
 */
import { InvalidSpec } from "@flotta/core/Errors"
import type { Rejected } from "@flotta/core/Spec"
import { Effect, Either, Option, Schema } from "effect"
import type { Routine } from "./Routine.js"
import { isRecord, readRoutines } from "./Routine.js"
import type { Mode, Weekday } from "./Steering.js"
import type { Hours, TimeZone, Window } from "./WorkingHours.js"
import { parseWindow, resolveZone } from "./WorkingHours.js"

export const DEFAULT_TICK_MS = 60_000

/** The decoded `schedule` section. */
export interface ScheduleSettings {
  readonly zone: TimeZone
  readonly hours: Hours
  /** The heartbeat's longest sleep. */
  readonly tickMs: number
  readonly start: Mode
}

export interface SchedulerConfig {
  readonly schedule: ScheduleSettings
  readonly routines: ReadonlyArray<Routine>
  readonly rejected: ReadonlyArray<Rejected>
}

type Issue = { readonly path: string; readonly message: string }

const DAYS: ReadonlyArray<Weekday> = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
const ZONE_HINT = "\"utc\", { \"offsetSeconds\": -25200 }, or an IANA name such as \"America/Los_Angeles\""

const Clock = Schema.String.pipe(Schema.pattern(/^\d{2}:\d{2}$/))
/** `["HH:MM", "HH:MM"]` or `"HH:MM-HH:MM"`; an end of `24:00` is midnight. */
const WindowSchema = Schema.Union(
  Schema.Tuple(Clock, Clock),
  Schema.String.pipe(Schema.pattern(/^\d{2}:\d{2}-\d{2}:\d{2}$/))
)
const Windows = Schema.Array(WindowSchema)

/**
 * The `schedule` section as written: what `readSchedule` accepts (it checks each field with messages of its own,
 * and takes its field names from here). The descriptions are the config reference's prose.
 */
export const ScheduleSection = Schema.Struct({
  timezone: Schema.propertySignature(Schema.Union(
    Schema.Literal("utc"),
    Schema.Struct({ offsetSeconds: Schema.Number.pipe(Schema.int(), Schema.between(-50400, 50400)) }),
    Schema.String
  )).annotations({
    description: "`\"utc\"`, a fixed offset in seconds east of UTC, or an IANA name such as " +
      "`\"America/Los_Angeles\"` (on the days the clocks change, a window is neither lost nor doubled)."
  }),
  hours: Schema.propertySignature(Schema.partial(Schema.Struct({
    mon: Windows,
    tue: Windows,
    wed: Windows,
    thu: Windows,
    fri: Windows,
    sat: Windows,
    sun: Windows
  }))).annotations({
    description: "Working windows per weekday (`mon` to `sun`) in local wall-clock time: " +
      "`{ \"mon\": [[\"08:47\", \"17:00\"]] }`, or `\"08:47-17:00\"`. A day not named has no working time."
  }),
  tickMs: Schema.optionalWith(Schema.Number.pipe(Schema.int(), Schema.greaterThanOrEqualTo(1000)), {
    default: () => DEFAULT_TICK_MS
  }).annotations({
    description: "The heartbeat's longest sleep, in milliseconds; it also wakes at every change of the schedule."
  }),
  start: Schema.optionalWith(Schema.Literal("working", "paused"), { default: () => "working" as const }).annotations({
    description: "`working` follows the schedule from the start; `paused` fires nothing until resumed."
  })
})

const SCHEDULE_FIELDS: ReadonlyArray<string> = Object.keys(ScheduleSection.fields)

const readZone = (input: unknown, at: string): TimeZone | Issue => {
  if (typeof input === "string") {
    if (input.toLowerCase() === "utc") return { _tag: "Utc" }
    const name = resolveZone(input)
    return name === undefined
      ? { path: at, message: `unknown time zone "${input}": use ${ZONE_HINT}` }
      : name === "UTC"
      ? { _tag: "Utc" }
      : { _tag: "Zone", name }
  }
  if (isRecord(input) && Object.keys(input).length === 1 && "offsetSeconds" in input) {
    const seconds = input["offsetSeconds"]
    return typeof seconds === "number" && Number.isInteger(seconds) && Math.abs(seconds) <= 14 * 3600
      ? { _tag: "Offset", seconds }
      : { path: `${at}.offsetSeconds`, message: "whole seconds east of UTC, from -50400 to 50400" }
  }
  return { path: at, message: `expected ${ZONE_HINT}` }
}

const readHours = (input: unknown, at: string): Hours | ReadonlyArray<Issue> => {
  if (!isRecord(input)) {
    return [{ path: at, message: "expected an object of weekdays: { \"mon\": [[\"09:00\", \"17:00\"]] }" }]
  }
  const issues: Array<Issue> = []
  const hours: Partial<Record<Weekday, ReadonlyArray<Window>>> = {}
  for (const [key, value] of Object.entries(input)) {
    if (!DAYS.includes(key as Weekday)) {
      issues.push({ path: `${at}.${key}`, message: `unknown day: use ${DAYS.join(", ")}` })
      continue
    }
    if (!Array.isArray(value)) {
      issues.push({ path: `${at}.${key}`, message: "expected a list of windows: [[\"09:00\", \"17:00\"]]" })
      continue
    }
    const windows: Array<Window> = []
    value.forEach((item, i) => {
      const window = parseWindow(item)
      if (typeof window === "string") issues.push({ path: `${at}.${key}[${i}]`, message: window })
      else windows.push(window)
    })
    hours[key as Weekday] = windows
  }
  return issues.length > 0 ? issues : hours
}

/** Validates the `schedule` section, reporting every bad field. */
export const readSchedule = (
  input: unknown,
  at = "schedule"
): Either.Either<ScheduleSettings, ReadonlyArray<Issue>> => {
  if (!isRecord(input)) return Either.left([{ path: at, message: "expected an object with timezone and hours" }])
  const issues: Array<Issue> = []
  for (const key of Object.keys(input)) {
    if (!SCHEDULE_FIELDS.includes(key)) {
      issues.push({
        path: `${at}.${key}`,
        message: "unknown field: the schedule has timezone, hours, tickMs and start"
      })
    }
  }
  let zone: TimeZone | undefined
  if (input["timezone"] === undefined) issues.push({ path: `${at}.timezone`, message: `required: ${ZONE_HINT}` })
  else {
    const read = readZone(input["timezone"], `${at}.timezone`)
    if ("path" in read) issues.push(read)
    else zone = read
  }
  let hours: Hours | undefined
  if (input["hours"] === undefined) {
    issues.push({
      path: `${at}.hours`,
      message: "required: working windows per weekday, e.g. { \"mon\": [[\"09:00\", \"17:00\"]] }"
    })
  } else {
    const read = readHours(input["hours"], `${at}.hours`)
    if (Array.isArray(read)) issues.push(...read)
    else hours = read as Hours
  }
  const tickMs = input["tickMs"] ?? DEFAULT_TICK_MS
  if (typeof tickMs !== "number" || !Number.isInteger(tickMs) || tickMs < 1000) {
    issues.push({ path: `${at}.tickMs`, message: "a whole number of milliseconds, at least 1000" })
  }
  const start = input["start"] ?? "working"
  if (start !== "working" && start !== "paused") {
    issues.push({ path: `${at}.start`, message: "expected \"working\" (follow the schedule) or \"paused\"" })
  }
  if (issues.length > 0 || zone === undefined || hours === undefined) return Either.left(issues)
  return Either.right({ zone, hours, tickMs: tickMs as number, start: start as Mode })
}

/**
 * Reads `{ schedule, routines }` from a config object: `None` without a `schedule` section, `InvalidSpec`
 * when the section is bad; bad routines are in `rejected`.
 */
export const read = (config: unknown): Either.Either<Option.Option<SchedulerConfig>, InvalidSpec> => {
  if (!isRecord(config) || config["schedule"] === undefined || config["schedule"] === null) {
    return Either.right(Option.none())
  }
  const schedule = readSchedule(config["schedule"])
  if (Either.isLeft(schedule)) {
    return Either.left(
      new InvalidSpec({
        path: schedule.left[0]!.path,
        reason: schedule.left.map((i) => `${i.path}: ${i.message}`).join("; ")
      })
    )
  }
  const { rejected, routines } = readRoutines(config["routines"])
  return Either.right(Option.some({ schedule: schedule.right, routines, rejected }))
}

/** `read` for a config that must have a `schedule` section: its absence is `InvalidSpec` too. */
export const required = (config: unknown): Effect.Effect<SchedulerConfig, InvalidSpec> =>
  Effect.suspend(() =>
    Either.match(read(config), {
      onLeft: Effect.fail,
      onRight: Option.match({
        onNone: () => new InvalidSpec({ path: "schedule", reason: "required: the time zone and working hours" }),
        onSome: Effect.succeed
      })
    })
  )
