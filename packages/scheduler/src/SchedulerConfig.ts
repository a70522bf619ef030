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
import { decodeAt, exact, UNKNOWN_FIELD, unknownName } from "@flotta/core/Decode"
import type { FieldIssue } from "@flotta/core/Decode"
import { InvalidSpec } from "@flotta/core/Errors"
import type { Fleet, Rejected } from "@flotta/core/Spec"
import { Effect, Either, Option, ParseResult, Predicate, Schema } from "effect"
import type { Routine } from "./Routine.js"
import { readRoutines } from "./Routine.js"
import { Mode, Weekday } from "./SchedulerViews.js"
import type { Hours, TimeZone } from "./WorkingHours.js"
import { formatWindow, parseWindow, resolveZone } from "./WorkingHours.js"

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

const DAYS = Weekday.literals
const ZONE_HINT = "\"utc\", { \"offsetSeconds\": -25200 }, or an IANA name such as \"America/Los_Angeles\""
const WINDOW_HINT = "expected [\"HH:MM\", \"HH:MM\"] or \"HH:MM-HH:MM\""

/** A message that replaces Effect's own for the schema it annotates. */
const says = (message: string) => ({ message: () => ({ message, override: true }) })

const TimeZoneSchema: Schema.Schema<TimeZone> = Schema.Union(
  Schema.TaggedStruct("Utc", {}),
  Schema.TaggedStruct("Offset", { seconds: Schema.Number }),
  Schema.TaggedStruct("Zone", { name: Schema.String })
)

const OffsetSeconds = Schema.Struct({
  offsetSeconds: Schema.Number.pipe(Schema.int(), Schema.between(-50400, 50400))
    .annotations(says("whole seconds east of UTC, from -50400 to 50400"))
})

/** `"utc"`, `{ "offsetSeconds": n }` or an IANA name, resolved to a zone. */
const Zone = Schema.transformOrFail(
  Schema.Union(Schema.Literal("utc"), OffsetSeconds, Schema.String).annotations({
    message: () => ({ message: `expected ${ZONE_HINT}`, override: false })
  }),
  TimeZoneSchema,
  {
    strict: true,
    decode: (input, _, ast) => {
      if (typeof input !== "string") {
        return ParseResult.succeed({ _tag: "Offset" as const, seconds: input.offsetSeconds })
      }
      if (input.toLowerCase() === "utc") return ParseResult.succeed({ _tag: "Utc" as const })
      const name = resolveZone(input)
      if (name === undefined) {
        return ParseResult.fail(new ParseResult.Type(ast, input, `unknown time zone "${input}": use ${ZONE_HINT}`))
      }
      return ParseResult.succeed(name === "UTC" ? { _tag: "Utc" as const } : { _tag: "Zone" as const, name })
    },
    encode: (zone) =>
      ParseResult.succeed(
        zone._tag === "Utc" ? "utc" : zone._tag === "Offset" ? { offsetSeconds: zone.seconds } : zone.name
      )
  }
)

const ClockText = Schema.String.pipe(Schema.pattern(/^\d{2}:\d{2}$/))
/** `["HH:MM", "HH:MM"]` or `"HH:MM-HH:MM"`; an end of `24:00` is midnight. */
const WindowText = Schema.Union(
  Schema.Tuple(ClockText, ClockText),
  Schema.String.pipe(Schema.pattern(/^\d{2}:\d{2}-\d{2}:\d{2}$/))
).annotations(says(WINDOW_HINT))

const WindowSchema = Schema.transformOrFail(WindowText, Schema.Struct({ start: Schema.Number, end: Schema.Number }), {
  strict: true,
  decode: (input, _, ast) => {
    const window = parseWindow(input)
    return typeof window === "string"
      ? ParseResult.fail(new ParseResult.Type(ast, input, window))
      : ParseResult.succeed(window)
  },
  encode: (window) => {
    const { end, start } = formatWindow(window)
    return ParseResult.succeed([start, end] as const)
  }
})

const Windows = Schema.Array(WindowSchema).annotations({
  message: () => ({ message: "expected a list of windows: [[\"09:00\", \"17:00\"]]", override: false })
})
const day = exact(Windows)

const HoursSchema = Schema.Struct({ mon: day, tue: day, wed: day, thu: day, fri: day, sat: day, sun: day })
  .annotations({
    message: () => ({
      message: "expected an object of weekdays: { \"mon\": [[\"09:00\", \"17:00\"]] }",
      override: false
    })
  })

