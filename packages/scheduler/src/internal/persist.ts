/**
 * The scheduler's saved state: what a restart of the host cannot read back from the report log. That is the
 * mode, the overrides and one-off work days, and each routine's cadence cursor (an interval routine's worked
 * time, a daily routine's last slot, the last fire), under one key of the `Store`. The day's spend is not here:
 * `Fires.routinesAtBoot` reads it from the report log, and so do findings.
 *
 * It is saved after every change (each locked section of the scheduler ends with a save) and decoded part by
 * part at boot. What cannot be used starts fresh: a state of another version, a part of the wrong shape, a
 * routine whose cadence changed. A routine the config no longer has is dropped. Nothing here stops the
 * scheduler.
 */
import { decodeAt } from "@flotta/core/Decode"
import { Either, Option, Predicate, Schema } from "effect"
import * as Calendar from "../Calendar.js"
import { overrideView } from "../Overrides.js"
import type { Routine } from "../Routine.js"
import { resumed as resumedEvent } from "../SchedulerEvents.js"
import type { Cadence, Mode } from "../Steering.js"
import { formatDate, formatLocal, iso, localDay, MINUTE } from "../WorkingHours.js"
import type { OverrideState, RoutineState, State } from "./state.js"

/** The `Store` key the scheduler's state is saved under. */
export const STATE_KEY = "scheduler"
export const VERSION = 1

const Instant = Schema.Number.pipe(Schema.finite())
const Minutes = Schema.Number.pipe(Schema.int(), Schema.between(0, 24 * 60))
const SavedMode = Schema.Literal("working", "paused")

const SavedOverride = Schema.Struct({
  id: Schema.String,
  kind: Schema.Literal("keep_going", "work_on", "stop_for_today"),
  from: Instant,
  until: Instant,
  date: Schema.optionalWith(Schema.Int, { exact: true }),
  window: Schema.optionalWith(Schema.Struct({ start: Minutes, end: Minutes }), { exact: true }),
  minutes: Schema.optionalWith(Schema.Int, { exact: true })
}).pipe(
  Schema.filter((o) =>
    o.kind !== "work_on" || (o.date !== undefined && o.window !== undefined) ||
    "a one-off shift has a date and a window"
  )
)

const SavedCadence = Schema.Union(
  Schema.Struct({ intervalMs: Schema.Number }),
  Schema.Struct({ dailyAt: Schema.String }),
  Schema.Struct({ triggered: Schema.Literal(true) })
)

const SavedRoutine = Schema.Struct({
  /** The cadence the cursor counts toward: a routine whose cadence changed starts fresh. */
  every: SavedCadence,
  /** `intervalMs`: working time since its last fire, counted up to `lastEval`. */
  workedMs: Schema.Number.pipe(Schema.finite(), Schema.nonNegative()),
  /** `dailyAt`: the newest slot taken. */
  lastSlot: Schema.NullOr(Instant),
  lastFire: Schema.NullOr(Schema.Struct({
    fireId: Schema.String,
    at: Schema.String,
    ok: Schema.Boolean,
    costUsd: Schema.Number
  }))
})

/** The saved shape, version 1. At boot each part is decoded on its own (see `restore`). */
export const SavedState = Schema.Struct({
  version: Schema.Literal(VERSION),
  /** The config's `start` when it was saved: a config that changed it since wins over the saved mode. */
  start: SavedMode,
  mode: SavedMode,
  /** The instant the state stands at: worked time is counted up to it. */
  lastEval: Instant,
  overrides: Schema.Array(SavedOverride),
  /** Local days made working days by `workOn`. */
  workDays: Schema.Array(Schema.Int),
  routines: Schema.Record({ key: Schema.String, value: SavedRoutine })
})
export type SavedState = typeof SavedState.Type

export interface Settings extends Calendar.Settings {
  /** The config's start mode. */
  readonly start: Mode
}

/** The state to save, standing at `now`: working time since the last evaluation is counted in. */
export const encode = (settings: Settings, s: State, now: number): typeof SavedState.Encoded => {
  const from = Math.min(s.lastEval, now)
  const pending = s.mode === "working" ? Calendar.workingMs(Calendar.calendarOf(settings, s), from, now) : 0
  const routines: Record<string, typeof SavedRoutine.Encoded> = {}
  for (const [name, r] of s.routines) {
    routines[name] = {
      every: r.routine.every,
      workedMs: "intervalMs" in r.routine.every ? r.workedMs + pending : 0,
      lastSlot: r.lastSlot,
      lastFire: r.lastFire
    }
  }
  return {
    version: VERSION,
    start: settings.start,
    mode: s.mode,
    lastEval: now,
    overrides: [...s.overrides],
    workDays: [...s.workDays].sort((a, b) => a - b),
    routines
  }
}

