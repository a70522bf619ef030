/**
 * The scheduler: a heartbeat that follows working hours, fires routines on their cadence through the public
 * fleet operations, and takes steering at runtime. It is a Layer of its own, on only when config has a
 * `schedule`; the engine never learns about time.
 *
 * All time is Effect's Clock, so `TestClock` drives it. This module wires the parts together:
 * - `Calendar`: what hours and overrides make of time (working or not, next fire, next wake);
 * - `Heartbeat`: the loop that sleeps until the next change and fires what fell due;
 * - `Fires` and `Actions`: a fire's life (on schedule, by hand, or triggered from outside), and what each action
 *   does, within its budgets;
 * - `Overrides`: keep going, work on a day, stop for today, pause and resume.
 * Every wake, stop, fire, skip, override and rail is a span and an entry in the report log under `scheduler`.
 *
 * Its state outlives the host: after every change the mode, overrides and cadence cursors are saved to the
 * `Store` (`internal/persist.ts`), and a boot resumes from them (a `resumed` entry says what came back). The
 * day's spend and the findings come back from the report log.
 */
import type { StoreUnavailable } from "@flotta/core/Errors"
import { Flotta } from "@flotta/core/Flotta"
import { ReportLog } from "@flotta/core/ReportLog"
import type { Rejected } from "@flotta/core/Spec"
import { Store } from "@flotta/core/Store"
import type { StoreShape } from "@flotta/core/Store"
import { Clock, Effect, Either, Layer, Option, Queue, Ref } from "effect"
import * as Actions from "./Actions.js"
import { SchedulerNotEnabled } from "./Errors.js"
import * as Fires from "./Fires.js"
import * as Heartbeat from "./Heartbeat.js"
import * as Persist from "./internal/persist.js"
import { recorder } from "./internal/record.js"
import type { Shared, State } from "./internal/state.js"
import { status as statusOf } from "./internal/status.js"
import * as Overrides from "./Overrides.js"
import { overrideView } from "./Overrides.js"
import type { Routine } from "./Routine.js"
import type { ScheduleSettings } from "./SchedulerConfig.js"
import * as Events from "./SchedulerEvents.js"
import { readFindings } from "./Steering.js"
import type { FindingsQuery, Steering } from "./Steering.js"
import { describeZone, formatLocal } from "./WorkingHours.js"

export { dispatchPrompt, TASKS_JSON_SCHEMA } from "./Actions.js"
export type { FleetOps } from "./Actions.js"
export type { ScheduleSettings } from "./SchedulerConfig.js"

export interface SchedulerOptions {
  readonly schedule: ScheduleSettings
  readonly routines: ReadonlyArray<Routine>
  /**
   * Routines the config had but that were skipped: shown in status and recorded at start. Whoever read the config
   * tells a person of them (`flotta serve` prints them, the `createFleet` extension logs them).
   */
  readonly rejected?: ReadonlyArray<Rejected>
}

export interface SchedulerDeps {
  readonly fleet: Actions.FleetOps
  readonly reports: Pick<ReportLog, "post" | "reports">
  /** Where the state is saved across restarts of the host; without one it lasts as long as the scheduler. */
  readonly store?: Pick<StoreShape, "saveState" | "loadState">
}

export const fromFlotta = (fleet: Flotta): Actions.FleetOps => ({
  run: fleet.run,
  prompt: fleet.prompt,
  wait: fleet.wait,
  template: fleet.template
})

