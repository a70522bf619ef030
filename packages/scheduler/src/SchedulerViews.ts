/**
 * What a running scheduler shows, as Schemas: its status (mode, today's windows, overrides, fires in flight,
 * routines), a fire's outcome and the scans' findings. Steering returns these; the MCP tools, the cli and the
 * dashboard read them; each field's description is what an MCP client sees.
 */
import { ErrorView } from "@flotta/core/AgentView"
import { exact } from "@flotta/core/Decode"
import { Schema } from "effect"

export { ErrorView } from "@flotta/core/AgentView"

const describe = <A extends Schema.Schema.Any>(schema: A, description: string): A =>
  schema.annotations({ description }) as A

const Iso = describe(Schema.String, "An instant, ISO 8601 in UTC")
const NullableIso = Schema.NullOr(Iso)

export const Weekday = Schema.Literal("mon", "tue", "wed", "thu", "fri", "sat", "sun")
export type Weekday = typeof Weekday.Type
export const Mode = Schema.Literal("working", "paused")
export type Mode = typeof Mode.Type
export const RoutineAction = describe(
  Schema.Literal("scan", "run", "dispatch_scan", "prompt"),
  "scan, run, dispatch_scan or prompt"
)
export type RoutineAction = typeof RoutineAction.Type
export const FireTrigger = describe(
  Schema.Literal("schedule", "manual", "webhook", "github"),
  "schedule, manual (runRoutine, scanNow), webhook (POST /hooks/routines/NAME) or github (POST /hooks/github)"
)
export type FireTrigger = typeof FireTrigger.Type
/** The triggers that come from outside (`trigger`), as opposed to the schedule and the manual fires. */
export const TriggerSource = Schema.Literal("webhook", "github")
export type TriggerSource = typeof TriggerSource.Type
export const Priority = Schema.Literal("low", "medium", "high")
export type Priority = typeof Priority.Type

export const Cadence = Schema.Union(
  Schema.Struct({ intervalMs: describe(Schema.Number, "Every this much working time") }),
  Schema.Struct({ dailyAt: describe(Schema.String, "Once per working day at this local time") }),
  Schema.Struct({
    triggered: describe(Schema.Literal(true), "Never on a schedule: only when triggered (a webhook) or by hand")
  })
)
export type Cadence = typeof Cadence.Type

/** A working window; `from` and `until` are the instants it covers (DST makes them differ from end - start). */
export const WindowView = Schema.Struct({
  start: describe(Schema.String, "Local wall-clock start, HH:MM"),
  end: describe(Schema.String, "Local wall-clock end, HH:MM"),
  from: Iso,
  until: Iso,
  source: Schema.Literal("hours", "work_on", "keep_going")
})
export type WindowView = typeof WindowView.Type

export const OverrideKind = Schema.Literal("keep_going", "work_on", "stop_for_today")
export type OverrideKind = typeof OverrideKind.Type

/** A runtime change to the schedule; every override expires by itself at `until`. */
export const Override = Schema.Struct({
  id: Schema.String,
  kind: OverrideKind,
  from: Iso,
  until: describe(Iso, "When it expires by itself"),
  /** `work_on`: the local date and window. */
  date: exact(Schema.String),
  window: exact(Schema.Struct({ start: Schema.String, end: Schema.String })),
  /** `keep_going`: the minutes asked for. */
  minutes: exact(Schema.Number)
})
export type Override = typeof Override.Type

export const RunningFire = Schema.Struct({
  fireId: Schema.String,
  routine: describe(Schema.NullOr(Schema.String), "null: an ad-hoc scan (flotta_scan_now)"),
  action: RoutineAction,
  trigger: FireTrigger,
  since: Iso
})
export type RunningFire = typeof RunningFire.Type

