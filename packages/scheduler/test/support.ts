/**
 * Test support: a scheduler over a real report log and a test double of the fleet's operations, built
 * under whatever clock the test runs with (TestClock in `it.scoped`).
 */
import type { TurnResult } from "@flotta/core/Agent"
import { InvalidSpec } from "@flotta/core/Errors"
import { ReportLog } from "@flotta/core/ReportLog"
import type { ReportEntry } from "@flotta/core/ReportLog"
import type { RunOptions, RunResult } from "@flotta/core/Run"
import * as Spec from "@flotta/core/Spec"
import { Store } from "@flotta/core/Store"
import { Effect, Either, Layer, Option, TestClock } from "effect"
import * as Scheduler from "../src/Scheduler.js"
import * as SchedulerConfig from "../src/SchedulerConfig.js"
import { SCHEDULER_AGENT, schedulerEntries } from "../src/Steering.js"
import type { Steering } from "../src/Steering.js"

export const LogLive = ReportLog.Default.pipe(Layer.provide(Store.memory))

type Failure = { readonly _tag: string; readonly message: string }

export interface FakeFleet extends Scheduler.FleetOps {
  /** Every run asked for, in order. */
  readonly runs: Array<RunOptions>
  readonly prompts: Array<{ readonly agent: string; readonly text: string }>
  readonly templates: Map<string, Spec.Spec>
}

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
  const result = (name: string, text: string, structuredOutput?: unknown): RunResult => ({
    kind: "run",
    name,
    text,
    costUsd,
    durationMs: 1,
    modelCalls: 1,
    sessionId: "session",
    permissionDenials: [],
    ...(structuredOutput === undefined ? {} : { structuredOutput })
  })
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

/** Builds a scheduler from config JSON (as in flotta.config.json) over the report log and a fake fleet. */
export const start = (config: Record<string, unknown>, fleet: FakeFleet = fakeFleet()) =>
  Effect.gen(function*() {
    const read = SchedulerConfig.read(config)
    if (Either.isLeft(read) || Option.isNone(read.right)) throw new Error(`bad test config: ${String(read)}`)
    const reports = yield* ReportLog
    const steering: Steering = yield* Scheduler.make(read.right.value, { fleet, reports })
    return { steering, fleet, reports }
  })

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

export const UTC_WEEK = {
  mon: [["09:00", "17:00"]],
  tue: [["09:00", "17:00"]],
  wed: [["09:00", "17:00"]],
  thu: [["09:00", "17:00"]],
  fri: [["09:00", "17:00"]]
}
