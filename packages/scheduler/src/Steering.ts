/**
 * Steering: the shape of what a running scheduler offers (status, overrides, pause, manual fires, scans,
 * findings) and the report-log vocabulary it writes. Findings are read from the report log alone, so a
 * restarted scheduler, or a reader with no scheduler at all, sees every one.
 */
import type { InvalidSpec } from "@flotta/core/Errors"
import type { ReportEntry, ReportLog } from "@flotta/core/ReportLog"
import { Effect } from "effect"
import type { InvalidSchedule, RoutineBusy, RoutineNotFound, RoutineRailed } from "./Errors.js"

/** The report log's agent for everything the scheduler records. */
export const SCHEDULER_AGENT = "scheduler"

/** The scheduler's report kinds (agent `scheduler`). */
export const ReportKinds = {
  started: "started",
  /** After a restart of the host: what of the saved state came back (see `internal/persist.ts`). */
  resumed: "resumed",
  wake: "wake",
  stop: "stop",
  fire: "fire",
  fireResult: "fire_result",
  skip: "skip",
  override: "override",
  rail: "rail",
  findings: "findings",
  dispatch: "dispatch"
} as const

export type Weekday = "mon" | "tue" | "wed" | "thu" | "fri" | "sat" | "sun"
export type Mode = "working" | "paused"
export type RoutineAction = "scan" | "run" | "dispatch_scan" | "prompt"
export type Cadence = { readonly intervalMs: number } | { readonly dailyAt: string }

/** A working window for a steering call: `["09:00", "17:00"]` or `"09:00-17:00"` (local wall-clock time). */
export type WindowInput = readonly [string, string] | string

export interface WindowView {
  /** Local wall-clock times, `HH:MM`. */
  readonly start: string
  readonly end: string
  /** The instants it covers (ISO, UTC): DST changes make these differ from `end - start`. */
  readonly from: string
  readonly until: string
  readonly source: "hours" | "work_on" | "keep_going"
}

export type OverrideKind = "keep_going" | "work_on" | "stop_for_today"

/** A runtime change to the schedule; every override expires by itself at `until`. */
export interface Override {
  readonly id: string
  readonly kind: OverrideKind
  /** ISO instants: working time is added (`keep_going`, `work_on`) or removed (`stop_for_today`) in between. */
  readonly from: string
  readonly until: string
  /** `work_on`: the local date and window. */
  readonly date?: string
  readonly window?: { readonly start: string; readonly end: string }
  /** `keep_going`: the minutes asked for. */
  readonly minutes?: number
}

export type FireTrigger = "schedule" | "manual"

export interface RunningFire {
  readonly fireId: string
  /** `null` for an ad-hoc `scanNow`. */
  readonly routine: string | null
  readonly action: RoutineAction
  readonly trigger: FireTrigger
  readonly since: string
}

export interface RoutineStatus {
  readonly name: string
  readonly action: RoutineAction
  readonly every: Cadence
  readonly state: "idle" | "running" | "railed"
  /** When it fires next if nothing changes (`null`: paused, or no working time ahead). */
  readonly nextFireAt: string | null
  /** `intervalMs` routines: working time counted since the last fire (or boot). */
  readonly workedMs?: number
  readonly spentTodayUsd: number
  readonly maxBudgetUsd: number | null
  readonly dailyBudgetUsd: number | null
  /** Set while the daily rail holds it: the start of the next local day. */
  readonly railedUntil: string | null
  readonly lastFire: {
    readonly fireId: string
    readonly at: string
    readonly ok: boolean
    readonly costUsd: number
  } | null
}

export interface SchedulerStatus {
  readonly mode: Mode
  /** Whether this instant is working time (mode, hours and overrides together). */
  readonly working: boolean
  /** Why it is or is not working: `hours 08:47-17:00`, `keep going`, `paused`, `stopped for today`, ... */
  readonly reason: string
  readonly timezone: string
  readonly now: string
  /** The local wall-clock time with its offset, e.g. `2025-03-10T09:15:00-07:00`. */
  readonly localTime: string
  readonly today: {
    readonly date: string
    readonly weekday: Weekday
    readonly windows: ReadonlyArray<WindowView>
  }
  readonly overrides: ReadonlyArray<Override>
  readonly running: ReadonlyArray<RunningFire>
  readonly routines: ReadonlyArray<RoutineStatus>
  /** Routines the config had but that were skipped, with the path of the bad field. */
  readonly rejected: ReadonlyArray<{ readonly path: string; readonly message: string }>
  /** The next instant working time starts or stops (within a week). */
  readonly nextChange: string | null
}

export type Priority = "low" | "medium" | "high"

/** One unit of work a scan found. */
export interface Task {
  readonly title: string
  readonly detail: string
  readonly priority?: Priority
}

