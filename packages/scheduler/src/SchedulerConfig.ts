/**
 * The scheduler's config: a `schedule` section (time zone, working hours, heartbeat, start mode) and a
 * `routines` array, as they appear in `flotta.config.json`:
 *
 * ```json
 * "schedule": { "timezone": "America/Los_Angeles", "hours": { "mon": [["08:47", "17:00"]] }, "tickMs": 60000 },
 * "routines": [{ "name": "morning-scan", "action": "scan", "every": { "dailyAt": "09:00" } }]
 * ```
 *
 * Without a `schedule` section there is no scheduler: the layers below are `Layer.empty` and no timer runs.
 * A bad `schedule` section fails the layer with `InvalidSpec` (its path and every problem); a bad routine
 * is skipped, reported with the path of its bad field.
 *
 * A window is `["HH:MM", "HH:MM"]` or `"HH:MM-HH:MM"`. Prefer the string form when the file is read through
 * Effect's `ConfigProvider.fromJson`: in effect 3.22 that function never returns on an array nested in an
 * array (`[["08:47", "17:00"]]`), so `layerFromConfig` can only see the string form.
 */
import { InvalidSpec } from "@flotta/core/Errors"
import type { Flotta } from "@flotta/core/Flotta"
import type { ReportLog } from "@flotta/core/ReportLog"
import type { Rejected } from "@flotta/core/Spec"
import type { SchedulerSlot } from "@flotta/core/Steering"
import type { Mode, Weekday } from "@flotta/core/Steering"
import { Config, Effect, Either, HashMap, Layer, Option } from "effect"
import type { ConfigError } from "effect"
import type { Routine } from "./Routine.js"
import { isRecord, readRoutines } from "./Routine.js"
import * as S from "./Schedule.js"
import * as Scheduler from "./Scheduler.js"

export const DEFAULT_TICK_MS = 60_000

export interface SchedulerConfig {
  readonly schedule: Scheduler.ScheduleSettings
  readonly routines: ReadonlyArray<Routine>
  readonly rejected: ReadonlyArray<Rejected>
}

type Issue = { readonly path: string; readonly message: string }

const DAYS: ReadonlyArray<Weekday> = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
const ZONE_HINT = "\"utc\", { \"offsetSeconds\": -25200 }, or an IANA name such as \"America/Los_Angeles\""

