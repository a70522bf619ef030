/**
 * Steering: the shape of what a running scheduler offers (status, overrides, pause, manual fires, scans,
 * findings) and the report-log vocabulary it writes. Findings are read from the report log alone, so a
 * restarted scheduler, or a reader with no scheduler at all, sees every one.
 */
import type { InvalidSpec, StoreUnavailable } from "@flotta/core/Errors"
import * as ReportEvent from "@flotta/core/ReportEvent"
import type { ReportEntry, ReportLog } from "@flotta/core/ReportLog"
import { Effect, Option } from "effect"
import type { InvalidSchedule, RoutineBusy, RoutineNotFound, RoutineOffHours, RoutineRailed } from "./Errors.js"
import * as Events from "./SchedulerEvents.js"
import type {
  Finding,
  FireOutcome,
  KeyedTask,
  Override,
  SchedulerStatus,
  Task,
  TriggerSource
} from "./SchedulerViews.js"

/** The report log's agent for everything the scheduler records. */
export const SCHEDULER_AGENT = "scheduler"

/** The scheduler's report kinds (agent `scheduler`), by name; `SchedulerEvents` has their Schemas. */
export const ReportKinds = {
  started: Events.started.kind,
  /** After a restart of the host: what of the saved state came back (see `internal/persist.ts`). */
  resumed: Events.resumed.kind,
  wake: Events.wake.kind,
  stop: Events.stop.kind,
  fire: Events.fire.kind,
  fireResult: Events.fireResult.kind,
  skip: Events.skip.kind,
  override: Events.override.kind,
  rail: Events.rail.kind,
  findings: Events.findings.kind,
  dispatch: Events.dispatch.kind
} as const

export type {
  Cadence,
  DispatchOutcome,
  ErrorView,
  Finding,
  FireOutcome,
  FireTrigger,
  KeyedTask,
  Mode,
  Override,
  OverrideKind,
  Priority,
  RoutineAction,
  RoutineStatus,
  RunningFire,
  SchedulerStatus,
  Task,
  TriggerSource,
  Weekday,
  WindowView
} from "./SchedulerViews.js"

/** A working window for a steering call: `["09:00", "17:00"]` or `"09:00-17:00"` (local wall-clock time). */
export type WindowInput = readonly [string, string] | string

export interface FindingsQuery {
  /** Only what this routine's scans found. */
  readonly routine?: string
  readonly limit?: number
}

/** An ad-hoc scan: a read-only run that reports its tasks. */
export interface ScanOptions {
  readonly focus?: string
  /** The turn's text (default: a request to find actionable work); the scan's rules are in the system prompt. */
  readonly prompt?: string
  readonly cwd?: string
  readonly model?: string
  readonly env?: Readonly<Record<string, string>>
  readonly maxBudgetUsd?: number
  readonly maxTurns?: number
  readonly timeoutMs?: number
}

/** A fire from outside (a webhook): what fired it, and what the event says. */
export interface TriggerInput {
  /** What fired it: `POST /hooks/routines/NAME` (webhook) or `POST /hooks/github` (github). */
  readonly source: TriggerSource
  /**
   * What the event says, already rendered by the caller: it replaces `{{event}}` in the routine's prompt (the
   * scan's, the run's or its template's, the turn's), or else follows the prompt after a blank line. Cut to
   * 16 KiB, with a note that it was cut.
   */
  readonly text?: string
  /** Small JSON-able facts kept in the `fire` entry under `detail`: `{ event: "check_run.completed", delivery }`. */
  readonly detail?: Record<string, unknown>
}

