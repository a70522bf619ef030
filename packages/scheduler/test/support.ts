/**
 * Test support: a scheduler over a real report log and a test double of the fleet's operations, built
 * under whatever clock the test runs with (TestClock in `it.scoped`).
 */
import { it } from "@effect/vitest"
import type { TurnResult } from "@flotta/core/Agent"
import { InvalidSpec } from "@flotta/core/Errors"
import { ReportLog } from "@flotta/core/ReportLog"
import type { ReportEntry } from "@flotta/core/ReportLog"
import type { RunOptions, RunResult } from "@flotta/core/Run"
import * as Spec from "@flotta/core/Spec"
import { Store } from "@flotta/core/Store"
import { Deferred, Effect, Either, Layer, Option, TestClock } from "effect"
import type { Scope } from "effect"
import * as Scheduler from "../src/Scheduler.js"
import * as SchedulerConfig from "../src/SchedulerConfig.js"
import { SCHEDULER_AGENT, schedulerEntries } from "../src/Steering.js"
import type { FireOutcome, Steering } from "../src/Steering.js"

export const LogLive = ReportLog.Default.pipe(Layer.provide(Store.memory))

/**
 * A test under TestClock (`it.scoped`) over a report log of its own: what most tests here open and close with,
 * said once.
 */
export const test = <A, E>(title: string, body: () => Effect.Effect<A, E, ReportLog | Scope.Scope>) =>
  it.scoped(title, () => body().pipe(Effect.provide(LogLive)))

type Failure = { readonly _tag: string; readonly message: string }

export interface FakeFleet extends Scheduler.FleetOps {
  /** Every run asked for, in order. */
  readonly runs: Array<RunOptions>
  readonly prompts: Array<{ readonly agent: string; readonly text: string }>
  readonly templates: Map<string, Spec.Spec>
}

/** A successful run's result, as the fleet returns it. */
export const runResult = (
  name: string,
  text: string,
  options: { readonly costUsd?: number; readonly structuredOutput?: unknown } = {}
): RunResult => ({
  kind: "run",
  name,
  text,
  costUsd: options.costUsd ?? 0.1,
  durationMs: 1,
  modelCalls: 1,
  sessionId: "session",
  permissionDenials: [],
  ...(options.structuredOutput === undefined ? {} : { structuredOutput: options.structuredOutput })
})

/** A fleet whose scans (the runs with a JSON schema) report `tasks()`, each costing `costUsd`. */
export const scanningFleet = (tasks: () => unknown, costUsd: number) =>
  fakeFleet({
    run: (options) =>
      options.jsonSchema === undefined
        ? undefined
        : Effect.succeed(runResult(options.name!, "found", { costUsd, structuredOutput: { tasks: tasks() } }))
  })

/**
 * A run's answer by its prompt: `TASKS <json array>` returns those tasks as structured output, `FAIL` fails,
 * anything else succeeds with text "done: <prompt>". Every run costs `costUsd` (default 0.1).
 */
export const fakeFleet = (options: {
  readonly costUsd?: number
  readonly run?: (options: RunOptions) => Effect.Effect<RunResult, Failure> | undefined
} = {}): FakeFleet => {
  const runs: Array<RunOptions> = []
  const prompts: Array<{ agent: string; text: string }> = []
  const templates = new Map<string, Spec.Spec>()
  const costUsd = options.costUsd ?? 0.1
  const result = (name: string, text: string, structuredOutput?: unknown) =>
    runResult(name, text, { costUsd, structuredOutput })
  return {
    runs,
    prompts,
    templates,
    run: (runOptions) =>
      Effect.suspend(() => {
        runs.push(runOptions)
        const custom = options.run?.(runOptions)
        if (custom !== undefined) return custom
        const prompt = runOptions.prompt ?? templates.get(runOptions.template ?? "")?.prompt ?? ""
        const name = runOptions.name ?? "run"
        if (prompt.startsWith("FAIL")) {
          return Effect.fail(new InvalidSpec({ path: "prompt", reason: "the fake was told to fail" }))
        }
        if (prompt.startsWith("TASKS ")) {
          return Effect.succeed(result(name, "found", { tasks: JSON.parse(prompt.slice("TASKS ".length)) }))
        }
        return Effect.succeed(result(name, `done: ${prompt}`))
      }),
    prompt: (agent, text) =>
      Effect.sync(() => {
        prompts.push({ agent, text })
        return `turn-${prompts.length}`
      }),
    wait: (_agent, turnId) =>
      Effect.succeed({
        turnId,
        text: `reply to ${turnId}`,
        costUsd,
        durationMs: 1,
        modelCalls: 1,
        sessionId: "s",
        usage: {},
        permissionDenials: [],
        subtype: "success"
      } as unknown as TurnResult),
    template: (name) => Effect.sync(() => templates.get(name))
  }
}