const readZone = (input: unknown, at: string): S.TimeZone | Issue => {
  if (typeof input === "string") {
    if (input.toLowerCase() === "utc") return { _tag: "Utc" }
    const name = S.resolveZone(input)
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

const readHours = (input: unknown, at: string): S.Hours | ReadonlyArray<Issue> => {
  if (!isRecord(input)) {
    return [{ path: at, message: "expected an object of weekdays: { \"mon\": [[\"09:00\", \"17:00\"]] }" }]
  }
  const issues: Array<Issue> = []
  const hours: Partial<Record<Weekday, ReadonlyArray<S.Window>>> = {}
  for (const [key, value] of Object.entries(input)) {
    if (!DAYS.includes(key as Weekday)) {
      issues.push({ path: `${at}.${key}`, message: `unknown day: use ${DAYS.join(", ")}` })
      continue
    }
    if (!Array.isArray(value)) {
      issues.push({ path: `${at}.${key}`, message: "expected a list of windows: [[\"09:00\", \"17:00\"]]" })
      continue
    }
    const windows: Array<S.Window> = []
    value.forEach((item, i) => {
      const window = S.parseWindow(item)
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
): Either.Either<Scheduler.ScheduleSettings, ReadonlyArray<Issue>> => {
  if (!isRecord(input)) return Either.left([{ path: at, message: "expected an object with timezone and hours" }])
  const issues: Array<Issue> = []
  for (const key of Object.keys(input)) {
    if (!["timezone", "hours", "tickMs", "start"].includes(key)) {
      issues.push({
        path: `${at}.${key}`,
        message: "unknown field: the schedule has timezone, hours, tickMs and start"
      })
    }
  }
  let zone: S.TimeZone | undefined
  if (input["timezone"] === undefined) issues.push({ path: `${at}.timezone`, message: `required: ${ZONE_HINT}` })
  else {
    const read = readZone(input["timezone"], `${at}.timezone`)
    if ("path" in read) issues.push(read)
    else zone = read
  }
  let hours: S.Hours | undefined
  if (input["hours"] === undefined) {
    issues.push({
      path: `${at}.hours`,
      message: "required: working windows per weekday, e.g. { \"mon\": [[\"09:00\", \"17:00\"]] }"
    })
  } else {
    const read = readHours(input["hours"], `${at}.hours`)
    if (Array.isArray(read)) issues.push(...read)
    else hours = read as S.Hours
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

type Requirements = Flotta | ReportLog | SchedulerSlot

/** The scheduler for a parsed config object (what `Flotta.boot` also reads), or `Layer.empty` without a schedule. */
export const layerFromJson = (config: unknown): Layer.Layer<never, InvalidSpec, Requirements> =>
  Layer.unwrapEffect(
    Effect.map(
      read(config),
      Option.match({
        onNone: () => Layer.empty,
        onSome: (c) => Layer.discard(Scheduler.layer(c))
      })
    )
  )

// ------------------------------------------------------------------------------------------ Effect Config

/** Config leaves arrive as strings: give numbers and booleans back their type, so validation sees them. */
const scalar = (text: string): unknown =>
  /^-?\d+(\.\d+)?$/.test(text) ? Number(text) : text === "true" ? true : text === "false" ? false : text

const opt = <A>(config: Config.Config<A>) => Config.option(config)

const leaf = (name: string) => opt(Config.map(Config.string(name), scalar))

const defined = (entries: ReadonlyArray<readonly [string, Option.Option<unknown>]>) =>
  Object.fromEntries(entries.flatMap(([k, v]) => (Option.isSome(v) ? [[k, v.value]] : [])))

const scheduleConfig = Config.all({
  timezone: leaf("timezone"),
  offsetSeconds: opt(Config.map(Config.string("offsetSeconds"), scalar).pipe(Config.nested("timezone"))),
  hours: Config.all(Object.fromEntries(DAYS.map((d) => [d, opt(Config.array(Config.string(), d))])) as Record<
    Weekday,
    Config.Config<Option.Option<Array<string>>>
  >).pipe(Config.nested("hours")),
  tickMs: leaf("tickMs"),
  start: leaf("start")
}).pipe(Config.nested("schedule"))

const routineConfig = Config.all({
  fields: Config.all(
    Object.fromEntries(
      [
        "name",
        "action",
        "focus",
        "prompt",
        "cwd",
        "model",
        "maxTurns",
        "timeoutMs",
        "template",
        "maxDispatch",
        "agent",
        "worktree",
        "maxBudgetUsd",
        "dailyBudgetUsd"
      ].map((k) => [k, leaf(k)])
    )
  ),
  intervalMs: leaf("intervalMs").pipe(Config.nested("every")),
  dailyAt: leaf("dailyAt").pipe(Config.nested("every")),
  env: opt(Config.hashMap(Config.string(), "env")),
  permission: leaf("permission"),
  allow: opt(Config.array(Config.string(), "allow").pipe(Config.nested("permission")))
}).pipe(Config.map((r) => ({
  ...defined(Object.entries(r.fields)),
  ...((Option.isSome(r.intervalMs) || Option.isSome(r.dailyAt))
    ? { every: defined([["intervalMs", r.intervalMs], ["dailyAt", r.dailyAt]]) }
    : {}),
  ...(Option.isSome(r.env) && HashMap.size(r.env.value) > 0 ? { env: Object.fromEntries(r.env.value) } : {}),
  ...(Option.isSome(r.allow) ? { permission: { allow: r.allow.value } } : Option.isSome(r.permission)
    ? { permission: r.permission.value }
    : {})
})))

/**
 * The `schedule` and `routines` sections as the current `ConfigProvider` sees them, rebuilt as the config
 * object `read` takes (`None`: no schedule). Windows must use the `"HH:MM-HH:MM"` form here.
 */
export const fromConfig: Effect.Effect<Option.Option<unknown>, ConfigError.ConfigError> = Effect.gen(function*() {
  const s = yield* scheduleConfig
  const hours = Object.fromEntries(DAYS.flatMap((d) => (Option.isSome(s.hours[d]) ? [[d, s.hours[d].value]] : [])))
  const timezone = Option.isSome(s.offsetSeconds) ? Option.some({ offsetSeconds: s.offsetSeconds.value }) : s.timezone
  if (Option.isNone(timezone) && Object.keys(hours).length === 0) return Option.none()
  const routines = yield* Config.array(routineConfig, "routines").pipe(Config.withDefault([]))
  return Option.some({
    schedule: {
      ...(Option.isSome(timezone) ? { timezone: timezone.value } : {}),
      ...(Object.keys(hours).length > 0 ? { hours } : {}),
      ...(Option.isSome(s.tickMs) ? { tickMs: s.tickMs.value } : {}),
      ...(Option.isSome(s.start) ? { start: s.start.value } : {})
    },
    routines
  })
})

/** The scheduler from Effect `Config` (`schedule` and `routines`), or `Layer.empty` without a schedule. */
export const layerFromConfig: Layer.Layer<never, InvalidSpec | ConfigError.ConfigError, Requirements> = Layer
  .unwrapEffect(
    Effect.map(fromConfig, Option.match({ onNone: () => Layer.empty, onSome: layerFromJson }))
  )