/** A running scheduler over the given fleet operations and report log, in the current scope. */
export const make = Effect.fn("Scheduler.make")(function*(options: SchedulerOptions, deps: SchedulerDeps) {
  const { fleet, reports, store } = deps
  const { hours, start, tickMs, zone } = options.schedule
  const rejected = options.rejected ?? []
  const lock = yield* Effect.makeSemaphore(1)
  const poke = yield* Queue.sliding<void>(1)
  const record = recorder(reports)

  const bootAt = yield* Clock.currentTimeMillis
  const atBoot = yield* Fires.routinesAtBoot(reports, zone, options.routines, bootAt)
  const settings: Persist.Settings = { zone, hours, start }
  // A store that cannot give the state back (StoreUnavailable) is a fresh start, not a failed one.
  const loaded = store === undefined
    ? Either.right(Option.none())
    : yield* store.loadState(Persist.STATE_KEY).pipe(
      Effect.map(Either.right),
      Effect.catchTag("StoreUnavailable", (error) => Effect.succeed(Either.left(error.message)))
    )
  const resumed = Persist.restore({ loaded, settings, atBoot, bootAt })
  const routines = resumed.routines
  const state = yield* Ref.make<State>({
    mode: resumed.mode,
    overrides: resumed.overrides,
    workDays: resumed.workDays,
    working: false,
    // The boot cursor: cadences count from now, so the time the host was down is not working time.
    lastEval: bootAt,
    routines,
    adhoc: new Map()
  })

  // Saves what changed, standing at the current instant. Every change happens under the lock, and every
  // locked section ends here, so the store always has the state as the last change left it.
  let lastSaved: string | undefined
  const save = store === undefined ? Effect.void : Effect.gen(function*() {
    const value = Persist.encode(settings, yield* Ref.get(state), yield* Clock.currentTimeMillis)
    const json = JSON.stringify(value)
    if (json === lastSaved) return
    yield* Effect.sync(() => store.saveState(Persist.STATE_KEY, value)).pipe(
      Effect.tap(() => Effect.sync(() => (lastSaved = json))),
      Effect.catchAllDefect((defect) => Effect.logWarning("the scheduler's state could not be saved", defect))
    )
  })
  const locked = <A, E, R>(effect: Effect.Effect<A, E, R>) => lock.withPermits(1)(Effect.ensuring(effect, save))
  const shared: Shared = { zone, hours, tickMs, state, locked, record, poke }

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
  const triggers = Fires.triggers(shared, fires, heartbeat.steer)

  yield* record(Events.started, {
    mode: resumed.mode,
    timezone: describeZone(zone),
    localTime: formatLocal(zone, bootAt),
    routines: options.routines.map((r) => r.name),
    rejected: rejected.map(({ message, path }) => ({ path, message })),
    spentToday: Object.fromEntries(
      [...routines.values()].filter((r) => r.spentUsd > 0).map((r) => [r.routine.name, r.spentUsd])
    ),
    railed: [...routines.values()].filter((r) => r.railed).map((r) => r.routine.name)
  })
  if (resumed.report !== undefined) yield* record(Events.resumed, resumed.report)
  for (const problem of resumed.problems) yield* Effect.logWarning(`scheduler state: ${problem}`)
  for (const o of resumed.expired) {
    yield* record(Events.override, { action: o.kind, phase: "expired", ...overrideView(o) })
  }
  for (const { instant, routine } of resumed.missed) {
    yield* record(Events.skip, {
      routine,
      reason: "the host was down",
      trigger: "schedule",
      localTime: formatLocal(zone, instant)
    })
  }
  // The boot cursor: cadences count from now, so nothing fires the instant the node starts.
  yield* shared.locked(heartbeat.evaluate(bootAt))
  yield* Effect.forkScoped(heartbeat.run)
  yield* Effect.addFinalizer(() =>
    Effect.gen(function*() {
      // The worked time up to the close is saved (the heartbeat and the fires in flight stop after this).
      yield* locked(Effect.void)
      if (!(yield* Ref.get(state)).working) return
      const now = yield* Clock.currentTimeMillis
      yield* record(Events.stop, { reason: "the scheduler shut down", localTime: formatLocal(zone, now) })
    })
  )

  return {
    status: Effect.withSpan(status, "Scheduler.status"),
    ...overrides,
    ...manual,
    ...triggers,
    findings: Effect.fn("Scheduler.findings")(function*(query: FindingsQuery = {}) {
      return yield* readFindings(reports, query)
    })
  } satisfies Steering
})

/**
 * The running scheduler: every steering operation and `findings()`, and for the webhooks layer `trigger` (a fire
 * from outside) and `routineSecret` (a routine's own secret, `Redacted`). Built over the engine (`Flotta`,
 * `ReportLog`, and the `Store` its state is saved in); `Scheduler.layer(config)` is `Layer.empty` when the config has no schedule, so no timer runs.
 */
export class Scheduler extends Effect.Service<Scheduler>()("@flotta/scheduler/Scheduler", {
  scoped: (options: SchedulerOptions) =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const reports = yield* ReportLog
      const store = yield* Store
      return yield* make(options, { fleet: fromFlotta(fleet), reports, store })
    })
}) {
  /** The scheduler for a decoded `schedule` section, or nothing at all (`Layer.empty`) when there is none. */
  static layer(options: SchedulerOptions): Layer.Layer<Scheduler, StoreUnavailable, Flotta | ReportLog | Store>
  static layer(options: SchedulerOptions | undefined): Layer.Layer<never, StoreUnavailable, Flotta | ReportLog | Store>
  static layer(options: SchedulerOptions | undefined) {
    return options === undefined ? Layer.empty : Scheduler.Default(options)
  }

  /** The scheduler when one runs in this context, else `SchedulerNotEnabled`: how optional callers reach it. */
  static readonly enabled: Effect.Effect<Scheduler, SchedulerNotEnabled> = Effect.flatMap(
    Effect.serviceOption(Scheduler),
    Option.match({ onNone: () => new SchedulerNotEnabled(), onSome: Effect.succeed })
  )
}