/** What a boot makes of the saved state. */
export interface Resumed {
  readonly mode: Mode
  /** The overrides still in force. */
  readonly overrides: ReadonlyArray<OverrideState>
  readonly workDays: ReadonlySet<number>
  readonly routines: ReadonlyMap<string, RoutineState>
  /** Overrides that ran out while the host was down. */
  readonly expired: ReadonlyArray<OverrideState>
  /** `dailyAt` slots that passed while the host was down (the newest per routine): not fired, recorded skipped. */
  readonly missed: ReadonlyArray<{ readonly routine: string; readonly instant: number }>
  /** What could not be used, in words: each is logged as a warning. */
  readonly problems: ReadonlyArray<string>
  /** The `resumed` entry's data; `undefined` when nothing was saved (a first start). */
  readonly report: typeof resumedEvent.data.Type | undefined
}

const sameCadence = (a: Cadence, b: Cadence) =>
  "intervalMs" in a
    ? "intervalMs" in b && a.intervalMs === b.intervalMs
    : "dailyAt" in a
    ? "dailyAt" in b && a.dailyAt === b.dailyAt
    : "triggered" in b

const describeCadence = (every: Cadence) =>
  "intervalMs" in every
    ? `every ${every.intervalMs} ms of working time`
    : "dailyAt" in every
    ? `daily at ${every.dailyAt}`
    : "on trigger"

/** The newest `dailyAt` slot in `(from, to]` on a work day (looking back two days at most). */
const missedSlot = (
  settings: Calendar.Settings,
  workDays: ReadonlySet<number>,
  dailyAt: string,
  from: number,
  to: number
) => {
  const c = Calendar.dailyCrossing(settings.zone, dailyAt, Math.max(from, to - 2 * 24 * 60 * MINUTE), to)
  return c !== undefined && Calendar.isWorkDay(settings.hours, { workDays }, c.day) ? c.instant : undefined
}

/**
 * The state a boot starts from: `atBoot` (each routine fresh, with today's spend from the report log) with
 * what of the saved state can be used laid over it. `loaded` is what the store had (`Left`: it could not
 * be read).
 */
