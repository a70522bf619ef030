/**
 * Steering a running scheduler over MCP: its status, the overrides (keep going, work today or on a date, stop
 * for today), pause and resume, a routine or a scan fired by hand, and the findings the scans reported. Each
 * tool reaches the scheduler through `Scheduler.enabled`, so a server whose fleet runs no scheduler (no
 * `schedule` section, or `flotta mcp` over stdio) answers `SchedulerNotEnabled`. A fire is waited for within
 * the call's bound, like a turn; giving up on the wait never cancels the fire.
 */
import { InvalidSchedule } from "@flotta/scheduler/Errors"
import { Scheduler } from "@flotta/scheduler/Scheduler"
import * as Views from "@flotta/scheduler/SchedulerViews"
import type { FireOutcome, RunningFire, ScanOptions } from "@flotta/scheduler/Steering"
import { Duration, Effect, Option, Schema } from "effect"
import { bounded, seconds, secondsText, waitBound } from "./internal/wait.js"
import * as S from "./Schemas.js"
import type { Failure, ToolContext } from "./Tool.js"
import * as Tool from "./Tool.js"

// Hints (see Tools.ts): reading the schedule is read-only; steering changes it but destroys nothing.
const READ = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } as const
const STEERS = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false } as const
const TOGGLES = { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false } as const
const FIRES = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true } as const

// --- arguments ---------------------------------------------------------------------------------------------

const Text = Schema.String.pipe(Schema.minLength(1))
const ClockTime = Schema.String.pipe(Schema.pattern(/^\d{2}:\d{2}$/))
const LocalDate = Schema.String.pipe(Schema.pattern(/^\d{4}-\d{2}-\d{2}$/))
const Count = Schema.Number.pipe(Schema.int(), Schema.positive())
const Positive = Schema.Number.pipe(Schema.positive(), Schema.finite())

const FROM_DESCRIPTION = "The window's start, local wall-clock time \"HH:MM\" in the schedule's time zone"
const TO_DESCRIPTION = "The window's end, \"HH:MM\" (\"24:00\" is midnight; an end before the start runs past " +
  "midnight)"
const WINDOW_DEFAULT = "; give both or neither (default: the span of the first configured working day, else " +
  "09:00-17:00)"
const FIRE_WAIT_DESCRIPTION = `How long this call waits for the fire, in seconds (default ${S.DEFAULT_WAIT_SECONDS}, ` +
  `1 to ${S.MAX_WAIT_SECONDS}); when it expires the call returns done: false and the fire goes on`

const FireWait = Schema.Number.pipe(Schema.between(1, S.MAX_WAIT_SECONDS))

export const KeepGoingArgs = Schema.Struct({
  minutes: S.opt(
    Schema.Number.pipe(Schema.int(), Schema.between(1, 24 * 60)),
    "Whole minutes of working time to add, 1 to 1440 (default 60); stacks on a keep-going already running"
  )
})

export const WorkTodayArgs = Schema.Struct({
  from: S.opt(ClockTime, FROM_DESCRIPTION + WINDOW_DEFAULT),
  to: S.opt(ClockTime, TO_DESCRIPTION)
})

export const WorkOnArgs = Schema.Struct({
  date: S.req(LocalDate, "The local date, \"YYYY-MM-DD\": today or up to a year ahead"),
  from: S.opt(ClockTime, FROM_DESCRIPTION + WINDOW_DEFAULT),
  to: S.opt(ClockTime, TO_DESCRIPTION)
})

export const RunRoutineArgs = Schema.Struct({
  name: S.req(Text, "The routine's name, as flotta_schedule_status lists it"),
  timeoutSeconds: S.opt(FireWait, FIRE_WAIT_DESCRIPTION)
})

