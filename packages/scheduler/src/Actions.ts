/**
 * What a fire does, by action: `scan` (a read-only run that reports tasks), `dispatch_scan` (a scan, then a
 * run of a template for each task not seen before), `run` and `prompt`; and the budget each fire gets. All of
 * it goes through the fleet's public operations (`FleetOps`), so a fire is what a caller could do by hand.
 * A triggered fire's text (what the event says) goes into the prompt of the run, the turn or the scan, cut to
 * 16 KiB: in place of the prompt's `{{event}}`, or after the prompt and a blank line. Fires with no text (the
 * schedule's, the manual ones) leave the prompt as it is.
 */
import type { TurnResult } from "@flotta/core/Agent"
import type { Labels } from "@flotta/core/AgentOptions"
import { decodeAt, exact } from "@flotta/core/Decode"
import { InvalidSpec } from "@flotta/core/Errors"
import * as Permission from "@flotta/core/Permission"
import * as ReportEvent from "@flotta/core/ReportEvent"
import type { ReportLog } from "@flotta/core/ReportLog"
import type { RunOptions, RunResult } from "@flotta/core/Run"
import type { Spec } from "@flotta/core/Spec"
import { Cause, Duration, Effect, Either, Exit, JSONSchema, Option, Schema, Struct } from "effect"
import { InvalidScanOutput, RoutineRefused } from "./Errors.js"
import { runName } from "./internal/ids.js"
import type { Recorder } from "./internal/record.js"
import type { Failure, RoutineState, Target } from "./internal/state.js"
import type { DispatchRoutine, ScanParams } from "./Routine.js"
import * as Events from "./SchedulerEvents.js"
import { Priority } from "./SchedulerViews.js"
import type { DispatchOutcome, ErrorView, FireOutcome, FireTrigger, Task } from "./SchedulerViews.js"
import { decodeFindings, normalizeTitle, ReportKinds, schedulerEntries, tasksOf } from "./Steering.js"

const decodeDispatch = ReportEvent.decodeAs(Events.dispatch)
const decodeFireResult = ReportEvent.decodeAs(Events.fireResult)

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

// ---------------------------------------------------------------------------------------------- scans

/** What a scan must return. */
const TaskList = Schema.Struct({
  tasks: Schema.Array(Schema.Struct({
    title: Schema.String.pipe(
      Schema.filter((t) => normalizeTitle(t).length > 0 || "a title with some words in it", { jsonSchema: {} })
    ).annotations({ description: "One line naming the task" }),
    detail: Schema.String.annotations({
      description: "What to do and where, enough to start without rescanning"
    }),
    priority: exact(Priority)
  }))
})

/** What a scan must return, as the JSON Schema handed to the CLI. */
export const TASKS_JSON_SCHEMA: Record<string, unknown> = (() => {
  const { $schema: _, ...schema } = JSONSchema.make(TaskList)
  return schema
})()

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

/** Where and how a fire's run runs, as run options: the fields the routine (or `scanNow`) sets. */
const placement = (params: ScanParams) => ({
  ...Struct.pick(params, "cwd", "model", "env", "maxTurns"),
  ...(params.timeoutMs === undefined ? {} : { timeout: Duration.millis(params.timeoutMs) })
})

/** `scanNow`'s options, checked before anything runs. */
export const ScanOptionsSchema = Schema.Struct({
  focus: exact(Schema.String.pipe(Schema.minLength(1))),
  prompt: exact(Schema.String.pipe(Schema.minLength(1))),
  cwd: exact(Schema.String.pipe(Schema.minLength(1))),
  model: exact(Schema.String.pipe(Schema.minLength(1))),
  env: exact(Schema.Record({ key: Schema.String, value: Schema.String })),
  maxBudgetUsd: exact(Schema.Number.pipe(Schema.positive())),
  maxTurns: exact(Schema.Number.pipe(Schema.int(), Schema.positive())),
  timeoutMs: exact(Schema.Number.pipe(Schema.int(), Schema.positive()))
})

// ---------------------------------------------------------------------------------------------- a trigger's text

/** Where a routine's prompt wants a trigger's text (what the event says). */
export const EVENT_PLACEHOLDER = "{{event}}"

/** The most of an event's text a prompt gets, in bytes of UTF-8. */
export const MAX_EVENT_BYTES = 16 * 1024

/** The text cut to at most `max` bytes of UTF-8 between two characters, with a note when it was cut. */
export const capText = (text: string, max = MAX_EVENT_BYTES): string => {
  const bytes = new TextEncoder().encode(text)
  if (bytes.length <= max) return text
  let end = max
  // The byte after the cut continues a character (10xxxxxx): cut before that character starts instead.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--
  return `${new TextDecoder().decode(bytes.subarray(0, end))}\n[the event's text was cut: the first ${end} of its ` +
    `${bytes.length} bytes are above]`
}