export const restore = (input: {
  readonly loaded: Either.Either<Option.Option<unknown>, string>
  readonly settings: Settings
  readonly atBoot: ReadonlyMap<string, RoutineState>
  readonly bootAt: number
}): Resumed => {
  const { atBoot, bootAt, loaded, settings } = input
  const { start, zone } = settings
  const first: Resumed = {
    mode: start,
    overrides: [],
    workDays: new Set(),
    routines: atBoot,
    expired: [],
    missed: [],
    problems: [],
    report: undefined
  }
  const fresh = (problem: string): Resumed => ({
    ...first,
    problems: [problem],
    report: { restored: false, mode: start, problems: [problem] }
  })
  if (Either.isLeft(loaded)) return fresh(`the saved state could not be read (${loaded.left}): starting fresh`)
  if (Option.isNone(loaded.right)) return first
  const raw = loaded.right.value
  if (!Predicate.isRecord(raw) || raw["version"] !== VERSION) {
    const version = Predicate.isRecord(raw) && "version" in raw
      ? `version ${JSON.stringify(raw["version"])}`
      : "no version"
    return fresh(`the saved state is not one this scheduler reads (${version}, expected ${VERSION}): starting fresh`)
  }

  const problems: Array<string> = []
  const part = <A, I>(schema: Schema.Schema<A, I>, value: unknown, at: string): Option.Option<A> => {
    const decoded = decodeAt(schema, value, at, "ignore")
    if (Either.isRight(decoded)) return Option.some(decoded.right)
    problems.push(`${decoded.left.map((i) => `${i.path}: ${i.message}`).join("; ")}: not restored`)
    return Option.none()
  }

  const lastEval = part(Instant, raw["lastEval"], "lastEval")
  const savedStart = part(SavedMode, raw["start"], "start")
  const savedMode = part(SavedMode, raw["mode"], "mode")
  // The config's `start` changed since the save: the operator's new word wins.
  const startChanged = Option.isSome(savedStart) && savedStart.value !== start
  const mode = Option.isSome(savedMode) && !startChanged ? savedMode.value : start

  const overrides: Array<OverrideState> = []
  const expired: Array<OverrideState> = []
  const savedOverrides = part(Schema.Array(Schema.Unknown), raw["overrides"], "overrides")
  if (Option.isSome(savedOverrides)) {
    savedOverrides.value.forEach((value, index) => {
      Option.map(part(SavedOverride, value, `overrides[${index}]`), (o) => {
        if (o.until > bootAt) overrides.push(o)
        else expired.push(o)
      })
    })
  }

  const today = localDay(zone, bootAt)
  const workDays = new Set<number>()
  Option.map(part(Schema.Array(Schema.Int), raw["workDays"], "workDays"), (days) => {
    for (const day of days) if (day >= today - 1) workDays.add(day)
  })
  // A one-off shift in force makes its day a work day, whatever became of the list.
  for (const o of overrides) if (o.kind === "work_on" && o.date !== undefined) workDays.add(o.date)

  const routines = new Map(atBoot)
  const restored: Record<string, Record<string, unknown>> = {}
  const started: Array<{ readonly routine: string; readonly reason: string }> = []
  const dropped: Array<string> = []
  const missed: Array<{ readonly routine: string; readonly instant: number }> = []
  const savedRoutines = part(Schema.Record({ key: Schema.String, value: Schema.Unknown }), raw["routines"], "routines")
  if (Option.isSome(savedRoutines)) {
    for (const name of Object.keys(savedRoutines.value)) if (!atBoot.has(name)) dropped.push(name)
  }
  for (const [name, r] of atBoot) {
    const value = Option.isSome(savedRoutines) ? savedRoutines.value[name] : undefined
    if (value === undefined) {
      started.push({ routine: name, reason: "nothing saved for it" })
      continue
    }
    const cursor = part(SavedRoutine, value, `routines.${name}`)
    if (Option.isNone(cursor)) {
      started.push({ routine: name, reason: "its saved cursor could not be read" })
      continue
    }
    const every: Routine["every"] = r.routine.every
    const saved = cursor.value
    if (!sameCadence(saved.every, every)) {
      // The history stays; the cursor counted toward another cadence.
      routines.set(name, { ...r, lastFire: saved.lastFire })
      started.push({
        routine: name,
        reason: `its cadence changed (${describeCadence(saved.every)}, now ${describeCadence(every)})`
      })
      continue
    }
    let next: RoutineState = { ...r, lastFire: saved.lastFire }
    if ("intervalMs" in every) {
      // Below the interval: a fire that fell due in the very instant of the save is the first one after boot
      // (within a millisecond of working time), never one at the boot itself.
      next = { ...next, workedMs: Math.min(saved.workedMs, every.intervalMs - 1) }
      restored[name] = { workedMs: next.workedMs, lastFire: saved.lastFire }
    } else if ("triggered" in every) {
      // No cursor: it never falls due; only its last fire comes back.
      restored[name] = { lastFire: saved.lastFire }
    } else {
      next = { ...next, lastSlot: saved.lastSlot }
      if (Option.isSome(lastEval) && lastEval.value < bootAt) {
        const slot = missedSlot(settings, workDays, every.dailyAt, lastEval.value, bootAt)
        if (slot !== undefined && (saved.lastSlot === null || slot > saved.lastSlot)) {
          missed.push({ routine: name, instant: slot })
          next = { ...next, lastSlot: slot }
        }
      }
      restored[name] = {
        lastSlot: next.lastSlot === null ? null : formatLocal(zone, next.lastSlot),
        lastFire: saved.lastFire
      }
    }
    routines.set(name, next)
  }

  return {
    mode,
    overrides,
    workDays,
    routines,
    expired,
    missed,
    problems,
    report: {
      restored: true,
      stoodAt: Option.match(lastEval, { onNone: () => null, onSome: iso }),
      mode,
      ...(startChanged ? { modeFrom: "config: its start mode changed since the state was saved" } : {}),
      overrides: overrides.map(overrideView),
      expired: expired.map(overrideView),
      workDays: [...workDays].sort((a, b) => a - b).map(formatDate),
      routines: restored,
      fresh: started,
      dropped,
      missed: missed.map(({ instant, routine }) => ({ routine, localTime: formatLocal(zone, instant) })),
      problems
    }
  }
}