export const ScanArgs = Schema.Struct({
  focus: S.opt(Text, "What to look for, e.g. \"failing tests, stale docs\""),
  prompt: S.opt(Text, "The scan's request (default: find actionable work); the scan's rules stay in its system prompt"),
  cwd: S.opt(Text, "Where the scan looks (default: the server's working directory)"),
  model: S.opt(Text, "Model name or alias"),
  env: S.opt(Schema.Record({ key: Schema.String, value: Schema.String }), "Added to the scan's environment"),
  maxBudgetUsd: S.opt(Positive, "Spend at most this many dollars"),
  maxTurns: S.opt(Count, "Model calls at most"),
  scanTimeoutSeconds: S.opt(Positive, "The scan is interrupted after this long"),
  timeoutSeconds: S.opt(FireWait, FIRE_WAIT_DESCRIPTION)
})

export const FindingsArgs = Schema.Struct({
  routine: S.opt(Text, "Only what this routine's scans found"),
  limit: S.opt(Schema.Number.pipe(Schema.int(), Schema.between(1, 10_000)), "At most this many, newest first")
})

// --- results ------------------------------------------------------------------------------------------------

const describe = <A extends Schema.Schema.Any>(schema: A, description: string) =>
  schema.annotations({ description }) as A

/** A manual fire as the call saw it: its outcome, or `done: false` when the wait ended first. */
export const FireResult = Schema.Struct({
  done: describe(Schema.Boolean, "false: the fire was still going when the wait ended; it goes on"),
  fireId: describe(Schema.NullOr(Schema.String), "The fire's id (null only if it could not be told apart)"),
  routine: describe(Schema.NullOr(Schema.String), "null: an ad-hoc scan"),
  waitedMs: Schema.Number,
  outcome: Schema.optional(Views.FireOutcome),
  message: describe(Schema.String, "What happened, in words, and what to call next")
})

const Steered = Schema.Struct({
  override: describe(Views.Override, "The override just added; it expires by itself"),
  status: describe(Views.SchedulerStatus, "The schedule after the change")
})
const StatusAnswer = Schema.Struct({ status: describe(Views.SchedulerStatus, "The schedule after the change") })

// --- handlers -----------------------------------------------------------------------------------------------

/** The running scheduler, else `SchedulerNotEnabled`. */
const steer = <A, E extends Failure>(f: (scheduler: Scheduler) => Effect.Effect<A, E>) =>
  Effect.flatMap(Scheduler.enabled, f)

/** A window from optional `from` and `to`: both, or neither (the scheduler's default). */
const windowOf = (args: { readonly from?: string; readonly to?: string }) => {
  if (args.from === undefined && args.to === undefined) return Effect.succeed(undefined)
  if (args.from === undefined || args.to === undefined) {
    const missing = args.from === undefined ? "from" : "to"
    return Effect.fail(
      new InvalidSchedule({
        field: missing,
        reason: "give both from and to (a window such as 09:00 to 17:00), or neither"
      })
    )
  }
  return Effect.succeed([args.from, args.to] as const)
}

const withStatus = <E extends Failure>(scheduler: Scheduler, change: Effect.Effect<Views.Override, E>) =>
  Effect.map(Effect.zip(change, scheduler.status), ([override, status]) => ({ override, status }))

const describeOutcome = (label: string, outcome: FireOutcome) => {
  const cost = `$${outcome.costUsd.toFixed(4)}`
  if (!outcome.ok) {
    const error = outcome.error === undefined ? "" : `: ${outcome.error._tag}: ${outcome.error.message}`
    return `${label}: fire ${outcome.fireId} failed${error} (${cost})`
  }
  const tasks = outcome.tasks === undefined ? "" : `, ${outcome.tasks.length} task(s) found`
  const dispatched = outcome.dispatched === undefined ? "" : `, ${outcome.dispatched.length} dispatched`
  return `${label}: fire ${outcome.fireId} succeeded${tasks}${dispatched} (${cost})`
}

/**
 * Waits for a manual fire within the call's bound, with progress every few seconds. When the bound ends first,
 * `ours` (read then) names the fire still in flight: the fire goes on, and the answer says where its outcome
 * lands.
 */
