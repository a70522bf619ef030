/**
 * The scheduler's report kinds, each with the Schema of its data (all posted as `scheduler`): the engine names
 * none of them; the scheduler declares them here, posts through them and reads its entries back with them.
 */
import * as ReportEvent from "@flotta/core/ReportEvent"
import { Schema } from "effect"
import { ErrorView, FireOutcome, FireTrigger, Mode, RoutineAction, Task } from "./SchedulerViews.js"

const described = <A>(schema: Schema.Schema<A>, description: string) => schema.annotations({ description })
const LocalTime = described(Schema.String, "the time in the scheduler's zone, in words")
/** Fields a kind may carry beyond its named ones (a skip's circumstances, an override's own fields). */
const Reason = described(Schema.String, "why, in words")
const More = Schema.Record({ key: Schema.String, value: Schema.Unknown })

export const started = ReportEvent.kind(
  "started",
  Schema.Struct({
    mode: Mode,
    timezone: Schema.String,
    localTime: LocalTime,
    routines: Schema.Array(Schema.String),
    rejected: described(
      Schema.Array(Schema.Struct({ path: Schema.String, message: Schema.String })),
      "routines the config had that could not be used"
    ),
    spentToday: Schema.Record({ key: Schema.String, value: Schema.Number }),
    railed: Schema.Array(Schema.String)
  }),
  "the scheduler started",
  { summary: (d) => `${d.mode}, ${d.routines.length} routines, ${d.timezone}` }
)

export const resumed = ReportEvent.kind(
  "resumed",
  Schema.Struct({ restored: Schema.Boolean, mode: Mode }, More),
  "after a restart of the host: what of the saved state came back",
  { summary: (d) => d.restored ? `restored, ${d.mode}` : `not restored, ${d.mode}` }
)

const Shift = Schema.Struct({ reason: Reason, localTime: LocalTime })

export const wake = ReportEvent.kind("wake", Shift, "working time started", { summary: (d) => d.reason })
export const stop = ReportEvent.kind("stop", Shift, "working time stopped", { summary: (d) => d.reason })

export const fire = ReportEvent.kind(
  "fire",
  Schema.Struct({
    fireId: Schema.String,
    routine: described(Schema.NullOr(Schema.String), "null: an ad-hoc scan"),
    action: RoutineAction,
    trigger: FireTrigger,
    localTime: LocalTime,
    budgetUsd: Schema.optionalWith(Schema.Number, { exact: true }),
    detail: Schema.optionalWith(Schema.Unknown, { exact: true })
  }),
  "a routine (or an ad-hoc scan) fired",
  { summary: (d) => ReportEvent.words(d.routine, d.action, d.trigger) }
)

export const fireResult = ReportEvent.kind(
  "fire_result",
  Schema.Struct({ ...FireOutcome.fields, day: described(Schema.String, "the local day its spend counts on") }),
  "a fire ended: its outcome",
  { summary: (d) => ReportEvent.words(d.routine, d.action, d.ok ? "ok" : "failed") + ReportEvent.costOf(d.costUsd) }
)

export const skip = ReportEvent.kind(
  "skip",
  Schema.Struct({ routine: Schema.String, reason: Reason, trigger: FireTrigger, localTime: LocalTime }, More),
  "a routine was due or triggered but did not fire",
  { summary: (d) => `${d.routine}: ${d.reason}` }
)

export const override = ReportEvent.kind(
  "override",
  Schema.Struct({
    action: described(Schema.String, "keep_going, stop_for_today, work_on, pause or resume"),
    phase: Schema.Literal("start", "cancelled", "expired"),
    /** A resume: whether the scheduler was paused, and the routines whose rails it lifted. */
    wasPaused: Schema.optionalWith(Schema.Boolean, { exact: true }),
    resetRails: Schema.optionalWith(Schema.Array(Schema.String), { exact: true })
  }, More),
  "a steering override started, was cancelled or expired",
  { summary: (d) => ReportEvent.words(d.action, d.phase) }
)

export const rail = ReportEvent.kind(
  "rail",
  Schema.Struct({
    routine: Schema.NullOr(Schema.String),
    action: Schema.Literal("paused", "lifted")
  }, More),
  "a routine's daily budget rail stopped it, or was lifted",
  { summary: (d) => ReportEvent.words(d.routine, d.action) }
)

export const findings = ReportEvent.kind(
  "findings",
  Schema.Struct({
    routine: described(Schema.NullOr(Schema.String), "null: an ad-hoc scan"),
    fireId: Schema.String,
    run: Schema.String,
    tasks: Schema.Array(Task)
  }),
  "a scan reported tasks",
  { summary: (d) => ReportEvent.words(d.routine, `found ${d.tasks.length}`) }
)

export const dispatch = ReportEvent.kind(
  "dispatch",
  Schema.Struct({
    routine: Schema.String,
    fireId: Schema.String,
    key: Schema.String,
    title: Schema.String,
    run: Schema.String
  }),
  "a dispatch scan started a run for a task",
  { summary: (d) => `${d.routine}: ${d.title} → ${d.run}` }
)

/** The scheduler's kinds. */
export const kinds = [started, resumed, wake, stop, fire, fireResult, skip, override, rail, findings, dispatch] as const

export { ErrorView }
