/**
 * The scheduler: a heartbeat that follows working hours, fires routines on their cadence through the public
 * fleet operations, and takes steering at runtime. It is a Layer of its own, on only when config has a
 * `schedule`; the engine never learns about time.
 *
 * All time is Effect's Clock, so `TestClock` drives it. The heartbeat sleeps until the next instant anything
 * can change (a window opens or closes, an override expires, a `dailyAt` time, an interval falls due, local
 * midnight), and at most `tickMs`; steering wakes it at once. Every wake, stop, fire, skip, override and rail
 * is a span and an entry in the report log under `scheduler`.
 */
import type { TurnResult } from "@flotta/core/Agent"
import { InvalidSpec } from "@flotta/core/Errors"
import { Flotta } from "@flotta/core/Flotta"
import * as Permission from "@flotta/core/Permission"
import { ReportLog } from "@flotta/core/ReportLog"
import type { RunOptions, RunResult } from "@flotta/core/Run"
import type { Rejected, Spec } from "@flotta/core/Spec"
import {
  Cause,
  Clock,
  Deferred,
  Duration,
  Effect,
  Either,
  Exit,
  FiberSet,
  Layer,
  Option,
  Queue,
  Ref,
  Schema
} from "effect"
import { randomBytes } from "node:crypto"
import {
  InvalidScanOutput,
  InvalidSchedule,
  RoutineBusy,
  RoutineNotFound,
  RoutineRailed,
  RoutineRefused,
  SchedulerNotEnabled
} from "./Errors.js"
import type { DispatchRoutine, Routine, ScanParams } from "./Routine.js"
import { decodeAt } from "./Routine.js"
import * as S from "./Schedule.js"
import { normalizeTitle, readFindings, ReportKinds, SCHEDULER_AGENT, schedulerEntries, tasksOf } from "./Steering.js"
import type {
  DispatchOutcome,
  ErrorView,
  FindingsQuery,
  FireOutcome,
  FireTrigger,
  Mode,
  Override,
  RoutineAction,
  RoutineStatus,
  RunningFire,
  ScanOptions,
  SchedulerStatus,
  Steering,
  Task,
  WindowInput,
  WindowView
} from "./Steering.js"

export interface ScheduleSettings {
  readonly zone: S.TimeZone
  readonly hours: S.Hours
  /** The heartbeat's longest sleep. */
  readonly tickMs: number
  readonly start: Mode
}

export interface SchedulerOptions {
  readonly schedule: ScheduleSettings
  readonly routines: ReadonlyArray<Routine>
  /** Routines the config had but that were skipped: shown in status and recorded at start. */
  readonly rejected?: ReadonlyArray<Rejected>
}

type Failure = { readonly _tag: string; readonly message: string }

/** The fleet operations a scheduler drives: the `Flotta` facade's, or a test double's. */
export interface FleetOps {
  readonly run: (options: RunOptions) => Effect.Effect<RunResult, Failure>
  readonly prompt: (
    agent: string,
    text: string,
    options: { readonly timeout?: Duration.DurationInput }
  ) => Effect.Effect<string, Failure>
  readonly wait: (agent: string, turnId: string) => Effect.Effect<TurnResult, Failure>
  readonly template: (name: string) => Effect.Effect<Spec | undefined>
}

export interface SchedulerDeps {
  readonly fleet: FleetOps
  readonly reports: Pick<ReportLog, "post" | "reports">
}

export const fromFlotta = (fleet: Flotta): FleetOps => ({
  run: fleet.run,
  prompt: fleet.prompt,
  wait: fleet.wait,
  template: fleet.template
})

// ---------------------------------------------------------------------------------------------- scans

/** What a scan must return, as the JSON Schema handed to the CLI. */
export const TASKS_JSON_SCHEMA: Record<string, unknown> = {
  type: "object",
  properties: {
    tasks: {
      type: "array",
      items: {
        type: "object",
        properties: {
          title: { type: "string", description: "One line naming the task" },
          detail: { type: "string", description: "What to do and where, enough to start without rescanning" },
          priority: { type: "string", enum: ["low", "medium", "high"] }
        },
        required: ["title", "detail"],
        additionalProperties: false
      }
    }
  },
  required: ["tasks"],
  additionalProperties: false
}

const TaskList = Schema.Struct({
  tasks: Schema.Array(Schema.Struct({
    title: Schema.String.pipe(Schema.filter((t) => normalizeTitle(t).length > 0 || "a title with some words in it")),
    detail: Schema.String,
    priority: Schema.optional(Schema.Literal("low", "medium", "high"))
  }))
})

const scanInstructions = (focus: string | undefined) =>
  [
    "You are scanning this project for actionable work. Read what you need; change nothing.",
    "Report each distinct, concrete task you find: a one-line title, and enough detail (files, symptoms, the",
    "fix you suggest) for someone to start on it without scanning again. Give a priority when it is clear.",
    "Report only real work; an empty list is a fine answer.",
    ...(focus === undefined ? [] : [`Focus on: ${focus}`])
  ].join("\n")

const defaultScanPrompt = (focus: string | undefined) =>
  focus === undefined
    ? "Scan for actionable work and report it as tasks."
    : `Scan for actionable work and report it as tasks. Focus on: ${focus}`

/** The prompt a dispatched run gets: its template's prompt, then the task. */
export const dispatchPrompt = (templatePrompt: string | undefined, task: Task) =>
  [
    templatePrompt ?? "Work on this task, then report what you did.",
    "",
    `Task: ${task.title}`,
    ...(task.priority === undefined ? [] : [`Priority: ${task.priority}`]),
    "",
    task.detail
  ].join("\n").trimEnd()