const waitFire = (
  fire: Effect.Effect<FireOutcome, Failure>,
  ours: Effect.Effect<Option.Option<RunningFire>>,
  label: string,
  routine: string | null,
  timeoutSeconds: number | undefined,
  ctx: ToolContext
) =>
  Effect.gen(function*() {
    const { outcome, waitedMs } = yield* bounded(fire, waitBound(timeoutSeconds), {
      ctx,
      describe: (waitedMs) => Effect.succeed(`${label}: running, waited ${secondsText(waitedMs)}`)
    })
    if (Option.isSome(outcome)) {
      const value = outcome.value
      return {
        done: true,
        fireId: value.fireId,
        routine,
        waitedMs,
        outcome: value,
        message: describeOutcome(label, value)
      }
    }
    const fireId = Option.getOrNull(Option.map(yield* ours, (f) => f.fireId))
    const which = fireId === null ? "the fire" : `fire ${fireId}`
    return {
      done: false,
      fireId,
      routine,
      waitedMs,
      message: `${label}: ${which} still running after ${secondsText(waitedMs)}; it goes on. Its outcome will be the ` +
        `fire_result entry with this fireId in flotta_reports { "agent": "scheduler", "kinds": ["fire_result"] }` +
        (routine === null ? "" : `, and flotta_schedule_status shows it as the routine's lastFire`)
    }
  })

const scanOptions = (args: typeof ScanArgs.Type): ScanOptions => {
  const { scanTimeoutSeconds, timeoutSeconds: _, ...rest } = args
  return {
    ...rest,
    ...(scanTimeoutSeconds === undefined ? {} : { timeoutMs: Duration.toMillis(seconds(scanTimeoutSeconds)) })
  }
}

/** The ad-hoc scans in flight, by fire id. */
const adhocFires = (scheduler: Scheduler) =>
  Effect.map(scheduler.status, (s) => s.running.filter((f) => f.routine === null))

const NOT_ENABLED = "Answers SchedulerNotEnabled when the fleet runs no scheduler."