export const RoutineStatus = Schema.Struct({
  name: Schema.String,
  action: RoutineAction,
  every: Cadence,
  state: Schema.Literal("idle", "running", "railed"),
  nextFireAt: describe(
    NullableIso,
    "When it fires next if nothing changes; null: paused, no working time ahead, or fired only on trigger"
  ),
  workedMs: exact(describe(Schema.Number, "Working time counted since its last fire")),
  spentTodayUsd: Schema.Number,
  maxBudgetUsd: Schema.NullOr(Schema.Number),
  dailyBudgetUsd: Schema.NullOr(Schema.Number),
  railedUntil: describe(NullableIso, "Set while its daily budget holds it back"),
  lastFire: Schema.NullOr(Schema.Struct({
    fireId: Schema.String,
    at: Iso,
    ok: Schema.Boolean,
    costUsd: Schema.Number
  }))
})
export type RoutineStatus = typeof RoutineStatus.Type

export const SchedulerStatus = Schema.Struct({
  mode: Mode,
  working: describe(Schema.Boolean, "Whether this instant is working time (mode, hours and overrides together)"),
  reason: describe(Schema.String, "Why it is or is not working: \"hours 09:00-17:00\", \"paused\", ..."),
  timezone: Schema.String,
  now: Iso,
  localTime: describe(Schema.String, "The schedule's local time with its offset"),
  today: Schema.Struct({
    date: Schema.String,
    weekday: Weekday,
    windows: Schema.Array(WindowView)
  }),
  overrides: Schema.Array(Override),
  running: describe(Schema.Array(RunningFire), "Fires in flight"),
  routines: Schema.Array(RoutineStatus),
  rejected: describe(
    Schema.Array(Schema.Struct({ path: Schema.String, message: Schema.String })),
    "Routines the config had but that were skipped"
  ),
  nextChange: describe(NullableIso, "The next instant working time starts or stops (within a week)")
})
export type SchedulerStatus = typeof SchedulerStatus.Type

/** One unit of work a scan found. */
export const Task = Schema.Struct({
  title: Schema.String,
  detail: Schema.String,
  priority: exact(Priority)
})
export type Task = typeof Task.Type

/** A task as a fire reports it, with the normalised title it is deduplicated by. */
export const KeyedTask = Schema.Struct({ ...Task.fields, key: Schema.String })
export type KeyedTask = typeof KeyedTask.Type

export const Finding = Schema.Struct({
  ...Task.fields,
  key: describe(Schema.String, "The normalised title findings are deduplicated by"),
  routine: describe(Schema.NullOr(Schema.String), "The routine whose scan found it last (null: an ad-hoc scan)"),
  fireId: Schema.String,
  foundAt: Iso,
  firstFoundAt: Iso,
  sightings: describe(Schema.Number, "How many scans reported it"),
  seq: describe(Schema.Number, "The report-log entry of the newest sighting")
})
export type Finding = typeof Finding.Type

export const DispatchOutcome = Schema.Struct({
  title: Schema.String,
  key: Schema.String,
  run: Schema.String,
  ok: Schema.Boolean,
  costUsd: Schema.Number,
  error: exact(ErrorView)
})
export type DispatchOutcome = typeof DispatchOutcome.Type

/** What one fire did. A fire that failed still has an outcome: `ok: false` and the error. */
export const FireOutcome = Schema.Struct({
  fireId: Schema.String,
  routine: Schema.NullOr(Schema.String),
  action: RoutineAction,
  trigger: FireTrigger,
  startedAt: Iso,
  finishedAt: Iso,
  ok: Schema.Boolean,
  costUsd: Schema.Number,
  error: exact(ErrorView),
  runs: describe(Schema.Array(Schema.String), "The runs it started, by name (flotta_run_result, flotta_reports)"),
  text: exact(describe(Schema.String, "run and prompt: the reply")),
  turnId: exact(Schema.String),
  tasks: exact(describe(Schema.Array(KeyedTask), "scan and dispatch_scan: what the scan reported")),
  dispatched: exact(Schema.Array(DispatchOutcome)),
  deferred: exact(describe(
    Schema.Array(Schema.Struct({ title: Schema.String, key: Schema.String, reason: Schema.String })),
    "New tasks left for a later fire (maxDispatch, a pause, the budget)"
  ))
})
export type FireOutcome = typeof FireOutcome.Type