/** What a scheduler offers the facade. */
export interface Steering {
  readonly status: Effect.Effect<SchedulerStatus>
  readonly keepGoing: (minutes: number) => Effect.Effect<Override, InvalidSchedule>
  readonly workToday: (window?: WindowInput) => Effect.Effect<Override, InvalidSchedule>
  readonly workOn: (date: string, window?: WindowInput) => Effect.Effect<Override, InvalidSchedule>
  readonly pause: Effect.Effect<SchedulerStatus>
  readonly resume: Effect.Effect<SchedulerStatus>
  readonly stopForToday: Effect.Effect<Override>
  readonly runRoutine: (name: string) => Effect.Effect<FireOutcome, RoutineNotFound | RoutineBusy | RoutineRailed>
  /**
   * Fires a routine from outside and returns as soon as the fire has started (its outcome is a `fire_result`
   * entry). Outside working hours or while paused it is refused (RoutineOffHours, a `skip` entry) unless the
   * routine has `triggerAnyTime`; a fire still running (RoutineBusy) and the daily rail (RoutineRailed) refuse
   * it as they refuse `runRoutine`.
   */
  readonly trigger: (
    name: string,
    input: TriggerInput
  ) => Effect.Effect<{ readonly fireId: string }, RoutineNotFound | RoutineBusy | RoutineRailed | RoutineOffHours>
  readonly scanNow: (options: ScanOptions) => Effect.Effect<FireOutcome, InvalidSpec>
  /** Every distinct task the scans found, newest first; read from the report log. */
  readonly findings: (query?: FindingsQuery) => Effect.Effect<ReadonlyArray<Finding>, StoreUnavailable>
}

/** The key findings are deduplicated by: lower case, whitespace collapsed, punctuation trimmed at both ends. */
export const normalizeTitle = (title: string): string =>
  title.toLowerCase().replace(/\s+/g, " ").replace(/^[\s\p{P}\p{S}]+|[\s\p{P}\p{S}]+$/gu, "")

/** A `findings` entry, decoded: `None` for another kind, or one whose data does not fit (an older shape). */
export const decodeFindings = ReportEvent.decodeAs(Events.findings)

/** The tasks of one `findings` entry, each with its key; a task whose title normalises to nothing is skipped. */
export const tasksOf = (tasks: ReadonlyArray<Task>): ReadonlyArray<KeyedTask> =>
  tasks.flatMap((t): Array<KeyedTask> => {
    const key = normalizeTitle(t.title)
    return key.length === 0 ? [] : [{ ...t, key }]
  })

/** Every distinct task across `findings` entries (oldest first in), newest first out. */
export const collectFindings = (entries: ReadonlyArray<ReportEntry>, query: FindingsQuery = {}): Array<Finding> => {
  const byKey = new Map<string, Finding>()
  for (const raw of entries) {
    if (raw.agent !== SCHEDULER_AGENT) continue
    const decoded = decodeFindings(raw)
    if (Option.isNone(decoded)) continue
    const entry = decoded.value
    const routine = entry.data.routine
    if (query.routine !== undefined && routine !== query.routine) continue
    const fireId = entry.data.fireId
    const seen = new Set<string>()
    for (const task of tasksOf(entry.data.tasks)) {
      if (seen.has(task.key)) continue
      seen.add(task.key)
      const previous = byKey.get(task.key)
      byKey.set(task.key, {
        ...task,
        routine,
        fireId,
        foundAt: entry.at,
        firstFoundAt: previous?.firstFoundAt ?? entry.at,
        sightings: (previous?.sightings ?? 0) + 1,
        seq: entry.seq
      })
    }
  }
  const out = [...byKey.values()].sort((a, b) => b.seq - a.seq)
  return query.limit === undefined ? out : out.slice(0, Math.max(0, query.limit))
}

/** Every entry of the given scheduler kinds, oldest first, reading the whole log page by page. */
export const schedulerEntries = Effect.fn("Steering.schedulerEntries")(
  function*(reports: Pick<ReportLog, "reports">, kinds: ReadonlyArray<string>) {
    const out: Array<ReportEntry> = []
    let since = 0
    while (true) {
      const page = yield* reports.reports({ since, agent: SCHEDULER_AGENT, kinds, limit: 10_000 })
      out.push(...page.entries)
      if (page.entries.length === 0 || page.next <= since) return out
      since = page.next
    }
  }
)

/** The found-work view, from the report log alone. */
export const readFindings = Effect.fn("Steering.readFindings")(
  function*(reports: Pick<ReportLog, "reports">, query: FindingsQuery = {}) {
    return yield* Effect.map(
      schedulerEntries(reports, [ReportKinds.findings]),
      (entries) => collectFindings(entries, query)
    )
  }
)