/** The prompt with the event's text in place of `{{event}}`, or after it and a blank line; alone without text. */
export const withEvent = (prompt: string, text: string | undefined): string =>
  text === undefined
    ? prompt
    : prompt.includes(EVENT_PLACEHOLDER)
    ? prompt.replaceAll(EVENT_PLACEHOLDER, () => text)
    : `${prompt}\n\n${text}`

// ---------------------------------------------------------------------------------------------- budgets

/** Spend is summed in floating point (0.1 + 0.2 is 0.30000000000000004): a budget counts as reached this close. */
export const EPSILON = 1e-9

/** The labels of what a routine starts: its own, and `routine: NAME`, which its spend is grouped by. */
interface Owner {
  readonly name: string
  readonly labels?: Labels | undefined
}

const labelsOf = (routine: Owner): Labels => ({
  ...routine.labels,
  routine: routine.name
})

/** A routine's budget for one fire: its `maxBudgetUsd`, cut to what its daily budget has left. */
export const budgetOf = (r: RoutineState): number | undefined => {
  const { dailyBudgetUsd, maxBudgetUsd } = r.routine
  const daily = dailyBudgetUsd === undefined ? undefined : Math.max(0, dailyBudgetUsd - r.spentUsd)
  if (daily === undefined) return maxBudgetUsd
  return maxBudgetUsd === undefined ? daily : Math.min(daily, maxBudgetUsd)
}

/** What a failed run or turn had spent, when its error says (BudgetExceeded, MaxTurnsReached, TurnTimeout). */
const costOf = (error: unknown): number =>
  typeof error === "object" && error !== null && "costUsd" in error && typeof error.costUsd === "number"
    ? error.costUsd
    : 0

// ---------------------------------------------------------------------------------------------- acting

/** What a fire has spent and produced so far; it becomes the fire's outcome, whether it succeeds or not. */
export interface Tally {
  costUsd: number
  readonly runs: Array<string>
  result: Partial<FireOutcome>
}

export const failureView = (cause: Cause.Cause<Failure>): ErrorView => {
  const failure = Cause.failureOption(cause)
  if (failure._tag === "Some") return { _tag: failure.value._tag, message: failure.value.message }
  if (Cause.isInterruptedOnly(cause)) return { _tag: "FireInterrupted", message: "the fire was interrupted" }
  return { _tag: "Defect", message: Cause.pretty(cause) }
}

export interface Actions {
  /** Does what the target's action says, adding what it spends and produces to `tally`. */
  readonly perform: (
    target: Target,
    fireId: string,
    trigger: FireTrigger,
    budget: number | undefined,
    tally: Tally
  ) => Effect.Effect<void, Failure>
}