const exact = <A, I>(schema: Schema.Schema<A, I>) => Schema.optionalWith(schema, { exact: true })
const ScanOptionsSchema = Schema.Struct({
  focus: exact(Schema.String.pipe(Schema.minLength(1))),
  prompt: exact(Schema.String.pipe(Schema.minLength(1))),
  cwd: exact(Schema.String.pipe(Schema.minLength(1))),
  model: exact(Schema.String.pipe(Schema.minLength(1))),
  env: exact(Schema.Record({ key: Schema.String, value: Schema.String })),
  maxBudgetUsd: exact(Schema.Number.pipe(Schema.positive())),
  maxTurns: exact(Schema.Number.pipe(Schema.int(), Schema.positive())),
  timeoutMs: exact(Schema.Number.pipe(Schema.int(), Schema.positive()))
})

// ---------------------------------------------------------------------------------------------- state

interface Running {
  readonly fireId: string
  readonly routine: string | null
  readonly action: RoutineAction
  readonly trigger: FireTrigger
  readonly since: number
}

interface RoutineState {
  readonly routine: Routine
  /** `intervalMs`: working time since the last fire (the boot cursor starts it at zero). */
  readonly workedMs: number
  readonly running: Running | null
  /** The local day `spentUsd` belongs to. */
  readonly spentDay: number
  readonly spentUsd: number
  readonly railed: boolean
  readonly lastFire: RoutineStatus["lastFire"]
}

interface OverrideState {
  readonly id: string
  readonly kind: Override["kind"]
  readonly from: number
  readonly until: number
  readonly date?: number
  readonly window?: S.Window
  readonly minutes?: number
}

interface State {
  readonly mode: Mode
  readonly overrides: ReadonlyArray<OverrideState>
  /** Local days made working days by `workOn` (for `dailyAt`). */
  readonly workDays: ReadonlySet<number>
  /** Whether the last evaluation found working time (wake and stop are its changes). */
  readonly working: boolean
  /** The instant of the last evaluation: cadences count from here. */
  readonly lastEval: number
  readonly routines: ReadonlyMap<string, RoutineState>
  /** Ad-hoc scans in flight. */
  readonly adhoc: ReadonlyMap<string, Running>
}

type Target =
  | { readonly _tag: "Routine"; readonly routine: Routine }
  | { readonly _tag: "Scan"; readonly options: ScanOptions }

const hex = (bytes: number) => randomBytes(bytes).toString("hex")
const runName = (prefix: string) => `${prefix.slice(0, 50)}-${hex(4)}`

const errorView = (error: Failure): ErrorView => ({ _tag: error._tag, message: error.message })

/** What a failed run or turn had spent, when its error says (BudgetExceeded, MaxTurnsReached, TurnTimeout). */
const costOf = (error: unknown): number =>
  typeof error === "object" && error !== null && "costUsd" in error && typeof error.costUsd === "number"
    ? error.costUsd
    : 0

const EPSILON = 1e-9

// ---------------------------------------------------------------------------------------------- make

