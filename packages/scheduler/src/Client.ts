/**
 * The scheduler on the Promise facade: `fleet.scheduler`, with every steering operation and `findings()` as
 * Promises that reject with the same typed errors. `undefined` when the config has no schedule.
 *
 * ```js
 * import { createFleet } from "@flotta/core"
 * import { SchedulerClient } from "@flotta/scheduler"
 * const fleet = createFleet({ extensions: { scheduler: SchedulerClient.extension({ schedule, routines }) } })
 * await fleet.scheduler?.keepGoing(30)
 * ```
 */
import type { Extension, Runner } from "@flotta/core/Client"
import { Effect, Layer } from "effect"
import { Scheduler } from "./Scheduler.js"
import * as SchedulerConfig from "./SchedulerConfig.js"
import type { FindingsQuery, ScanOptions, TriggerInput, WindowInput } from "./Steering.js"

/** The steering operations as Promises, run on a fleet's runtime that holds the scheduler. */
export const promises = (run: Runner) => {
  const steer = <A, E>(f: (scheduler: Scheduler) => Effect.Effect<A, E>) => run(Effect.flatMap(Scheduler, f))
  return {
    status: () => steer((s) => s.status),
    /** Extends today's working window by `minutes` (default 60); it expires by itself. */
    keepGoing: (minutes: number = 60) => steer((s) => s.keepGoing(minutes)),
    workToday: (window?: WindowInput) => steer((s) => s.workToday(window)),
    workOn: (date: string, window?: WindowInput) => steer((s) => s.workOn(date, window)),
    /** No new work is started; fires in flight finish. */
    pause: () => steer((s) => s.pause),
    resume: () => steer((s) => s.resume),
    stopForToday: () => steer((s) => s.stopForToday),
    /** Fires a routine now, ignoring cadence and hours, and waits for its outcome. */
    runRoutine: (name: string) => steer((s) => s.runRoutine(name)),
    /**
     * Fires a routine from outside (what a webhook does) and resolves with the fire's id as soon as it has
     * started; refused outside working hours or while paused unless the routine has `triggerAnyTime`.
     */
    trigger: (name: string, input: TriggerInput) => steer((s) => s.trigger(name, input)),
    scanNow: (options: ScanOptions = {}) => steer((s) => s.scanNow(options)),
    findings: (query?: FindingsQuery) => steer((s) => s.findings(query))
  }
}

export type SchedulerPromises = ReturnType<typeof promises>

/**
 * The scheduler as an extension of `createFleet`, from the config's `schedule` and `routines` (as written in
 * `flotta.config.json`). Without a `schedule` there is no scheduler and `fleet.scheduler` is `undefined`; a bad
 * one rejects the fleet's first call with `InvalidSpec`.
 */
export const extension = (config: unknown): Extension<SchedulerPromises | undefined> => {
  const schedule = typeof config === "object" && config !== null
    ? (config as { schedule?: unknown }).schedule
    : undefined
  if (schedule === undefined || schedule === null) return { promises: () => undefined }
  return {
    layer: Layer.unwrapEffect(
      SchedulerConfig.required(config).pipe(
        Effect.tap((options) =>
          Effect.forEach(options.rejected, (r) => Effect.logWarning(`routine skipped: ${r.path}: ${r.message}`))
        ),
        Effect.map((options) => Scheduler.layer(options))
      )
    ),
    promises
  }
}

/** For a fleet whose own layer already holds the scheduler (or not): only the face. */
export const face = (enabled: boolean): Extension<SchedulerPromises | undefined> => ({
  promises: (run) => (enabled ? promises(run) : undefined)
})
