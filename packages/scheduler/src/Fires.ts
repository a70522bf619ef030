/**
 * A fire's life: it starts (the routine is marked running, its per-fire budget set, a `fire` entry written),
 * runs its action in the background, and ends (a `fire_result` entry, the spend added to the routine's day,
 * and the daily rail when that spend crosses the routine's daily budget). Manual fires (`runRoutine`,
 * `scanNow`) take the same path and wait for the outcome. A trigger from outside (`trigger`: a webhook's, GitHub's)
 * takes it too, past the same checks (`admit`) and within working time, and returns the fire's id at once. The
 * day's spend survives a restart: it is read back from the report log at boot.
 */
import { decodeAt } from "@flotta/core/Decode"
import { InvalidSpec } from "@flotta/core/Errors"
import * as ReportEvent from "@flotta/core/ReportEvent"
import type { ReportLog } from "@flotta/core/ReportLog"
import { Clock, Deferred, Effect, Either, Exit, FiberSet, Option, Queue, Ref } from "effect"
import type { Redacted } from "effect"
import type { Actions, Tally } from "./Actions.js"
import { budgetOf, capText, EPSILON, failureView, ScanOptionsSchema } from "./Actions.js"
import * as Calendar from "./Calendar.js"
import { RoutineBusy, RoutineNotFound, RoutineOffHours, RoutineRailed } from "./Errors.js"
import { hex } from "./internal/ids.js"
import type { Failure, RoutineState, Running, Shared, State, Steer, Target } from "./internal/state.js"
import { withRoutine } from "./internal/state.js"
import type { Routine } from "./Routine.js"
import * as Events from "./SchedulerEvents.js"
import { ReportKinds, schedulerEntries } from "./Steering.js"
import type { FireOutcome, FireTrigger, RoutineAction, ScanOptions, Steering, TriggerInput } from "./Steering.js"
import type { TimeZone } from "./WorkingHours.js"
import { dayStart, formatDate, formatLocal, iso, localDay } from "./WorkingHours.js"

export interface Fires {
  /**
   * Starts a fire in the background (call it holding the lock) and returns where its outcome lands. `detail`
   * (a trigger's facts) is kept in the `fire` entry.
   */
  readonly start: (
    target: Target,
    trigger: FireTrigger,
    now: number,
    detail?: Record<string, unknown>
  ) => Effect.Effect<{ readonly fireId: string; readonly done: Deferred.Deferred<FireOutcome> }>
}

const decodeOverride = ReportEvent.decodeAs(Events.override)
const decodeFireResult = ReportEvent.decodeAs(Events.fireResult)

/**
 * Each routine's state at boot: nothing worked yet (the boot cursor), and today's spend as the report log
 * has it since the last `resume` that lifted its rail.
 */
export const routinesAtBoot = Effect.fn("Fires.routinesAtBoot")(
  function*(reports: Pick<ReportLog, "reports">, zone: TimeZone, routines: ReadonlyArray<Routine>, bootAt: number) {
    const today = localDay(zone, bootAt)
    const history = yield* schedulerEntries(reports, [ReportKinds.fireResult, ReportKinds.override])
    const overrides = history.flatMap((entry) => Option.toArray(decodeOverride(entry)))
    const results = history.flatMap((entry) => Option.toArray(decodeFireResult(entry)))
    const spentToday = (name: string) => {
      let resetSeq = 0
      for (const entry of overrides) {
        if (entry.data.action === "resume" && entry.data.resetRails?.includes(name) === true) resetSeq = entry.seq
      }
      return results.reduce(
        (sum, entry) =>
          entry.seq > resetSeq && entry.data.routine === name && entry.data.day === formatDate(today)
            ? sum + entry.data.costUsd
            : sum,
        0
      )
    }
    const states = new Map<string, RoutineState>()
    for (const routine of routines) {
      const spentUsd = spentToday(routine.name)
      states.set(routine.name, {
        routine,
        workedMs: 0,
        running: null,
        spentDay: today,
        spentUsd,
        railed: routine.dailyBudgetUsd !== undefined && spentUsd >= routine.dailyBudgetUsd - EPSILON,
        lastFire: null,
        lastSlot: null
      })
    }
    return states
  }
)