/** A run template, validated like the fleet's own. */
export const template = (input: Record<string, unknown>): Spec.Spec => {
  const spec = Spec.validate({ lifecycle: "run", ...input })
  if (Either.isLeft(spec)) throw new Error(JSON.stringify(spec.left))
  return spec.right
}

/**
 * Builds a scheduler from config JSON (as in flotta.config.json) over the report log and a fake fleet (and the
 * store its state is saved in, when given). `scheduler` is all of it; `steering` its steering face.
 */
export const start = (
  config: Record<string, unknown>,
  fleet: FakeFleet = fakeFleet(),
  store?: Scheduler.SchedulerDeps["store"]
) =>
  Effect.gen(function*() {
    const read = SchedulerConfig.read(config)
    if (Either.isLeft(read) || Option.isNone(read.right)) throw new Error(`bad test config: ${String(read)}`)
    const reports = yield* ReportLog
    const scheduler = yield* Scheduler.make(read.right.value, {
      fleet,
      reports,
      ...(store === undefined ? {} : { store })
    })
    const steering: Steering = scheduler
    return { steering, scheduler, fleet, reports }
  })

/** Sets the clock to `iso`, then builds a scheduler there (see `start`). */
export const startAt = (iso: string, config: Record<string, unknown>, fleet?: FakeFleet) =>
  Effect.zipRight(setTime(iso), start(config, fleet))

/** `startAt` over weekdays 09:00-17:00 UTC (`UTC`) with these routines: how most tests here start. */
export const startUtc = (iso: string, routines: ReadonlyArray<object> = [], fleet?: FakeFleet) =>
  startAt(iso, { schedule: UTC, routines }, fleet)

/** The scheduler's entries, oldest first; optionally only some kinds. */
export const entries = (...kinds: Array<string>) =>
  Effect.flatMap(ReportLog, (log) =>
    kinds.length === 0
      ? Effect.map(log.reports({ agent: SCHEDULER_AGENT, limit: 10_000 }), (p) => p.entries)
      : schedulerEntries(log, kinds))

/** `kind@local time` for each entry, with the local time the scheduler recorded (or the UTC instant). */
export const timeline = (list: ReadonlyArray<ReportEntry>) =>
  list.map((e) => {
    const data = e.data as Record<string, unknown>
    return `${e.kind}${typeof data["routine"] === "string" ? `:${data["routine"]}` : ""}@${data["localTime"] ?? e.at}`
  })

export const setTime = (iso: string) => TestClock.setTime(Date.parse(iso))

/** Lets forked fires run to their end (the test double never waits on anything outside the fibers). */
export const settle = (steering: Steering) =>
  Effect.gen(function*() {
    for (let i = 0; i < 10_000; i++) {
      if ((yield* steering.status).running.length === 0) return
      yield* Effect.yieldNow()
    }
    throw new Error("fires did not settle")
  })

export const failureOf = <A, E>(effect: Effect.Effect<A, E>) => Effect.flip(effect)

/** Working hours from `open` to `close` on each weekday. */
export const weekdays = (open: string, close: string) =>
  Object.fromEntries(["mon", "tue", "wed", "thu", "fri"].map((day) => [day, [[open, close]]]))

export const UTC_WEEK = weekdays("09:00", "17:00")

export const HOUR = 3_600_000

/** A scan routine whose scans find nothing (the fake fleet answers its prompt with an empty task list). */
export const quietScan = (name: string, every: Record<string, unknown>) =>
  ({ name, action: "scan", every, prompt: "TASKS []" }) as const
/** Weekdays 09:00-17:00 UTC; a long tick, since the heartbeat wakes at every boundary anyway. */
export const UTC = { timezone: "utc", hours: UTC_WEEK, tickMs: 6 * HOUR }
export const LA = "America/Los_Angeles"
export const WEEKDAYS_0847 = weekdays("08:47", "17:00")

export const localTimes = (kind: string, routine?: string) =>
  Effect.map(
    entries(kind),
    (list) =>
      list.filter((e) => routine === undefined || (e.data as { routine?: string }).routine === routine)
        .map((e) => (e.data as { localTime: string }).localTime)
  )

export const fireResults = Effect.map(entries("fire_result"), (list) => list.map((e) => e.data as FireOutcome))

/** A fleet whose `GATED` runs wait for the gate. */
export const gatedFleet = (gate: Deferred.Deferred<void>) =>
  fakeFleet({
    run: (options: RunOptions) =>
      options.prompt === "GATED"
        ? Deferred.await(gate).pipe(Effect.as(runResult(options.name ?? "gated", "opened")))
        : undefined
  })