/**
 * The `schedule` section: decoded to `ScheduleSettings`, with a message per bad field that names it and what it
 * takes. The descriptions are the config reference's prose (which documents each field as written).
 */
export const ScheduleSection = Schema.Struct({
  timezone: Schema.propertySignature(Zone).annotations({
    description: "`\"utc\"`, a fixed offset in seconds east of UTC, or an IANA name such as " +
      "`\"America/Los_Angeles\"` (on the days the clocks change, a window is neither lost nor doubled).",
    missingMessage: () => `required: ${ZONE_HINT}`
  }),
  hours: Schema.propertySignature(HoursSchema).annotations({
    description: "Working windows per weekday (`mon` to `sun`) in local wall-clock time: " +
      "`{ \"mon\": [[\"08:47\", \"17:00\"]] }`, or `\"08:47-17:00\"`. A day not named has no working time.",
    missingMessage: () => "required: working windows per weekday, e.g. { \"mon\": [[\"09:00\", \"17:00\"]] }"
  }),
  tickMs: Schema.optionalWith(
    Schema.Number.pipe(Schema.int(), Schema.greaterThanOrEqualTo(1000))
      .annotations(says("a whole number of milliseconds, at least 1000")),
    { exact: true, default: () => DEFAULT_TICK_MS }
  ).annotations({
    description: "The heartbeat's longest sleep, in milliseconds; it also wakes at every change of the schedule."
  }),
  start: Schema.optionalWith(
    Mode.annotations(says("expected \"working\" (follow the schedule) or \"paused\"")),
    { exact: true, default: () => "working" as const }
  ).annotations({
    description: "`working` follows the schedule from the start; `paused` fires nothing until resumed."
  })
})

/** An unknown key under `hours` is a day that is not one. */
const unknownKey = (issue: FieldIssue, at: string): FieldIssue =>
  issue.message.startsWith(UNKNOWN_FIELD) && issue.path.startsWith(`${at}.hours.`)
    ? { path: issue.path, message: `unknown day: use ${DAYS.join(", ")}` }
    : issue

/** Validates the `schedule` section, reporting every bad field. */
export const readSchedule = (
  input: unknown,
  at = "schedule"
): Either.Either<ScheduleSettings, ReadonlyArray<FieldIssue>> => {
  if (!Predicate.isRecord(input)) {
    return Either.left([{ path: at, message: "expected an object with timezone and hours" }])
  }
  return decodeAt(ScheduleSection, input, at).pipe(
    Either.mapLeft((issues) => issues.map((issue) => unknownKey(issue, at))),
    Either.map(({ hours, start, tickMs, timezone }) => ({ zone: timezone, hours, tickMs, start }))
  )
}

/**
 * Reads `{ schedule, routines }` from a config object: `None` without a `schedule` section, `InvalidSpec`
 * when the section is bad; bad routines are in `rejected` (given the declared fleet, also those naming a run
 * template or a session it does not declare).
 */
export const read = (
  config: unknown,
  fleet?: Fleet
): Either.Either<Option.Option<SchedulerConfig>, InvalidSpec> => {
  if (!Predicate.isRecord(config) || config["schedule"] === undefined || config["schedule"] === null) {
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
  const { rejected, routines } = readRoutines(config["routines"], "routines", fleet)
  return Either.right(Option.some({ schedule: schedule.right, routines, rejected }))
}

/**
 * What is wrong with `name` as a routine of the scheduler `config` reads (`undefined`: none, no `schedule`
 * section), or `undefined` when it has it (a GitHub mapping's routine).
 */
export const routineProblem = (config: SchedulerConfig | undefined, name: string): string | undefined => {
  if (config === undefined) return `names the routine "${name}", but there is no schedule section, so no routine runs`
  if (config.routines.some((routine) => routine.name === name)) return undefined
  const skipped = config.rejected.find((r) => r.name === name)
  if (skipped !== undefined) return `the routine "${name}" is skipped itself (${skipped.entry} is invalid)`
  return unknownName("routine", name, config.routines.map((routine) => routine.name), "routines")
}

/** `read` for a config that must have a `schedule` section: its absence is `InvalidSpec` too. */
export const required = Effect.fn("SchedulerConfig.required")(function*(config: unknown) {
  return yield* Effect.suspend(() =>
    Either.match(read(config), {
      onLeft: Effect.fail,
      onRight: Option.match({
        onNone: () => new InvalidSpec({ path: "schedule", reason: "required: the time zone and working hours" }),
        onSome: Effect.succeed
      })
    })
  )
})