export const make = Effect.fn("Fires.make")(function*(shared: Shared, actions: Actions) {
  const { locked, poke, record, state, zone } = shared
  // Fires run in the scheduler's scope: closing it interrupts the ones in flight.
  const fires = yield* FiberSet.make()

  /** Ends a fire: frees the routine, adds its spend, and pauses it when the spend crosses the daily rail. */
  const finish = (target: Target, outcome: FireOutcome) =>
    locked(Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const day = localDay(zone, now)
      const s = yield* Ref.get(state)
      let crossed: { spentUsd: number; dailyBudgetUsd: number } | undefined
      if (target._tag === "Routine") {
        const r = s.routines.get(target.routine.name)!
        // A fire that ends on a new day counts toward that day.
        const spentUsd = (r.spentDay === day ? r.spentUsd : 0) + outcome.costUsd
        const railed = r.spentDay === day && r.railed
        const daily = r.routine.dailyBudgetUsd
        if (daily !== undefined && !railed && spentUsd >= daily - EPSILON) {
          crossed = { spentUsd, dailyBudgetUsd: daily }
        }
        yield* Ref.set(
          state,
          withRoutine(s, {
            ...r,
            running: null,
            spentDay: day,
            spentUsd,
            railed: railed || crossed !== undefined,
            lastFire: { fireId: outcome.fireId, at: outcome.finishedAt, ok: outcome.ok, costUsd: outcome.costUsd }
          })
        )
      } else {
        const adhoc = new Map(s.adhoc)
        adhoc.delete(outcome.fireId)
        yield* Ref.set(state, { ...s, adhoc })
      }
      yield* record(Events.fireResult, { ...outcome, day: formatDate(day) })
      if (crossed !== undefined) {
        yield* record(Events.rail, {
          routine: outcome.routine,
          action: "paused",
          ...crossed,
          day: formatDate(day),
          until: iso(dayStart(zone, day + 1))
        })
      }
    })).pipe(Effect.zipRight(Queue.offer(poke, undefined)))

  const start: Fires["start"] = (target, trigger, now, detail) =>
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
        // A fire restarts the routine's interval, whatever triggered it.
        yield* Ref.set(state, withRoutine(s, { ...r, running, workedMs: 0 }))
      } else {
        budget = target.options.maxBudgetUsd
        const adhoc = new Map(s.adhoc)
        adhoc.set(fireId, running)
        yield* Ref.set(state, { ...s, adhoc })
      }
      const done = yield* Deferred.make<FireOutcome>()
      const tally: Tally = { costUsd: 0, runs: [], result: {} }
      const conclude = (exit: Exit.Exit<void, Failure>) =>
        Effect.gen(function*() {
          const finishedAt = yield* Clock.currentTimeMillis
          const outcome: FireOutcome = {
            fireId,
            routine: routineName,
            action,
            trigger,
            startedAt: iso(now),
            finishedAt: iso(finishedAt),
            ok: Exit.isSuccess(exit),
            costUsd: tally.costUsd,
            ...(Exit.isFailure(exit) ? { error: failureView(exit.cause) } : {}),
            runs: tally.runs,
            ...tally.result
          }
          yield* finish(target, outcome)
          yield* Deferred.succeed(done, outcome)
        })
      const body = Effect.gen(function*() {
        yield* record(Events.fire, {
          fireId,
          routine: routineName,
          action,
          trigger,
          localTime: formatLocal(zone, now),
          ...(budget === undefined ? {} : { budgetUsd: budget }),
          ...(detail === undefined ? {} : { detail })
        })
        return yield* actions.perform(target, fireId, trigger, budget, tally)
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

  return { start }
})

/** A routine's state by name, or RoutineNotFound naming the routines there are. */
export const findRoutine = Effect.fn("Fires.findRoutine")(function*(shared: Pick<Shared, "state">, name: string) {
  const s: State = yield* Ref.get(shared.state)
  const r = s.routines.get(name)
  if (r === undefined) return yield* new RoutineNotFound({ name, known: [...s.routines.keys()] })
  return r
})

/**
 * What a fire by hand or by trigger must pass (call it holding the lock): no fire of the routine is running,
 * and its daily rail does not hold. A refusal is recorded as a `skip` (with `extra` in it) and fails.
 */
