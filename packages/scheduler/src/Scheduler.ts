/**
 * The scheduler: a heartbeat that follows working hours, fires routines on their cadence through the public
 * fleet operations, and takes steering at runtime. It is a Layer of its own, on only when config has a
 * `schedule`; the engine never learns about time.
 *
 * All time is Effect's Clock, so `TestClock` drives it. This module wires the parts together:
 * - `Calendar`: what hours and overrides make of time (working or not, next fire, next wake);
 * - `Heartbeat`: the loop that sleeps until the next change and fires what fell due;
 * - `Fires` and `Actions`: a fire's life, and what each action does, within its budgets;
 * - `Overrides`: keep going, work on a day, stop for today, pause and resume.
 * Every wake, stop, fire, skip, override and rail is a span and an entry in the report log under `scheduler`.
 */
import { Flotta } from "@flotta/core/Flotta"
import { ReportLog } from "@flotta/core/ReportLog"
import type { Rejected } from "@flotta/core/Spec"
import { Clock, Effect, Layer, Option, Queue, Ref } from "effect"
import * as Actions from "./Actions.js"
import { SchedulerNotEnabled } from "./Errors.js"
import * as Fires from "./Fires.js"
import * as Heartbeat from "./Heartbeat.js"
import { recorder } from "./internal/record.js"
import type { Shared, State } from "./internal/state.js"
import { status as statusOf } from "./internal/status.js"
import * as Overrides from "./Overrides.js"
import type { Routine } from "./Routine.js"
import type { ScheduleSettings } from "./SchedulerConfig.js"
import { readFindings, ReportKinds } from "./Steering.js"
import type { FindingsQuery, Steering } from "./Steering.js"
import { describeZone, formatLocal } from "./WorkingHours.js"

export { dispatchPrompt, TASKS_JSON_SCHEMA } from "./Actions.js"
export type { FleetOps } from "./Actions.js"
export type { ScheduleSettings } from "./SchedulerConfig.js"

export interface SchedulerOptions {
  readonly schedule: ScheduleSettings
  readonly routines: ReadonlyArray<Routine>
  /** Routines the config had but that were skipped: shown in status and recorded at start. */
  readonly rejected?: ReadonlyArray<Rejected>
}

export interface SchedulerDeps {
  readonly fleet: Actions.FleetOps
  readonly reports: Pick<ReportLog, "post" | "reports">
}

export const fromFlotta = (fleet: Flotta): Actions.FleetOps => ({
  run: fleet.run,
  prompt: fleet.prompt,
  wait: fleet.wait,
  template: fleet.template
})

/** A running scheduler over the given fleet operations and report log, in the current scope. */
export const make = (options: SchedulerOptions, deps: SchedulerDeps) =>
  Effect.gen(function*() {
    const { fleet, reports } = deps
    const { hours, start, tickMs, zone } = options.schedule
    const rejected = options.rejected ?? []
    const lock = yield* Effect.makeSemaphore(1)
    const poke = yield* Queue.sliding<void>(1)
    const record = recorder(reports)

    const bootAt = yield* Clock.currentTimeMillis
    const routines = yield* Fires.routinesAtBoot(reports, zone, options.routines, bootAt)
    const state = yield* Ref.make<State>({
      mode: start,
      overrides: [],
      workDays: new Set(),
      working: false,
      lastEval: bootAt,
      routines,
      adhoc: new Map()
    })
    const shared: Shared = { zone, hours, tickMs, state, locked: lock.withPermits(1), record, poke }

    const actions = yield* Actions.make({
      fleet,
      reports,
      record,
      paused: Effect.map(Ref.get(state), (s) => s.mode === "paused")
    })
    const fires = yield* Fires.make(shared, actions)
    const heartbeat = Heartbeat.make(shared, fires)
    const status = statusOf(shared, rejected)
    const overrides = Overrides.make(shared, heartbeat.steer, status)
    const manual = Fires.manual(shared, fires, heartbeat.steer)

    yield* record(ReportKinds.started, {
      mode: start,
      timezone: describeZone(zone),
      localTime: formatLocal(zone, bootAt),
      routines: options.routines.map((r) => r.name),
      rejected: rejected.map(({ message, path }) => ({ path, message })),
      spentToday: Object.fromEntries(
        [...routines.values()].filter((r) => r.spentUsd > 0).map((r) => [r.routine.name, r.spentUsd])
      ),
      railed: [...routines.values()].filter((r) => r.railed).map((r) => r.routine.name)
    })
    for (const r of rejected) yield* Effect.logWarning(`routine skipped: ${r.path}: ${r.message}`)
    // The boot cursor: cadences count from now, so nothing fires the instant the node starts.
    yield* shared.locked(heartbeat.evaluate(bootAt))
    yield* Effect.forkScoped(heartbeat.run)
    yield* Effect.addFinalizer(() =>
      Clock.currentTimeMillis.pipe(
        Effect.flatMap((now) =>
          record(ReportKinds.stop, { reason: "the scheduler shut down", localTime: formatLocal(zone, now) })
        ),
        Effect.whenEffect(Ref.get(state).pipe(Effect.map((s) => s.working)))
      )
    )

    return {
      status,
      ...overrides,
      ...manual,
      findings: Effect.fn("Scheduler.findings")(function*(query: FindingsQuery = {}) {
        return yield* readFindings(reports, query)
      })
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