/** The steering tools, in the order `tools/list` gives them. */
export const tools: ReadonlyArray<Tool.Tool> = [
  Tool.make({
    name: "flotta_schedule_status",
    title: "Schedule status",
    description: "The scheduler's state: mode (working or paused), whether this instant is working time and why, " +
      "today's windows, the overrides in force, fires in flight, and each routine with its next fire, last " +
      "outcome and today's spend. " + NOT_ENABLED,
    annotations: READ,
    input: S.NoArgs,
    output: Views.SchedulerStatus,
    run: () => steer((scheduler) => scheduler.status)
  }),
  Tool.make({
    name: "flotta_keep_going",
    title: "Keep working",
    description: "Add working time from now: the current stretch (or now, outside hours) is extended by `minutes` " +
      "(default 60). Cancels a stop for today; expires by itself. " + NOT_ENABLED,
    annotations: STEERS,
    input: KeepGoingArgs,
    output: Steered,
    run: ({ minutes }) => steer((scheduler) => withStatus(scheduler, scheduler.keepGoing(minutes ?? 60)))
  }),
  Tool.make({
    name: "flotta_work_today",
    title: "Work today",
    description: "Add a one-off working window today (from and to, local time; default: a usual working day's " +
      "span). Expires by itself at the window's end. " + NOT_ENABLED,
    annotations: STEERS,
    input: WorkTodayArgs,
    output: Steered,
    run: (args) =>
      steer((scheduler) =>
        Effect.flatMap(windowOf(args), (window) => withStatus(scheduler, scheduler.workToday(window)))
      )
  }),
  Tool.make({
    name: "flotta_work_on",
    title: "Work on a date",
    description: "Add a one-off working window on a local date (today or up to a year ahead), e.g. a Saturday: " +
      "from and to in local time (default: a usual working day's span). " + NOT_ENABLED,
    annotations: STEERS,
    input: WorkOnArgs,
    output: Steered,
    run: ({ date, ...window }) =>
      steer((scheduler) => Effect.flatMap(windowOf(window), (w) => withStatus(scheduler, scheduler.workOn(date, w))))
  }),
  Tool.make({
    name: "flotta_pause",
    title: "Pause the scheduler",
    description: "Pause: no routine fires and no new work starts (fires in flight finish) until flotta_resume. " +
      "A manual flotta_run_routine still works. Returns the status. " + NOT_ENABLED,
    annotations: TOGGLES,
    input: S.NoArgs,
    output: StatusAnswer,
    run: () => steer((scheduler) => Effect.map(scheduler.pause, (status) => ({ status })))
  }),
  Tool.make({
    name: "flotta_resume",
    title: "Resume the scheduler",
    description: "Resume after a pause; also undoes a stop for today and lifts the routines' daily budget rails. " +
      "Returns the status. " + NOT_ENABLED,
    annotations: TOGGLES,
    input: S.NoArgs,
    output: StatusAnswer,
    run: () => steer((scheduler) => Effect.map(scheduler.resume, (status) => ({ status })))
  }),
  Tool.make({
    name: "flotta_stop_for_today",
    title: "Stop for today",
    description: "No more working time today: until local midnight (or the end of a shift that runs past it). " +
      "Cancels a keep-going; flotta_resume or flotta_keep_going undo it. " + NOT_ENABLED,
    annotations: TOGGLES,
    input: S.NoArgs,
    output: Steered,
    run: () => steer((scheduler) => withStatus(scheduler, scheduler.stopForToday))
  }),
  Tool.make({
    name: "flotta_run_routine",
    title: "Fire a routine now",
    description: "Fire a configured routine now, whatever its cadence, the hours or a pause, and wait for its " +
      "outcome at most timeoutSeconds (default 45, at most 50) with progress notifications. If it is still going, " +
      "returns done: false with its fireId: the fire goes on. A routine already running is RoutineBusy; one held " +
      "by its daily budget is RoutineRailed. " + NOT_ENABLED,
    annotations: FIRES,
    input: RunRoutineArgs,
    output: FireResult,
    run: ({ name, timeoutSeconds }, ctx) =>
      steer((scheduler) =>
        waitFire(
          scheduler.runRoutine(name),
          Effect.map(scheduler.status, (s) => Option.fromNullable(s.running.find((f) => f.routine === name))),
          `routine ${name}`,
          name,
          timeoutSeconds,
          ctx
        )
      )
  }),
  Tool.make({
    name: "flotta_scan_now",
    title: "Scan now",
    description: "Start an ad-hoc scan: a read-only run that looks for actionable work (optionally with a focus) " +
      "and reports tasks, which join the findings. Waits for it at most timeoutSeconds (default 45, at most 50); " +
      "if it is still going, returns done: false with its fireId. " + NOT_ENABLED,
    annotations: FIRES,
    input: ScanArgs,
    output: FireResult,
    run: (args, ctx) =>
      steer((scheduler) =>
        Effect.gen(function*() {
          const before = new Set((yield* adhocFires(scheduler)).map((f) => f.fireId))
          // The newest ad-hoc scan that was not running before this call.
          const ours = Effect.map(adhocFires(scheduler), (running) =>
            Option.fromNullable(
              running.filter((f) => !before.has(f.fireId)).sort((a, b) => b.since.localeCompare(a.since))[0]
            ))
          return yield* waitFire(scheduler.scanNow(scanOptions(args)), ours, "scan", null, args.timeoutSeconds, ctx)
        })
      )
  }),
  Tool.make({
    name: "flotta_findings",
    title: "Findings",
    description: "Every distinct task the scans found (deduplicated by title, newest first), with how often and " +
      "when it was seen and which routine found it. Read from the report log, so earlier runs of the host count. " +
      NOT_ENABLED,
    annotations: READ,
    input: FindingsArgs,
    output: Schema.Struct({ findings: Schema.Array(Views.Finding) }),
    run: (query) => steer((scheduler) => Effect.map(scheduler.findings(query), (findings) => ({ findings })))
  })
]