export const admit = Effect.fn("Fires.admit")(
  function*(shared: Shared, r: RoutineState, trigger: FireTrigger, now: number, extra: Record<string, unknown> = {}) {
    const { record, zone } = shared
    const name = r.routine.name
    const skip = (reason: string, more: Record<string, unknown> = {}) =>
      record(Events.skip, { routine: name, reason, trigger, localTime: formatLocal(zone, now), ...extra, ...more })
    if (r.running !== null) {
      yield* skip("previous fire still running", { running: r.running.fireId })
      return yield* new RoutineBusy({ name, fireId: r.running.fireId, since: iso(r.running.since) })
    }
    if (r.railed) {
      yield* skip("daily budget rail")
      return yield* new RoutineRailed({
        name,
        spentUsd: r.spentUsd,
        dailyBudgetUsd: r.routine.dailyBudgetUsd!,
        until: iso(Calendar.nextMidnight(zone, now))
      })
    }
  }
)

/** The manual fires: they ignore cadence and hours (and a pause), and wait for the outcome. */
export const manual = (shared: Shared, fires: Fires, steer: Steer) => {
  const runRoutine = Effect.fn("Scheduler.runRoutine")(function*(name: string) {
    yield* Effect.annotateCurrentSpan("name", name)
    const { done } = yield* steer((now) =>
      Effect.gen(function*() {
        const r = yield* findRoutine(shared, name)
        yield* admit(shared, r, "manual", now)
        return yield* fires.start({ _tag: "Routine", routine: r.routine }, "manual", now)
      })
    )
    return yield* Deferred.await(done)
  })

  const scanNow = Effect.fn("Scheduler.scanNow")(function*(input: ScanOptions) {
    const decoded = decodeAt(ScanOptionsSchema, input ?? {}, "scanNow")
    if (Either.isLeft(decoded)) {
      return yield* new InvalidSpec({
        path: decoded.left[0]!.path,
        reason: decoded.left.map((i) => `${i.path}: ${i.message}`).join("; ")
      })
    }
    const { done } = yield* steer((now) => fires.start({ _tag: "Scan", options: decoded.right }, "manual", now))
    return yield* Deferred.await(done)
  })

  return { runRoutine, scanNow } as const
}

export interface Triggers {
  readonly trigger: Steering["trigger"]
  /** A routine's own secret (`secret` in its config), for the webhooks layer to check a caller against. */
  readonly routineSecret: (name: string) => Effect.Effect<Option.Option<Redacted.Redacted<string>>, RoutineNotFound>
}

/**
 * Fires from outside: `trigger` keeps to working time and to a pause unless the routine has `triggerAnyTime`
 * (each refusal a `skip` entry), passes `admit` like `runRoutine`, and returns once the fire has started; what the
 * event says goes into the fire's prompt (`Actions.withEvent`). `routineSecret` is the one way to a routine's own
 * secret; nothing else shows it.
 */
export const triggers = (shared: Shared, fires: Fires, steer: Steer): Triggers => {
  const { record, state, zone } = shared

  const trigger = Effect.fn("Scheduler.trigger")(function*(name: string, input: TriggerInput) {
    yield* Effect.annotateCurrentSpan({ name, source: input.source })
    return yield* steer((now) =>
      Effect.gen(function*() {
        const r = yield* findRoutine(shared, name)
        const s = yield* Ref.get(state)
        const extra = input.detail === undefined ? {} : { detail: input.detail }
        if (r.routine.triggerAnyTime !== true && !Calendar.workingNow(shared, s, now)) {
          const paused = s.mode === "paused"
          const reason = paused ? "the scheduler is paused" : "outside working hours"
          // While paused, working time starts again only when someone resumes.
          const starts = paused ? undefined : Calendar.nextEdge(Calendar.calendarOf(shared, s), now)
          yield* record(Events.skip, {
            routine: name,
            reason,
            trigger: input.source,
            localTime: formatLocal(zone, now),
            ...extra
          })
          return yield* new RoutineOffHours({ name, reason, ...(starts === undefined ? {} : { until: iso(starts) }) })
        }
        yield* admit(shared, r, input.source, now, extra)
        // A blank text is no text: the prompt stays as it is.
        const text = input.text === undefined || input.text.trim().length === 0 ? {} : { text: capText(input.text) }
        const target = { _tag: "Routine", routine: r.routine, ...text } as const
        const { fireId } = yield* fires.start(target, input.source, now, input.detail)
        return { fireId } as const
      })
    )
  })

  const routineSecret = Effect.fn("Scheduler.routineSecret")(function*(name: string) {
    const r = yield* findRoutine(shared, name)
    return Option.fromNullable(r.routine.secret)
  })

  return { trigger, routineSecret }
}