export const make = Effect.fn("Actions.make")(function*(deps: {
  readonly fleet: FleetOps
  readonly reports: Pick<ReportLog, "reports">
  readonly record: Recorder
  /** Whether the scheduler is paused now: a scheduled dispatch starts no more runs once it is. */
  readonly paused: Effect.Effect<boolean>
}) {
  const { fleet, record, reports } = deps
  // Dispatches choose their tasks one at a time, so two fires never take the same task.
  const dispatchLock = (yield* Effect.makeSemaphore(1)).withPermits(1)
  /** Task keys a dispatch in this process has taken (the report log has the rest). */
  const claimed = new Set<string>()

  const perform: Actions["perform"] = (target, fireId, trigger, budget, tally) => {
    /** What is left of this fire's budget. */
    const remaining = () => (budget === undefined ? undefined : budget - tally.costUsd)
    const bounded = () => {
      const left = remaining()
      return left === undefined ? {} : { maxBudgetUsd: Math.max(left, 0.0001) }
    }
    // A best-of-N run answers with its winner's cost and what all its attempts spent (`totalCostUsd`).
    const spend = <A extends { readonly costUsd: number; readonly totalCostUsd?: number }>(
      effect: Effect.Effect<A, Failure>
    ) =>
      effect.pipe(
        Effect.tap((a) => Effect.sync(() => (tally.costUsd += a.totalCostUsd ?? a.costUsd))),
        Effect.tapError((e) => Effect.sync(() => (tally.costUsd += costOf(e))))
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

    /** What the event says (a trigger's fire only). */
    const text = target._tag === "Routine" ? target.text : undefined

    const scan = (owner: Owner | null, params: ScanParams) =>
      Effect.gen(function*() {
        const name = runName(owner?.name ?? "scan")
        tally.runs.push(name)
        const result = yield* spend(fleet.run({
          name,
          prompt: withEvent(params.prompt ?? defaultScanPrompt(params.focus), text),
          ...(owner === null ? {} : { labels: labelsOf(owner) }),
          appendSystemPrompt: scanInstructions(params.focus),
          permission: "read_only",
          jsonSchema: TASKS_JSON_SCHEMA,
          ...placement(params),
          ...bounded()
        }))
        const decoded = decodeAt(TaskList, result.structuredOutput ?? null, "output", "ignore")
        if (Either.isLeft(decoded)) {
          return yield* new InvalidScanOutput({
            name,
            reason: decoded.left.map((i) => `${i.path}: ${i.message}`).join("; ")
          })
        }
        const entry = yield* record(Events.findings, {
          routine: owner?.name ?? null,
          fireId,
          run: name,
          tasks: decoded.right.tasks
        })
        const tasks = tasksOf(decoded.right.tasks)
        tally.result = { ...tally.result, tasks }
        return { tasks, seq: entry.seq }
      })

    const dispatch = (routine: DispatchRoutine) =>
      Effect.gen(function*() {
        const template = yield* checkTemplate(routine.name, routine.template)
        const { seq, tasks } = yield* scan(routine, routine)
        const deferred: Array<{ title: string; key: string; reason: string }> = []
        const chosen = yield* dispatchLock(Effect.gen(function*() {
          const log = yield* schedulerEntries(reports, [
            ReportKinds.findings,
            ReportKinds.dispatch,
            ReportKinds.fireResult
          ])
          // New means: never found before this scan, or found and left over by an earlier fire; never dispatched.
          const found = new Set<string>()
          const dispatched = new Set<string>()
          const left = new Set<string>()
          for (const entry of log) {
            Option.map(decodeFindings(entry), (f) => {
              if (f.seq < seq) tasksOf(f.data.tasks).forEach((t) => found.add(t.key))
            })
            Option.map(decodeDispatch(entry), (d) => dispatched.add(d.data.key))
            Option.map(decodeFireResult(entry), (r) => r.data.deferred?.forEach((d) => left.add(d.key)))
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
        // A pause stops the schedule's dispatches, and a trigger's unless the routine may fire at any time.
        const obeysPause = trigger === "schedule" ||
          ((trigger === "webhook" || trigger === "github") && routine.triggerAnyTime !== true)
        for (const [i, task] of chosen.entries()) {
          const left = remaining()
          const paused = obeysPause && (yield* deps.paused)
          if (paused || (left !== undefined && left <= 0.0001)) {
            for (const t of chosen.slice(i)) {
              claimed.delete(t.key)
              deferred.push({ title: t.title, key: t.key, reason: paused ? "paused" : "budget" })
            }
            break
          }
          const name = runName(routine.template)
          tally.runs.push(name)
          yield* record(Events.dispatch, {
            routine: routine.name,
            fireId,
            key: task.key,
            title: task.title,
            run: name
          })
          const before = tally.costUsd
          const exit = yield* Effect.exit(spend(fleet.run({
            name,
            template: routine.template,
            prompt: dispatchPrompt(template.prompt, task),
            labels: labelsOf(routine),
            ...bounded()
          })))
          claimed.delete(task.key)
          outcomes.push({
            title: task.title,
            key: task.key,
            run: name,
            ok: Exit.isSuccess(exit),
            costUsd: tally.costUsd - before,
            ...(Exit.isFailure(exit) ? { error: failureView(exit.cause) } : {})
          })
        }
        tally.result = { ...tally.result, dispatched: outcomes, deferred }
        // The fire fails only when every dispatched run failed.
        const failed = outcomes.find((o) => !o.ok)
        if (failed !== undefined && outcomes.every((o) => !o.ok)) {
          return yield* Effect.fail<Failure>(failed.error!)
        }
      })

    if (target._tag === "Scan") return Effect.asVoid(scan(null, target.options))
    const routine = target.routine
    switch (routine.action) {
      case "scan":
        return Effect.asVoid(scan(routine, routine))
      case "dispatch_scan":
        return dispatch(routine)
      case "run":
        return Effect.gen(function*() {
          const spec = routine.template === undefined
            ? undefined
            : yield* checkTemplate(routine.name, routine.template)
          const name = runName(routine.name)
          tally.runs.push(name)
          // The event's text joins the routine's prompt, or else its template's.
          const base = routine.prompt ?? spec?.prompt
          const result = yield* spend(fleet.run({
            name,
            ...Struct.pick(routine, "template", "prompt", "permission", "worktree"),
            ...(text === undefined ? {} : { prompt: base === undefined ? text : withEvent(base, text) }),
            labels: labelsOf(routine),
            ...placement(routine),
            ...bounded()
          }))
          tally.result = { ...tally.result, text: result.text }
        })
      case "prompt":
        return Effect.gen(function*() {
          const turnId = yield* fleet.prompt(
            routine.agent,
            withEvent(routine.prompt, text),
            routine.timeoutMs === undefined ? {} : { timeout: Duration.millis(routine.timeoutMs) }
          )
          tally.result = { ...tally.result, turnId }
          const result = yield* spend(fleet.wait(routine.agent, turnId))
          tally.result = { ...tally.result, text: result.text }
        })
    }
  }

  return { perform }
})