export interface Finding extends Task {
  /** The normalised title it is deduplicated by. */
  readonly key: string
  /** The routine whose scan found it most recently (`null`: an ad-hoc `scanNow`). */
  readonly routine: string | null
  readonly fireId: string
  /** The newest sighting (its title, detail and priority are the ones shown), and the first. */
  readonly foundAt: string
  readonly firstFoundAt: string
  /** How many scans reported it. */
  readonly sightings: number
  /** The report-log entry of the newest sighting. */
  readonly seq: number
}

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

export interface ErrorView {
  readonly _tag: string
  readonly message: string
}

export interface DispatchOutcome {
  readonly title: string
  readonly key: string
  readonly run: string
  readonly ok: boolean
  readonly costUsd: number
  readonly error?: ErrorView
}

/** What one fire did. A fire that failed still has an outcome: `ok: false` and the error. */
export interface FireOutcome {
  readonly fireId: string
  readonly routine: string | null
  readonly action: RoutineAction
  readonly trigger: FireTrigger
  readonly startedAt: string
  readonly finishedAt: string
  readonly ok: boolean
  readonly costUsd: number
  readonly error?: ErrorView
  /** Runs it started, by name (scan, run, dispatched runs). */
  readonly runs: ReadonlyArray<string>
  /** `run` and `prompt`: the reply. */
  readonly text?: string
  /** `prompt`: the session's turn. */
  readonly turnId?: string
  /** `scan` and `dispatch_scan`: what the scan reported. */
  readonly tasks?: ReadonlyArray<Task & { readonly key: string }>
  readonly dispatched?: ReadonlyArray<DispatchOutcome>
  /** New tasks left for a later fire (maxDispatch, a pause, the budget). */
  readonly deferred?: ReadonlyArray<
    { readonly title: string; readonly key: string; readonly reason: string }
  >
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
  readonly scanNow: (options: ScanOptions) => Effect.Effect<FireOutcome, InvalidSpec>
  /** Every distinct task the scans found, newest first; read from the report log. */
  readonly findings: (query?: FindingsQuery) => Effect.Effect<ReadonlyArray<Finding>>
}

/** The key findings are deduplicated by: lower case, whitespace collapsed, punctuation trimmed at both ends. */
export const normalizeTitle = (title: string): string =>
  title.toLowerCase().replace(/\s+/g, " ").replace(/^[\s\p{P}\p{S}]+|[\s\p{P}\p{S}]+$/gu, "")

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

const PRIORITIES: ReadonlyArray<string> = ["low", "medium", "high"]

/** The tasks of one `findings` entry; anything malformed is skipped (the log may hold older shapes). */
export const tasksOf = (entry: ReportEntry): ReadonlyArray<Task & { readonly key: string }> => {
  if (!isRecord(entry.data) || !Array.isArray(entry.data["tasks"])) return []
  return entry.data["tasks"].flatMap((t): Array<Task & { readonly key: string }> => {
    if (!isRecord(t) || typeof t["title"] !== "string") return []
    const key = normalizeTitle(t["title"])
    if (key.length === 0) return []
    const priority = t["priority"]
    return [{
      title: t["title"],
      detail: typeof t["detail"] === "string" ? t["detail"] : "",
      ...(typeof priority === "string" && PRIORITIES.includes(priority) ? { priority: priority as Priority } : {}),
      key
    }]
  })
}

/** Every distinct task across `findings` entries (oldest first in), newest first out. */
export const collectFindings = (entries: ReadonlyArray<ReportEntry>, query: FindingsQuery = {}): Array<Finding> => {
  const byKey = new Map<string, Finding>()
  for (const entry of entries) {
    if (entry.agent !== SCHEDULER_AGENT || entry.kind !== ReportKinds.findings || !isRecord(entry.data)) continue
    const routine = typeof entry.data["routine"] === "string" ? entry.data["routine"] : null
    if (query.routine !== undefined && routine !== query.routine) continue
    const fireId = typeof entry.data["fireId"] === "string" ? entry.data["fireId"] : ""
    const seen = new Set<string>()
    for (const task of tasksOf(entry)) {
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
export const schedulerEntries = (
  reports: Pick<ReportLog, "reports">,
  kinds: ReadonlyArray<string>
): Effect.Effect<ReadonlyArray<ReportEntry>> =>
  Effect.gen(function*() {
    const out: Array<ReportEntry> = []
    let since = 0
    while (true) {
      const page = yield* reports.reports({ since, agent: SCHEDULER_AGENT, kinds, limit: 10_000 })
      out.push(...page.entries)
      if (page.entries.length === 0 || page.next <= since) return out
      since = page.next
    }
  })

/** The found-work view, from the report log alone. */
export const readFindings = (reports: Pick<ReportLog, "reports">, query: FindingsQuery = {}) =>
  Effect.map(schedulerEntries(reports, [ReportKinds.findings]), (entries) => collectFindings(entries, query))