export const make = (options: SchedulerOptions, deps: SchedulerDeps) =>
  Effect.gen(function*() {
    const { fleet, reports } = deps
    const { hours, start, tickMs, zone } = options.schedule
    const rejected = options.rejected ?? []
    const lock = yield* Effect.makeSemaphore(1)
    const locked = lock.withPermits(1)
    const dispatchLock = (yield* Effect.makeSemaphore(1)).withPermits(1)
    const fires = yield* FiberSet.make()
    const poke = yield* Queue.sliding<void>(1)
    /** Task keys a dispatch in this process has taken (the report log has the rest). */
    const claimed = new Set<string>()

    /** One report-log entry, in a span of its own (a fire's entry sits in the fire's span instead). */
    const record = (kind: string, data: Record<string, unknown>) =>
      kind === ReportKinds.fire
        ? reports.post(SCHEDULER_AGENT, kind, data)
        : reports.post(SCHEDULER_AGENT, kind, data).pipe(
          Effect.withSpan(`scheduler.${kind}`, {
            attributes: Object.fromEntries(
              Object.entries(data).filter(([, v]) => typeof v === "string" || typeof v === "number")
                .map(([k, v]) => [`flotta.scheduler.${k}`, v])
            )
          })
        )

    // ------------------------------------------------------------------------------------ boot
    const bootAt = yield* Clock.currentTimeMillis
    const today = S.localDay(zone, bootAt)
    // A restart keeps today's spend when the report log still holds it.
    const history = yield* schedulerEntries(reports, [ReportKinds.fireResult, ReportKinds.override])
    const spentToday = (name: string) => {
      let resetSeq = 0
      for (const entry of history) {
        const data = entry.data as Record<string, unknown>
        if (
          entry.kind === ReportKinds.override && data["action"] === "resume" &&
          Array.isArray(data["resetRails"]) && data["resetRails"].includes(name)
        ) resetSeq = entry.seq
      }
      return history.reduce((sum, entry) => {
        const data = entry.data as Record<string, unknown>
        return entry.kind === ReportKinds.fireResult && entry.seq > resetSeq && data["routine"] === name &&
            data["day"] === S.formatDate(today) && typeof data["costUsd"] === "number"
          ? sum + data["costUsd"]
          : sum
      }, 0)
    }
    const initialRoutines = new Map<string, RoutineState>()
    for (const routine of options.routines) {
      const spentUsd = spentToday(routine.name)
      initialRoutines.set(routine.name, {
        routine,
        workedMs: 0,
        running: null,
        spentDay: today,
        spentUsd,
        railed: routine.dailyBudgetUsd !== undefined && spentUsd >= routine.dailyBudgetUsd - EPSILON,
        lastFire: null
      })
    }
    const state = yield* Ref.make<State>({
      mode: start,
      overrides: [],
      workDays: new Set(),
      working: false,
      lastEval: bootAt,
      routines: initialRoutines,
      adhoc: new Map()
    })

    // ------------------------------------------------------------------------------------ time views
    const calendarOf = (s: State): S.Calendar => ({
      zone,
      hours,
      added: s.overrides.filter((o) => o.kind !== "stop_for_today"),
      removed: s.overrides.filter((o) => o.kind === "stop_for_today")
    })

    const workingNow = (s: State, now: number) => s.mode === "working" && S.isWorkingAt(calendarOf(s), now)

    const isWorkDay = (s: State, day: number) => (hours[S.weekdayOf(day)]?.length ?? 0) > 0 || s.workDays.has(day)

    const inStop = (s: State, instant: number) =>
      s.overrides.some((o) => o.kind === "stop_for_today" && o.from <= instant && instant < o.until)

    const nextMidnight = (now: number) => S.dayStart(zone, S.localDay(zone, now) + 1)

    const dailyInstant = (at: string, day: number) => S.fromLocal(zone, day * S.DAY + S.parseClock(at)! * S.MINUTE)

    /** The newest `dailyAt` crossing in `(from, to]`, if any. */
    const crossing = (at: string, from: number, to: number) => {
      let found: { day: number; instant: number } | undefined
      for (let day = S.localDay(zone, from) - 1; day <= S.localDay(zone, to) + 1; day++) {
        const instant = dailyInstant(at, day)
        if (instant > from && instant <= to) found = { day, instant }
      }
      return found
    }

    const reasonAt = (s: State, now: number): string => {
      if (s.mode === "paused") return "paused"
      if (inStop(s, now)) return "stopped for today"
      for (let day = S.localDay(zone, now) - 1; day <= S.localDay(zone, now); day++) {
        for (const w of S.windowsOn(zone, hours, day)) {
          if (w.from <= now && now < w.until) {
            return `hours ${S.formatClock(w.window.start)}-${S.formatClock(w.window.end)}`
          }
        }
      }
      for (const o of s.overrides) {
        if (o.from <= now && now < o.until) {
          if (o.kind === "keep_going") return `keep going until ${S.formatLocal(zone, o.until)}`
          if (o.kind === "work_on") return `one-off shift ${S.formatDate(o.date!)}`
        }
      }
      return "outside working hours"
    }

    const overrideView = (o: OverrideState): Override => ({
      id: o.id,
      kind: o.kind,
      from: S.iso(o.from),
      until: S.iso(o.until),
      ...(o.date === undefined ? {} : { date: S.formatDate(o.date) }),
      ...(o.window === undefined ? {} : { window: S.formatWindow(o.window) }),
      ...(o.minutes === undefined ? {} : { minutes: o.minutes })
    })

    const runningView = (r: Running): RunningFire => ({
      fireId: r.fireId,
      routine: r.routine,
      action: r.action,
      trigger: r.trigger,
      since: S.iso(r.since)
    })

    /** When a routine fires next if nothing changes. */
    const nextFire = (s: State, r: RoutineState, now: number): number | undefined => {
      if (s.mode === "paused") return undefined
      const railedUntil = r.railed ? nextMidnight(now) : now
      const every = r.routine.every
      if ("dailyAt" in every) {
        for (let day = S.localDay(zone, now); day <= S.localDay(zone, now) + 14; day++) {
          const instant = dailyInstant(every.dailyAt, day)
          if (instant > now && instant >= railedUntil && isWorkDay(s, day) && !inStop(s, instant)) return instant
        }
        return undefined
      }
      const calendar = calendarOf(s)
      let due = S.afterWorking(calendar, now, every.intervalMs - r.workedMs)
      // Fires that fall due while the rail holds are skipped; the cadence starts again from each.
      for (let i = 0; due !== undefined && due < railedUntil && i < 1000; i++) {
        due = S.afterWorking(calendar, due, every.intervalMs)
      }
      return due
    }

    const budgetOf = (r: RoutineState): number | undefined => {
      const { dailyBudgetUsd, maxBudgetUsd } = r.routine
      const daily = dailyBudgetUsd === undefined ? undefined : Math.max(0, dailyBudgetUsd - r.spentUsd)
      if (daily === undefined) return maxBudgetUsd
      return maxBudgetUsd === undefined ? daily : Math.min(daily, maxBudgetUsd)
    }

    // ------------------------------------------------------------------------------------ firing
    const act = (
      target: Target,
      fireId: string,
      trigger: FireTrigger,
      budget: number | undefined,
      acc: { costUsd: number; readonly runs: Array<string>; result: Partial<FireOutcome> }
    ): Effect.Effect<void, Failure> => {
      /** What is left of this fire's budget. */
      const remaining = () => (budget === undefined ? undefined : budget - acc.costUsd)
      const bounded = () => {
        const left = remaining()
        return left === undefined ? {} : { maxBudgetUsd: Math.max(left, 0.0001) }
      }
      const spend = <A extends { readonly costUsd: number }>(effect: Effect.Effect<A, Failure>) =>
        effect.pipe(
          Effect.tap((a) => Effect.sync(() => (acc.costUsd += a.costUsd))),
          Effect.tapError((e) => Effect.sync(() => (acc.costUsd += costOf(e))))
        )

      const checkTemplate = (routine: string, name: string) =>
        Effect.flatMap(fleet.template(name), (spec): Effect.Effect<Spec, Failure> => {
          if (spec === undefined) {
            return new InvalidSpec({ path: "template", reason: `no run template named "${name}"` })
          }
          if (Permission.canWrite(spec.permission) && (spec.worktree === undefined || spec.worktree === false)) {
            return new RoutineRefused({
              name: routine,
              reason: `run template "${name}" can write but has no worktree: write work must be worktree-isolated`
            })
          }
          return Effect.succeed(spec)
        })

      const scan = (label: string | null, params: ScanParams) =>
        Effect.gen(function*() {
          const name = runName(label ?? "scan")
          acc.runs.push(name)
          const result = yield* spend(fleet.run({
            name,
            prompt: params.prompt ?? defaultScanPrompt(params.focus),
            appendSystemPrompt: scanInstructions(params.focus),
            permission: "read_only",
            jsonSchema: TASKS_JSON_SCHEMA,
            ...(params.cwd === undefined ? {} : { cwd: params.cwd }),
            ...(params.model === undefined ? {} : { model: params.model }),
            ...(params.env === undefined ? {} : { env: params.env }),
            ...(params.maxTurns === undefined ? {} : { maxTurns: params.maxTurns }),
            ...(params.timeoutMs === undefined ? {} : { timeout: Duration.millis(params.timeoutMs) }),
            ...bounded()
          }))
          const decoded = decodeAt(TaskList, result.structuredOutput ?? null, "output", "ignore")
          if (Either.isLeft(decoded)) {
            return yield* new InvalidScanOutput({
              name,
              reason: decoded.left.map((i) => `${i.path}: ${i.message}`).join("; ")
            })
          }
          const entry = yield* record(ReportKinds.findings, {
            routine: label,
            fireId,
            run: name,
            tasks: decoded.right.tasks
          })
          const tasks = tasksOf(entry)
          acc.result = { ...acc.result, tasks }
          return { tasks, seq: entry.seq }
        })

      const dispatch = (routine: DispatchRoutine) =>
        Effect.gen(function*() {
          const template = yield* checkTemplate(routine.name, routine.template)
          const { seq, tasks } = yield* scan(routine.name, routine)
          const deferred: Array<{ title: string; key: string; reason: string }> = []
          const chosen = yield* dispatchLock(Effect.gen(function*() {
            const log = yield* schedulerEntries(reports, [
              ReportKinds.findings,
              ReportKinds.dispatch,
              ReportKinds.fireResult
            ])
            const found = new Set<string>()
            const dispatched = new Set<string>()
            const left = new Set<string>()
            for (const entry of log) {
              const data = entry.data as Record<string, unknown>
              if (entry.kind === ReportKinds.findings && entry.seq < seq) {
                tasksOf(entry).forEach((t) => found.add(t.key))
              }
              if (entry.kind === ReportKinds.dispatch && typeof data["key"] === "string") dispatched.add(data["key"])
              if (entry.kind === ReportKinds.fireResult && Array.isArray(data["deferred"])) {
                for (const d of data["deferred"]) if (typeof d?.key === "string") left.add(d.key)
              }
            }
            const seen = new Set<string>()
            const fresh = tasks.filter((t) => {
              if (seen.has(t.key)) return false
              seen.add(t.key)
              return !dispatched.has(t.key) && !claimed.has(t.key) && (!found.has(t.key) || left.has(t.key))
            })
            const chosen = fresh.slice(0, routine.maxDispatch)
            for (const t of fresh.slice(routine.maxDispatch)) {
              deferred.push({ title: t.title, key: t.key, reason: `maxDispatch (${routine.maxDispatch})` })
            }
            chosen.forEach((t) => claimed.add(t.key))
            return chosen
          }))
          const outcomes: Array<DispatchOutcome> = []
          for (const [i, task] of chosen.entries()) {
            const left = remaining()
            const paused = trigger === "schedule" && (yield* Ref.get(state)).mode === "paused"
            if (paused || (left !== undefined && left <= 0.0001)) {
              for (const t of chosen.slice(i)) {
                claimed.delete(t.key)
                deferred.push({ title: t.title, key: t.key, reason: paused ? "paused" : "budget" })
              }
              break
            }
            const name = runName(routine.template)
            acc.runs.push(name)
            yield* record(ReportKinds.dispatch, {
              routine: routine.name,
              fireId,
              key: task.key,
              title: task.title,
              run: name
            })
            const before = acc.costUsd
            const exit = yield* Effect.exit(spend(fleet.run({
              name,
              template: routine.template,
              prompt: dispatchPrompt(template.prompt, task),
              ...bounded()
            })))
            claimed.delete(task.key)
            outcomes.push({
              title: task.title,
              key: task.key,
              run: name,
              ok: Exit.isSuccess(exit),
              costUsd: acc.costUsd - before,
              ...(Exit.isFailure(exit) ? { error: failureOf(exit.cause) } : {})
            })
          }
          acc.result = { ...acc.result, dispatched: outcomes, deferred }
          const failed = outcomes.find((o) => !o.ok)
          if (failed !== undefined && outcomes.every((o) => !o.ok)) {
            return yield* Effect.fail<Failure>(failed.error!)
          }
        })

      if (target._tag === "Scan") return Effect.asVoid(scan(null, target.options))
      const routine = target.routine
      switch (routine.action) {
        case "scan":
          return Effect.asVoid(scan(routine.name, routine))
        case "dispatch_scan":
          return dispatch(routine)
        case "run":
          return Effect.gen(function*() {
            if (routine.template !== undefined) yield* checkTemplate(routine.name, routine.template)
            const name = runName(routine.name)
            acc.runs.push(name)
            const result = yield* spend(fleet.run({
              name,
              ...(routine.template === undefined ? {} : { template: routine.template }),
              ...(routine.prompt === undefined ? {} : { prompt: routine.prompt }),
              ...(routine.cwd === undefined ? {} : { cwd: routine.cwd }),
              ...(routine.model === undefined ? {} : { model: routine.model }),
              ...(routine.env === undefined ? {} : { env: routine.env }),
              ...(routine.permission === undefined ? {} : { permission: routine.permission }),
              ...(routine.worktree === undefined ? {} : { worktree: routine.worktree }),
              ...(routine.maxTurns === undefined ? {} : { maxTurns: routine.maxTurns }),
              ...(routine.timeoutMs === undefined ? {} : { timeout: Duration.millis(routine.timeoutMs) }),
              ...bounded()
            }))
            acc.result = { ...acc.result, text: result.text }
          })
        case "prompt":
          return Effect.gen(function*() {
            const turnId = yield* fleet.prompt(
              routine.agent,
              routine.prompt,
              routine.timeoutMs === undefined ? {} : { timeout: Duration.millis(routine.timeoutMs) }
            )
            acc.result = { ...acc.result, turnId }
            const result = yield* spend(fleet.wait(routine.agent, turnId))
            acc.result = { ...acc.result, text: result.text }
          })
      }
    }

    const failureOf = (cause: Cause.Cause<Failure>): ErrorView => {
      const failure = Cause.failureOption(cause)
      if (failure._tag === "Some") return errorView(failure.value)
      if (Cause.isInterruptedOnly(cause)) return { _tag: "FireInterrupted", message: "the fire was interrupted" }
      return { _tag: "Defect", message: Cause.pretty(cause) }
    }

    /** Ends a fire: frees the routine, adds its spend, and pauses it when the spend crosses the daily rail. */
    const finish = (target: Target, outcome: FireOutcome) =>
      locked(Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const day = S.localDay(zone, now)
        const s = yield* Ref.get(state)
        let crossed: { spentUsd: number; dailyBudgetUsd: number } | undefined
        if (target._tag === "Routine") {
          const r = s.routines.get(target.routine.name)!
          const spentUsd = (r.spentDay === day ? r.spentUsd : 0) + outcome.costUsd
          const railed = r.spentDay === day && r.railed
          const daily = r.routine.dailyBudgetUsd
          if (daily !== undefined && !railed && spentUsd >= daily - EPSILON) {
            crossed = { spentUsd, dailyBudgetUsd: daily }
          }
          const routines = new Map(s.routines)
          routines.set(r.routine.name, {
            ...r,
            running: null,
            spentDay: day,
            spentUsd,
            railed: railed || crossed !== undefined,
            lastFire: { fireId: outcome.fireId, at: outcome.finishedAt, ok: outcome.ok, costUsd: outcome.costUsd }
          })
          yield* Ref.set(state, { ...s, routines })
        } else {
          const adhoc = new Map(s.adhoc)
          adhoc.delete(outcome.fireId)
          yield* Ref.set(state, { ...s, adhoc })
        }
        yield* record(ReportKinds.fireResult, { ...outcome, day: S.formatDate(day) })
        if (crossed !== undefined) {
          yield* record(ReportKinds.rail, {
            routine: outcome.routine,
            action: "paused",
            ...crossed,
            day: S.formatDate(day),
            until: S.iso(S.dayStart(zone, day + 1))
          })
        }
      })).pipe(Effect.zipRight(Queue.offer(poke, undefined)))

    /** Starts a fire in the background (call it holding the lock) and returns where its outcome lands. */
    const startFire = (target: Target, trigger: FireTrigger, now: number) =>
      Effect.gen(function*() {
        const fireId = `fire-${hex(4)}`
        const routineName = target._tag === "Routine" ? target.routine.name : null
        const action: RoutineAction = target._tag === "Routine" ? target.routine.action : "scan"
        const running: Running = { fireId, routine: routineName, action, trigger, since: now }
        const s = yield* Ref.get(state)
        let budget: number | undefined
        if (target._tag === "Routine") {
          const r = s.routines.get(target.routine.name)!
          budget = budgetOf(r)
          const routines = new Map(s.routines)
          routines.set(r.routine.name, { ...r, running, workedMs: 0 })
          yield* Ref.set(state, { ...s, routines })
        } else {
          budget = target.options.maxBudgetUsd
          const adhoc = new Map(s.adhoc)
          adhoc.set(fireId, running)
          yield* Ref.set(state, { ...s, adhoc })
        }
        const done = yield* Deferred.make<FireOutcome>()
        const acc = { costUsd: 0, runs: [] as Array<string>, result: {} as Partial<FireOutcome> }
        const conclude = (exit: Exit.Exit<void, Failure>) =>
          Effect.gen(function*() {
            const finishedAt = yield* Clock.currentTimeMillis
            const outcome: FireOutcome = {
              fireId,
              routine: routineName,
              action,
              trigger,
              startedAt: S.iso(now),
              finishedAt: S.iso(finishedAt),
              ok: Exit.isSuccess(exit),
              costUsd: acc.costUsd,
              ...(Exit.isFailure(exit) ? { error: failureOf(exit.cause) } : {}),
              runs: acc.runs,
              ...acc.result
            }
            yield* finish(target, outcome)
            yield* Deferred.succeed(done, outcome)
          })
        const body = Effect.gen(function*() {
          yield* record(ReportKinds.fire, {
            fireId,
            routine: routineName,
            action,
            trigger,
            localTime: S.formatLocal(zone, now),
            ...(budget === undefined ? {} : { budgetUsd: budget })
          })
          return yield* act(target, fireId, trigger, budget, acc)
        })
        yield* FiberSet.run(
          fires,
          body.pipe(
            Effect.onExit(conclude),
            Effect.withSpan("scheduler.fire", {
              attributes: { "flotta.scheduler.fireId": fireId, "flotta.scheduler.action": action, trigger }
            }),
            Effect.ignore
          )
        )
        return { fireId, done }
      })

    // ------------------------------------------------------------------------------------ the heartbeat
    /** Brings the state up to `now`: counts working time, expires overrides, records changes, fires. */
    const evaluate = (now: number) =>
      Effect.gen(function*() {
        const s = yield* Ref.get(state)
        const prev = Math.min(s.lastEval, now)
        const calendar = calendarOf(s)
        const worked = s.mode === "working" ? S.workingMs(calendar, prev, now) : 0
        const day = S.localDay(zone, now)
        const events: Array<Effect.Effect<unknown>> = []
        const due: Array<Routine> = []
        const routines = new Map<string, RoutineState>()
        for (const [name, r0] of s.routines) {
          let r = r0
          if (r.spentDay !== day) {
            if (r.railed) {
              events.push(record(ReportKinds.rail, { routine: name, action: "lifted", reason: "a new local day" }))
            }
            r = { ...r, spentDay: day, spentUsd: 0, railed: false }
          }
          const every = r.routine.every
          let firesAt: number | undefined
          if ("intervalMs" in every) {
            r = { ...r, workedMs: r.workedMs + worked }
            if (r.workedMs >= every.intervalMs) {
              firesAt = now
              r = { ...r, workedMs: 0 }
            }
          } else {
            const c = crossing(every.dailyAt, prev, now)
            if (c !== undefined && isWorkDay(s, c.day)) firesAt = c.instant
          }
          if (firesAt !== undefined) {
            const skip = s.mode === "paused"
              ? "paused"
              : inStop(s, firesAt)
              ? "stopped for today"
              : r.railed
              ? "daily budget rail"
              : r.running !== null
              ? "previous fire still running"
              : undefined
            if (skip === undefined) due.push(r.routine)
            else {
              events.push(record(ReportKinds.skip, {
                routine: name,
                reason: skip,
                trigger: "schedule",
                localTime: S.formatLocal(zone, firesAt),
                ...(r.running === null ? {} : { running: r.running.fireId })
              }))
            }
          }
          routines.set(name, r)
        }
        const expired = s.overrides.filter((o) => o.until <= now)
        const next: State = {
          ...s,
          routines,
          overrides: s.overrides.filter((o) => o.until > now),
          workDays: new Set([...s.workDays].filter((d) => d >= day - 1)),
          lastEval: now
        }
        const isWorking = workingNow(next, now)
        yield* Ref.set(state, { ...next, working: isWorking })
        for (const o of expired) {
          yield* record(ReportKinds.override, { action: o.kind, phase: "expired", ...overrideView(o) })
        }
        yield* Effect.all(events, { discard: true })
        if (isWorking !== s.working) {
          yield* record(isWorking ? ReportKinds.wake : ReportKinds.stop, {
            reason: reasonAt(next, now),
            localTime: S.formatLocal(zone, now)
          })
        }
        for (const routine of due) yield* startFire({ _tag: "Routine", routine }, "schedule", now)
        return nextWake(yield* Ref.get(state), now)
      })

    /** The next instant anything can change. */
    const nextWake = (s: State, now: number): number => {
      const candidates = [now + tickMs, nextMidnight(now)]
      const calendar = calendarOf(s)
      const edge = S.nextEdge(calendar, now)
      if (edge !== undefined) candidates.push(edge)
      for (const o of s.overrides) if (o.until > now) candidates.push(o.until)
      const working = workingNow(s, now)
      for (const r of s.routines.values()) {
        const every = r.routine.every
        if ("dailyAt" in every) {
          const today = S.localDay(zone, now)
          const first = [0, 1, 2].map((d) => dailyInstant(every.dailyAt, today + d)).find((t) => t > now)
          if (first !== undefined) candidates.push(first)
        } else if (working) candidates.push(now + Math.max(1, every.intervalMs - r.workedMs))
      }
      return Math.min(...candidates)
    }

    const heartbeat = Effect.gen(function*() {
      while (true) {
        const now = yield* Clock.currentTimeMillis
        const wakeAt = yield* locked(evaluate(now)).pipe(
          Effect.catchAllCause((cause) =>
            Effect.logError("scheduler heartbeat failed", cause).pipe(Effect.as(now + tickMs))
          )
        )
        const delay = Math.max(1, Math.min(wakeAt - now, tickMs))
        yield* Effect.race(Effect.sleep(Duration.millis(delay)), Queue.take(poke))
      }
    })

    // ------------------------------------------------------------------------------------ steering
    /** Runs a steering change at `now` (evaluating first, so cadences count up to it), then wakes the heartbeat. */
    const steer = <A, E>(change: (now: number) => Effect.Effect<A, E>) =>
      locked(Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        yield* evaluate(now)
        const result = yield* change(now)
        yield* evaluate(now)
        return result
      })).pipe(Effect.tap(() => Queue.offer(poke, undefined)))

    const addOverride = (o: OverrideState) =>
      Ref.update(state, (s) => ({ ...s, overrides: [...s.overrides, o] })).pipe(
        Effect.zipRight(record(ReportKinds.override, { action: o.kind, phase: "start", ...overrideView(o) })),
        Effect.as(overrideView(o))
      )

    const cancelOverrides = (kind: Override["kind"], now: number) =>
      Effect.gen(function*() {
        const s = yield* Ref.get(state)
        const cancelled = s.overrides.filter((o) => o.kind === kind && o.until > now)
        yield* Ref.set(state, { ...s, overrides: s.overrides.filter((o) => !cancelled.includes(o)) })
        for (const o of cancelled) {
          yield* record(ReportKinds.override, { action: o.kind, phase: "cancelled", ...overrideView(o) })
        }
      })

    /** The end of the working stretch `now` is in, or `now` when it is not working time. */
    const stretchEnd = (s: State, now: number) => {
      const first = S.working(calendarOf(s), now, now + 8 * S.DAY)[0]
      return first !== undefined && first.from <= now ? first.until : now
    }

    const status: Effect.Effect<SchedulerStatus> = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const s = yield* Ref.get(state)
      const day = S.localDay(zone, now)
      const live = { ...s, overrides: s.overrides.filter((o) => o.until > now) }
      const windows: Array<WindowView> = S.windowsOn(zone, hours, day).map((w) => ({
        ...S.formatWindow(w.window),
        from: S.iso(w.from),
        until: S.iso(w.until),
        source: "hours" as const
      }))
      for (const o of live.overrides) {
        if (
          o.kind === "stop_for_today" || S.localDay(zone, o.from) > day || S.localDay(zone, o.until - 1) < day
        ) continue
        windows.push({
          start: S.formatClock(Math.round((S.toLocal(zone, o.from) - day * S.DAY) / S.MINUTE)),
          end: S.formatClock(Math.min(24 * 60, Math.round((S.toLocal(zone, o.until) - day * S.DAY) / S.MINUTE))),
          from: S.iso(o.from),
          until: S.iso(o.until),
          source: o.kind === "keep_going" ? "keep_going" : "work_on"
        })
      }
      const edge = S.nextEdge(calendarOf(live), now, 7 * S.DAY)
      const pending = s.mode === "working" ? S.workingMs(calendarOf(s), Math.min(s.lastEval, now), now) : 0
      return {
        mode: s.mode,
        working: workingNow(live, now),
        reason: reasonAt(live, now),
        timezone: S.describeZone(zone),
        now: S.iso(now),
        localTime: S.formatLocal(zone, now),
        today: { date: S.formatDate(day), weekday: S.weekdayOf(day), windows },
        overrides: live.overrides.map(overrideView),
        running: [
          ...[...s.routines.values()].flatMap((r) => (r.running === null ? [] : [runningView(r.running)])),
          ...[...s.adhoc.values()].map(runningView)
        ],
        routines: [...s.routines.values()].map((r0): RoutineStatus => {
          // Working time since the heartbeat last counted it.
          const r = { ...r0, workedMs: r0.workedMs + pending }
          const railed = r.railed && r.spentDay === day
          const next = nextFire(live, { ...r, railed }, now)
          return {
            name: r.routine.name,
            action: r.routine.action,
            every: r.routine.every,
            state: r.running !== null ? "running" : railed ? "railed" : "idle",
            nextFireAt: next === undefined ? null : S.iso(next),
            ...("intervalMs" in r.routine.every ? { workedMs: r.workedMs } : {}),
            spentTodayUsd: r.spentDay === day ? r.spentUsd : 0,
            maxBudgetUsd: r.routine.maxBudgetUsd ?? null,
            dailyBudgetUsd: r.routine.dailyBudgetUsd ?? null,
            railedUntil: railed ? S.iso(nextMidnight(now)) : null,
            lastFire: r.lastFire
          }
        }),
        rejected: rejected.map(({ message, path }) => ({ path, message })),
        nextChange: edge === undefined || s.mode === "paused" ? null : S.iso(edge)
      } satisfies SchedulerStatus
    })

    const keepGoing = (minutes: number) =>
      !(Number.isInteger(minutes) && minutes > 0 && minutes <= 24 * 60)
        ? Effect.fail(new InvalidSchedule({ field: "minutes", reason: "a whole number of minutes from 1 to 1440" }))
        : steer((now) =>
          Effect.gen(function*() {
            yield* cancelOverrides("stop_for_today", now)
            const s = yield* Ref.get(state)
            // Stacks on a keep-going already running: the new one starts where the current stretch ends.
            const until = stretchEnd(s, now) + minutes * S.MINUTE
            yield* cancelOverrides("keep_going", now)
            return yield* addOverride({ id: `override-${hex(4)}`, kind: "keep_going", from: now, until, minutes })
          })
        )

    /** A one-off shift's default window: the span of the first working weekday's windows, else 09:00-17:00. */
    const defaultWindow = (): S.Window => {
      for (const weekday of ["mon", "tue", "wed", "thu", "fri", "sat", "sun"] as const) {
        const windows = hours[weekday] ?? []
        if (windows.length === 0) continue
        if (windows.some((w) => w.end <= w.start)) return windows[0]!
        return { start: Math.min(...windows.map((w) => w.start)), end: Math.max(...windows.map((w) => w.end)) }
      }
      return { start: 9 * 60, end: 17 * 60 }
    }

    const workOnDay = (date: string, windowInput: WindowInput | undefined) =>
      Effect.gen(function*() {
        const day = S.parseDate(date)
        if (day === undefined) {
          return yield* new InvalidSchedule({ field: "date", reason: `"${date}" is not a date (YYYY-MM-DD)` })
        }
        let window = defaultWindow()
        if (windowInput !== undefined) {
          const parsed = S.parseWindow(windowInput)
          if (typeof parsed === "string") return yield* new InvalidSchedule({ field: "window", reason: parsed })
          window = parsed
        }
        return yield* steer((now) =>
          Effect.gen(function*() {
            const today = S.localDay(zone, now)
            if (day < today) {
              return yield* new InvalidSchedule({
                field: "date",
                reason: `${date} is in the past (today is ${S.formatDate(today)})`
              })
            }
            if (day > today + 366) {
              return yield* new InvalidSchedule({ field: "date", reason: `${date} is more than a year ahead` })
            }
            const span = S.windowOn(zone, day, window)
            if (span.until <= now) {
              const { end, start } = S.formatWindow(window)
              return yield* new InvalidSchedule({
                field: "window",
                reason: `the ${start}-${end} window on ${date} is already over: keepGoing(minutes) works from now`
              })
            }
            yield* Ref.update(state, (s) => ({ ...s, workDays: new Set([...s.workDays, day]) }))
            return yield* addOverride({
              id: `override-${hex(4)}`,
              kind: "work_on",
              from: span.from,
              until: span.until,
              date: day,
              window
            })
          })
        )
      })

    const workOn = (date: string, window?: WindowInput) => workOnDay(date, window)

    const workToday = (window?: WindowInput) =>
      Clock.currentTimeMillis.pipe(
        Effect.flatMap((now) => workOnDay(S.formatDate(S.localDay(zone, now)), window))
      )

    const pause = steer(() =>
      Effect.gen(function*() {
        const s = yield* Ref.get(state)
        if (s.mode === "paused") return
        yield* Ref.set(state, { ...s, mode: "paused" as const })
        yield* record(ReportKinds.override, { action: "pause", phase: "start" })
      })
    ).pipe(Effect.zipRight(status))

    const resume = steer((now) =>
      Effect.gen(function*() {
        yield* cancelOverrides("stop_for_today", now)
        const s = yield* Ref.get(state)
        const day = S.localDay(zone, now)
        const routines = new Map(s.routines)
        const resetRails: Array<string> = []
        for (const [name, r] of s.routines) {
          if (!r.railed) continue
          resetRails.push(name)
          routines.set(name, { ...r, railed: false, spentUsd: 0, spentDay: day })
        }
        yield* Ref.set(state, { ...s, mode: "working" as const, routines })
        yield* record(ReportKinds.override, {
          action: "resume",
          phase: "start",
          wasPaused: s.mode === "paused",
          resetRails
        })
        for (const name of resetRails) {
          yield* record(ReportKinds.rail, { routine: name, action: "lifted", reason: "resume" })
        }
      })
    ).pipe(Effect.zipRight(status))

    const stopForToday = steer((now) =>
      Effect.gen(function*() {
        yield* cancelOverrides("keep_going", now)
        const s = yield* Ref.get(state)
        const until = Math.max(nextMidnight(now), stretchEnd(s, now))
        return yield* addOverride({ id: `override-${hex(4)}`, kind: "stop_for_today", from: now, until })
      })
    )

    const runRoutine = (name: string) =>
      steer((now) =>
        Effect.gen(function*() {
          const s = yield* Ref.get(state)
          const r = s.routines.get(name)
          if (r === undefined) return yield* new RoutineNotFound({ name, known: [...s.routines.keys()] })
          if (r.running !== null) {
            yield* record(ReportKinds.skip, {
              routine: name,
              reason: "previous fire still running",
              trigger: "manual",
              localTime: S.formatLocal(zone, now),
              running: r.running.fireId
            })
            return yield* new RoutineBusy({ name, fireId: r.running.fireId, since: S.iso(r.running.since) })
          }
          if (r.railed) {
            yield* record(ReportKinds.skip, {
              routine: name,
              reason: "daily budget rail",
              trigger: "manual",
              localTime: S.formatLocal(zone, now)
            })
            return yield* new RoutineRailed({
              name,
              spentUsd: r.spentUsd,
              dailyBudgetUsd: r.routine.dailyBudgetUsd!,
              until: S.iso(nextMidnight(now))
            })
          }
          return yield* startFire({ _tag: "Routine", routine: r.routine }, "manual", now)
        })
      ).pipe(Effect.flatMap(({ done }) => Deferred.await(done)))

    const scanNow = (input: ScanOptions) =>
      Effect.gen(function*() {
        const decoded = decodeAt(ScanOptionsSchema, input ?? {}, "scanNow")
        if (Either.isLeft(decoded)) {
          return yield* new InvalidSpec({
            path: decoded.left[0]!.path,
            reason: decoded.left.map((i) => `${i.path}: ${i.message}`).join("; ")
          })
        }
        const { done } = yield* steer((now) => startFire({ _tag: "Scan", options: decoded.right }, "manual", now))
        return yield* Deferred.await(done)
      })

    // ------------------------------------------------------------------------------------ start
    yield* record(ReportKinds.started, {
      mode: start,
      timezone: S.describeZone(zone),
      localTime: S.formatLocal(zone, bootAt),
      routines: options.routines.map((r) => r.name),
      rejected: rejected.map(({ message, path }) => ({ path, message })),
      spentToday: Object.fromEntries(
        [...initialRoutines.values()].filter((r) => r.spentUsd > 0).map((r) => [r.routine.name, r.spentUsd])
      ),
      railed: [...initialRoutines.values()].filter((r) => r.railed).map((r) => r.routine.name)
    })
    for (const r of rejected) yield* Effect.logWarning(`routine skipped: ${r.path}: ${r.message}`)
    yield* locked(evaluate(bootAt))
    yield* Effect.forkScoped(heartbeat)
    yield* Effect.addFinalizer(() =>
      Clock.currentTimeMillis.pipe(
        Effect.flatMap((now) =>
          record(ReportKinds.stop, { reason: "the scheduler shut down", localTime: S.formatLocal(zone, now) })
        ),
        Effect.whenEffect(Ref.get(state).pipe(Effect.map((s) => s.working)))
      )
    )

    return {
      status,
      keepGoing: (minutes) => keepGoing(minutes).pipe(Effect.withSpan("Scheduler.keepGoing")),
      workToday: (window) => workToday(window).pipe(Effect.withSpan("Scheduler.workToday")),
      workOn: (date, window) => workOn(date, window).pipe(Effect.withSpan("Scheduler.workOn")),
      pause: pause.pipe(Effect.withSpan("Scheduler.pause")),
      resume: resume.pipe(Effect.withSpan("Scheduler.resume")),
      stopForToday: stopForToday.pipe(Effect.withSpan("Scheduler.stopForToday")),
      runRoutine: (name) => runRoutine(name).pipe(Effect.withSpan("Scheduler.runRoutine", { attributes: { name } })),
      scanNow: (options) => scanNow(options).pipe(Effect.withSpan("Scheduler.scanNow")),
      findings: (query: FindingsQuery = {}) => readFindings(reports, query)
    } satisfies Steering
  })

