/**
 * The scheduling layer end to end: a short real schedule, the real pinned `claude` binary, and the fake
 * Messages API. A scan routine fires on its cadence, its structured output lands in the report log, and
 * `findings()` reads it back; a dispatch_scan then hands the one new task to a run template.
 */
import { NodeContext } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option, Schedule, Stream } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Flotta from "../packages/core/src/Flotta.js"
import { Scheduler } from "../packages/scheduler/src/Scheduler.js"
import * as SchedulerConfig from "../packages/scheduler/src/SchedulerConfig.js"
import type { FireOutcome } from "../packages/scheduler/src/Steering.js"
import { CLAUDE, useOfflineApi } from "./support/realCli.js"

const offline = useOfflineApi("flotta-scheduler")

const structured = (tasks: ReadonlyArray<Record<string, string>>) => `STRUCTURED ${JSON.stringify({ tasks })}`

const ALL_WEEK = Object.fromEntries(
  ["mon", "tue", "wed", "thu", "fri", "sat", "sun"].map((d) => [d, [["00:00", "24:00"]]])
)

describe("the scheduler with the real claude CLI", () => {
  it.scopedLive(
    "a scan fires on schedule, its findings are read back, and a dispatch takes only the new task",
    () =>
      Effect.gen(function*() {
        const cwd = path.join(offline.root, "project")
        fs.mkdirSync(cwd, { recursive: true })
        // The config file's shape: a fleet with a run template, a schedule, and routines.
        const config = {
          agents: [{ name: "fixer", lifecycle: "run", prompt: "ECHO fixing", cwd, env: offline.env }],
          schedule: { timezone: "utc", hours: ALL_WEEK, tickMs: 60_000 },
          routines: [
            {
              name: "survey",
              action: "scan",
              every: { intervalMs: 1500 },
              cwd,
              env: offline.env,
              maxBudgetUsd: 1,
              prompt: structured([
                { title: "Fix the flaky test", detail: "test/a.test.ts times out on CI", priority: "high" },
                { title: "Update the README", detail: "the install steps are stale" }
              ])
            },
            {
              name: "work-loop",
              action: "dispatch_scan",
              every: { intervalMs: 3_600_000 },
              template: "fixer",
              maxDispatch: 1,
              cwd,
              env: offline.env,
              prompt: structured([
                { title: "fix the flaky test!", detail: "seen again" },
                { title: "Add a changelog", detail: "CHANGELOG.md is missing" }
              ])
            }
          ]
        }
        const program = Effect.gen(function*() {
          const fleet = yield* Flotta.Flotta
          const scheduler = yield* Scheduler
          const results = yield* fleet.subscribe({ agent: "scheduler", kinds: ["fire_result"] })
          yield* fleet.boot(config)
          const first = yield* results.pipe(
            Stream.filterMap((n) => (n._tag === "Entry" ? Option.some(n.entry.data as FireOutcome) : Option.none())),
            Stream.runHead,
            Effect.map(Option.getOrThrow)
          )
          // One scheduled scan is enough; pause stops the cadence (a manual fire still works). A second scan
          // may have started before the pause landed: let it finish.
          yield* scheduler.pause
          yield* scheduler.status.pipe(
            Effect.repeat({ until: (s) => s.running.length === 0, schedule: Schedule.spaced("100 millis") })
          )
          const scans = (yield* fleet.reports({ agent: "scheduler", kinds: ["findings"] })).entries.length
          assert.deepInclude(first, { routine: "survey", action: "scan", trigger: "schedule", ok: true })
          assert.isAbove(first.costUsd, 0)
          assert.deepStrictEqual(first.tasks!.map((t) => [t.title, t.key, t.priority]), [
            ["Fix the flaky test", "fix the flaky test", "high"],
            ["Update the README", "update the readme", undefined]
          ])

          const findings = yield* scheduler.findings()
          assert.deepStrictEqual(findings.map((f) => [f.title, f.routine, f.sightings]), [
            ["Fix the flaky test", "survey", scans],
            ["Update the README", "survey", scans]
          ])

          const loop = yield* scheduler.runRoutine("work-loop")
          assert.isTrue(loop.ok, JSON.stringify(loop.error))
          assert.deepStrictEqual(loop.dispatched!.map((d) => [d.title, d.ok]), [["Add a changelog", true]])
          const dispatchedRun = loop.dispatched![0]!.run
          const result = yield* fleet.reports({ agent: dispatchedRun, kinds: ["result"] })
          assert.match(
            JSON.stringify(result.entries[0]!.data),
            /ECHO: fixing\\n\\nTask: Add a changelog\\n\\nCHANGELOG.md is missing/
          )

          const after = yield* scheduler.findings()
          assert.deepStrictEqual(after.map((f) => [f.key, f.sightings]), [
            ["fix the flaky test", scans + 1],
            ["add a changelog", 1],
            ["update the readme", scans]
          ])
          const status = yield* scheduler.status
          assert.strictEqual(status.mode, "paused")
          assert.deepStrictEqual(status.routines.map((r) => [r.name, r.lastFire?.ok]), [
            ["survey", true],
            ["work-loop", true]
          ])
        })
        yield* program.pipe(
          Effect.provide(
            Layer.unwrapEffect(Effect.map(SchedulerConfig.required(config), (c) => Scheduler.layer(c))).pipe(
              Layer.provideMerge(Flotta.layer({ claudePath: CLAUDE }).pipe(Layer.provide(NodeContext.layer)))
            )
          )
        )
      }),
    120_000
  )
})