/**
 * The running scheduler: every steering operation and `findings()`. Built over the engine (`Flotta`,
 * `ReportLog`); `Scheduler.layer(config)` is `Layer.empty` when the config has no schedule, so no timer runs.
 */
export class Scheduler extends Effect.Service<Scheduler>()("@flotta/scheduler/Scheduler", {
  scoped: (options: SchedulerOptions) =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const reports = yield* ReportLog
      return yield* make(options, { fleet: fromFlotta(fleet), reports })
    })
}) {
  /** The scheduler for a decoded `schedule` section, or nothing at all (`Layer.empty`) when there is none. */
  static layer(options: SchedulerOptions): Layer.Layer<Scheduler, never, Flotta | ReportLog>
  static layer(options: SchedulerOptions | undefined): Layer.Layer<never, never, Flotta | ReportLog>
  static layer(options: SchedulerOptions | undefined) {
    return options === undefined ? Layer.empty : Scheduler.Default(options)
  }

  /** The scheduler when one runs in this context, else `SchedulerNotEnabled`: how optional callers reach it. */
  static readonly enabled: Effect.Effect<Scheduler, SchedulerNotEnabled> = Effect.flatMap(
    Effect.serviceOption(Scheduler),
    Option.match({ onNone: () => new SchedulerNotEnabled(), onSome: Effect.succeed })
  )
}
