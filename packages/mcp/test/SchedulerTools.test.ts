/**
 * The steering tools in process (the SDK client on the handler's fetch), in both protocol eras, over the
 * in-memory Claude with the scheduler on top and every timer on the TestClock: each tool's answer, a fire that
 * outlasts the call's wait, the refusals with the field or routine named, and SchedulerNotEnabled from a fleet
 * that runs no scheduler.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Testing from "@flotta/core/Testing"
import { Scheduler } from "@flotta/scheduler/Scheduler"
import * as SchedulerConfig from "@flotta/scheduler/SchedulerConfig"
import type { CallToolResult, Client } from "@modelcontextprotocol/client"
import { Effect, Either, Fiber, Layer, Option, TestClock } from "effect"
import * as SchedulerTools from "../src/SchedulerTools.js"
import type { Era } from "./support.js"
import { call, connect, ERAS, fleet, forkArmed, handler, progressLog, structured, text } from "./support.js"

// The names themselves are checked in Tools.test.ts (the whole list, in order).
const STEERING_TOOLS = SchedulerTools.tools.map((tool) => tool.name)

/** Monday 10:00 UTC: inside the 09:00-17:00 working hours. */
const MONDAY_10 = "2025-03-03T10:00:00Z"

const WEEKDAYS = Object.fromEntries(["mon", "tue", "wed", "thu", "fri"].map((d) => [d, [["09:00", "17:00"]]]))

const CONFIG = {
  schedule: { timezone: "utc", hours: WEEKDAYS, tickMs: 24 * 3_600_000 },
  routines: [
    { name: "nudge", action: "prompt", agent: "helper", prompt: "how are things?", every: { intervalMs: 3_600_000 } },
    { name: "stuck", action: "prompt", agent: "helper", prompt: "hang", every: { intervalMs: 3_600_000 } },
    { name: "survey", action: "scan", focus: "docs", every: { dailyAt: "09:00" } }
  ]
}

/** A scan with a focus answers with tasks, as the CLI does under --json-schema; "hang" never answers. */
const model: Testing.Model = ({ prompt }) => {
  if (prompt.includes("Focus on: docs")) {
    return Testing.structured({ tasks: [{ title: "Fix the README", detail: "It is stale.", priority: "high" }] })
  }
  if (prompt.includes("Focus on: tests")) {
    return Testing.structured({ tasks: [{ title: "Add a test", detail: "Nothing covers the parser." }] })
  }
  if (prompt === "hang") return Testing.hang()
  return `echo: ${prompt}`
}

/** The engine over the in-memory Claude with the scheduler of `CONFIG` on top. */
const scheduled = () =>
  Scheduler.layer(Option.getOrThrow(Either.getOrThrow(SchedulerConfig.read(CONFIG)))).pipe(
    Layer.provideMerge(fleet({ model }))
  )

/** Runs `body` at Monday 10:00 with a scheduled fleet and a client of a fresh handler over it. */
const withScheduler = <A, E>(era: Era, body: (client: Client) => Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    yield* TestClock.setTime(Date.parse(MONDAY_10))
    return yield* Effect.gen(function*() {
      const client = yield* Effect.flatMap(handler(), (h) => connect(h.fetch, era))
      return yield* body(client)
    }).pipe(Effect.provide(scheduled()))
  })

const errorOf = (result: CallToolResult) => {
  assert.isTrue(result.isError, `expected an isError result, got ${JSON.stringify(result.structuredContent)}`)
  return (result.structuredContent as { error: { _tag: string; message: string } }).error
}

interface Status {
  readonly mode: string
  readonly working: boolean
  readonly reason: string
  readonly today: {
    readonly date: string
    readonly weekday: string
    readonly windows: ReadonlyArray<{ start: string; end: string; source: string }>
  }
  readonly overrides: ReadonlyArray<{ kind: string; until: string; date?: string; window?: unknown; minutes?: number }>
  readonly running: ReadonlyArray<{ fireId: string; routine: string | null }>
  readonly routines: ReadonlyArray<{
    name: string
    state: string
    nextFireAt: string | null
    lastFire: { fireId: string; ok: boolean } | null
  }>
}

interface Steered {
  readonly override: {
    readonly kind: string
    readonly until: string
    readonly minutes?: number
    readonly date?: string
    readonly window?: unknown
  }
  readonly status: Status
}

interface FireResult {
  readonly done: boolean
  readonly fireId: string | null
  readonly routine: string | null
  readonly waitedMs: number
  readonly outcome?: {
    readonly fireId: string
    readonly ok: boolean
    readonly trigger: string
    readonly text?: string
    readonly tasks?: ReadonlyArray<{ title: string; priority?: string }>
  }
  readonly message: string
}

const windows = (status: Status) => status.today.windows.map((w) => `${w.start}-${w.end} ${w.source}`)

for (const era of ERAS) {
  describe(`steering over MCP, ${era.era} era`, () => {
    it.scoped("lists the steering tools with schemas; status and findings are read-only", () =>
      withScheduler(era, (client) =>
        Effect.gen(function*() {
          const { tools } = yield* Effect.promise(() => client.listTools())
          const byName = new Map(tools.map((t) => [t.name, t]))
          for (const name of STEERING_TOOLS) {
            const tool = byName.get(name)
            assert.isDefined(tool, name)
            assert.strictEqual(tool!.inputSchema.type, "object", name)
            assert.strictEqual(tool!.outputSchema?.type, "object", name)
            assert.match(tool!.description ?? "", /SchedulerNotEnabled/, name)
            assert.isString(tool!.title, name)
          }
          for (const name of ["flotta_schedule_status", "flotta_findings"]) {
            assert.isTrue(byName.get(name)!.annotations?.readOnlyHint, name)
          }
          for (const name of STEERING_TOOLS.filter((n) => n !== "flotta_schedule_status" && n !== "flotta_findings")) {
            assert.isFalse(byName.get(name)!.annotations?.readOnlyHint, name)
          }
          assert.deepInclude(byName.get("flotta_work_on")!.inputSchema.required ?? [], "date")
          assert.deepInclude(byName.get("flotta_run_routine")!.inputSchema.required ?? [], "name")
        })))

    it.scoped("status, keep going, stop for today, pause, resume, work today and work on", () =>
      withScheduler(era, (client) =>
        Effect.gen(function*() {
          const status = structured<Status>(yield* call(client, "flotta_schedule_status"))
          assert.deepInclude(status, { mode: "working", working: true, reason: "hours 09:00-17:00" })
          assert.deepInclude(status.today, { date: "2025-03-03", weekday: "mon" })
          assert.deepStrictEqual(windows(status), ["09:00-17:00 hours"])
          assert.deepStrictEqual(status.routines.map((r) => [r.name, r.state]), [
            ["nudge", "idle"],
            ["stuck", "idle"],
            ["survey", "idle"]
          ])
          assert.strictEqual(status.routines[2]!.nextFireAt, "2025-03-04T09:00:00.000Z")

          // Keep going runs from now and stacks on the end of today's stretch.
          const kept = structured<Steered>(yield* call(client, "flotta_keep_going", { minutes: 30 }))
          assert.deepInclude(kept.override, { kind: "keep_going", until: "2025-03-03T17:30:00.000Z", minutes: 30 })
          assert.deepStrictEqual(windows(kept.status), ["09:00-17:00 hours", "10:00-17:30 keep_going"])
          const byDefault = structured<Steered>(yield* call(client, "flotta_keep_going", {}))
          assert.deepInclude(byDefault.override, { until: "2025-03-03T18:30:00.000Z", minutes: 60 })

          const stopped = structured<Steered>(yield* call(client, "flotta_stop_for_today"))
          assert.strictEqual(stopped.override.kind, "stop_for_today")
          assert.deepInclude(stopped.status, { working: false, reason: "stopped for today" })
          assert.deepStrictEqual(stopped.status.overrides.map((o) => o.kind), ["stop_for_today"])

          const resumed = structured<{ status: Status }>(yield* call(client, "flotta_resume"))
          assert.deepInclude(resumed.status, { mode: "working", working: true })
          assert.deepStrictEqual(resumed.status.overrides, [])

          const paused = structured<{ status: Status }>(yield* call(client, "flotta_pause"))
          assert.deepInclude(paused.status, { mode: "paused", working: false, reason: "paused" })
          assert.isTrue(paused.status.routines.every((r) => r.nextFireAt === null))
          const again = structured<{ status: Status }>(yield* call(client, "flotta_pause"))
          assert.strictEqual(again.status.mode, "paused")
          assert.strictEqual(
            structured<{ status: Status }>(yield* call(client, "flotta_resume")).status.mode,
            "working"
          )

          const evening = structured<Steered>(yield* call(client, "flotta_work_today", { from: "18:00", to: "20:00" }))
          assert.deepInclude(evening.override, {
            kind: "work_on",
            date: "2025-03-03",
            until: "2025-03-03T20:00:00.000Z"
          })
          assert.deepStrictEqual(evening.override.window, { start: "18:00", end: "20:00" })
          assert.deepStrictEqual(windows(evening.status), ["09:00-17:00 hours", "18:00-20:00 work_on"])

          const saturday = structured<Steered>(
            yield* call(client, "flotta_work_on", { date: "2025-03-08", from: "10:00", to: "12:00" })
          )
          assert.deepInclude(saturday.override, { kind: "work_on", date: "2025-03-08" })
          assert.deepStrictEqual(saturday.override.window, { start: "10:00", end: "12:00" })
          // Without a window: the span of a usual working day.
          const sunday = structured<Steered>(yield* call(client, "flotta_work_on", { date: "2025-03-09" }))
          assert.deepStrictEqual(sunday.override.window, { start: "09:00", end: "17:00" })
          assert.deepStrictEqual(
            sunday.status.overrides.map((o) => [o.kind, o.date]),
            [["work_on", "2025-03-03"], ["work_on", "2025-03-08"], ["work_on", "2025-03-09"]]
          )
        })))

    it.scoped("run_routine and scan_now fire and wait for the outcome; findings reads them back", () =>
      withScheduler(era, (client) =>
        Effect.gen(function*() {
          yield* call(client, "flotta_spawn", { name: "helper" }).pipe(Effect.map(structured))
          // Paused: a manual fire still works.
          yield* call(client, "flotta_pause")
          const nudge = structured<FireResult>(yield* call(client, "flotta_run_routine", { name: "nudge" }))
          assert.deepInclude(nudge, { done: true, routine: "nudge" })
          assert.match(nudge.fireId!, /^fire-[0-9a-f]{8}$/)
          assert.deepInclude(nudge.outcome!, { fireId: nudge.fireId!, ok: true, trigger: "manual" })
          assert.strictEqual(nudge.outcome!.text, "echo: how are things?")
          assert.match(nudge.message, /^routine nudge: fire fire-[0-9a-f]{8} succeeded \(\$\d+\.\d{4}\)$/)

          const survey = structured<FireResult>(yield* call(client, "flotta_run_routine", { name: "survey" }))
          assert.deepStrictEqual(survey.outcome!.tasks!.map((t) => [t.title, t.priority]), [["Fix the README", "high"]])
          assert.match(survey.message, /succeeded, 1 task\(s\) found/)

          const scan = structured<FireResult>(yield* call(client, "flotta_scan_now", { focus: "tests" }))
          assert.deepInclude(scan, { done: true, routine: null })
          assert.deepStrictEqual(scan.outcome!.tasks!.map((t) => t.title), ["Add a test"])

          const all = structured<{ findings: ReadonlyArray<{ title: string; routine: string | null }> }>(
            yield* call(client, "flotta_findings")
          )
          assert.deepStrictEqual(all.findings.map((f) => [f.title, f.routine]), [
            ["Add a test", null],
            ["Fix the README", "survey"]
          ])
          const bySurvey = structured<{ findings: ReadonlyArray<{ title: string }> }>(
            yield* call(client, "flotta_findings", { routine: "survey" })
          )
          assert.deepStrictEqual(bySurvey.findings.map((f) => f.title), ["Fix the README"])
          const newest = structured<{ findings: ReadonlyArray<{ title: string }> }>(
            yield* call(client, "flotta_findings", { limit: 1 })
          )
          assert.deepStrictEqual(newest.findings.map((f) => f.title), ["Add a test"])

          const status = structured<Status>(yield* call(client, "flotta_schedule_status"))
          assert.deepStrictEqual(status.routines.map((r) => [r.name, r.lastFire?.fireId ?? null, r.lastFire?.ok]), [
            ["nudge", nudge.fireId, true],
            ["stuck", null, undefined],
            ["survey", survey.fireId, true]
          ])
        })))

    it.scoped("a fire that outlasts the wait: done false with its fireId and progress; it goes on (RoutineBusy)", () =>
      withScheduler(era, (client) =>
        Effect.gen(function*() {
          yield* call(client, "flotta_spawn", { name: "helper" }).pipe(Effect.map(structured))
          const { all, onprogress, received } = yield* progressLog
          const waiting = yield* forkArmed(
            call(client, "flotta_run_routine", { name: "stuck", timeoutSeconds: 4 }, {
              onprogress,
              resetTimeoutOnProgress: true
            }),
            "4 seconds"
          )
          yield* TestClock.adjust("3 seconds")
          yield* received(1)
          yield* TestClock.adjust("1 second")
          const pending = structured<FireResult>(yield* Fiber.join(waiting))
          assert.deepInclude(pending, { done: false, routine: "stuck", waitedMs: 4000 })
          assert.isUndefined(pending.outcome)
          assert.deepStrictEqual((yield* all).map((p) => [p.progress, p.total, p.message]), [
            [3, 4, "routine stuck: running, waited 3 s"]
          ])
          const status = structured<Status>(yield* call(client, "flotta_schedule_status"))
          assert.deepStrictEqual(status.running.map((f) => [f.fireId, f.routine]), [[pending.fireId, "stuck"]])
          assert.include(pending.message, `fire ${pending.fireId} still running after 4 s; it goes on`)
          assert.include(pending.message, "flotta_reports")

          const busy = errorOf(yield* call(client, "flotta_run_routine", { name: "stuck" }))
          assert.strictEqual(busy._tag, "RoutineBusy")
          assert.include(busy.message, `routine "stuck" is still running (fire ${pending.fireId}`)

          // A scan that outlasts its wait is told apart from the scans already in flight.
          const scanning = yield* forkArmed(
            call(client, "flotta_scan_now", { prompt: "hang", timeoutSeconds: 1 }),
            "1 second"
          )
          yield* TestClock.adjust("1 second")
          const scan = structured<FireResult>(yield* Fiber.join(scanning))
          assert.deepInclude(scan, { done: false, routine: null })
          const running = structured<Status>(yield* call(client, "flotta_schedule_status")).running
          assert.deepStrictEqual(running.filter((f) => f.routine === null).map((f) => f.fireId), [scan.fireId])
        })))

    it.scoped("refuses bad arguments with the field, the date or the routine named", () =>
      withScheduler(era, (client) =>
        Effect.gen(function*() {
          const zero = yield* call(client, "flotta_keep_going", { minutes: 0 })
          assert.isTrue(zero.isError)
          assert.match(text(zero), /Invalid arguments for tool flotta_keep_going: .*minutes/)
          assert.match(text(yield* call(client, "flotta_keep_going", { minutes: 1.5 })), /minutes/)
          assert.match(text(yield* call(client, "flotta_keep_going", { mins: 5 })), /mins.*unexpected/)
          assert.match(text(yield* call(client, "flotta_work_on", {})), /date.*missing/)
          assert.match(text(yield* call(client, "flotta_work_on", { date: "next friday" })), /date/)
          assert.match(text(yield* call(client, "flotta_work_today", { from: "6pm", to: "8pm" })), /from/)
          assert.match(text(yield* call(client, "flotta_findings", { limit: 0 })), /limit/)
          assert.match(text(yield* call(client, "flotta_run_routine", { routine: "nudge" })), /name.*missing/)

          const half = errorOf(yield* call(client, "flotta_work_today", { from: "18:00" }))
          assert.deepStrictEqual(half, {
            _tag: "InvalidSchedule",
            message: "invalid to: give both from and to (a window such as 09:00 to 17:00), or neither"
          })
          const past = yield* call(client, "flotta_work_on", { date: "2025-03-01" })
          assert.deepStrictEqual(errorOf(past), {
            _tag: "InvalidSchedule",
            message: "invalid date: 2025-03-01 is in the past (today is 2025-03-03)"
          })
          assert.match(text(past), /flotta_schedule_status shows today's windows/)
          const over = errorOf(yield* call(client, "flotta_work_today", { from: "08:00", to: "09:00" }))
          assert.strictEqual(over._tag, "InvalidSchedule")
          assert.match(over.message, /already over/)
          assert.strictEqual(
            errorOf(yield* call(client, "flotta_work_today", { from: "25:00", to: "26:00" }))._tag,
            "InvalidSchedule"
          )

          const unknown = yield* call(client, "flotta_run_routine", { name: "nope" })
          assert.deepStrictEqual(errorOf(unknown), {
            _tag: "RoutineNotFound",
            message: "no routine named \"nope\" (routines: nudge, stuck, survey)"
          })
          assert.match(text(unknown), /Call flotta_schedule_status to see the configured routines/)
          assert.match(text(yield* call(client, "flotta_scan_now", { cwd: "" })), /cwd/)
        })))

    it.scoped("without a scheduler every steering tool answers SchedulerNotEnabled", () =>
      Effect.gen(function*() {
        const client = yield* Effect.flatMap(handler(), (h) => connect(h.fetch, era))
        const args: Record<string, Record<string, unknown>> = {
          flotta_keep_going: { minutes: 30 },
          flotta_work_today: { from: "18:00", to: "20:00" },
          flotta_work_on: { date: "2030-01-05", from: "10:00", to: "12:00" },
          flotta_run_routine: { name: "nudge" },
          flotta_scan_now: { focus: "docs" },
          flotta_findings: { limit: 5 }
        }
        for (const name of STEERING_TOOLS) {
          const result = yield* call(client, name, args[name] ?? {})
          assert.deepStrictEqual(errorOf(result), {
            _tag: "SchedulerNotEnabled",
            message: "the scheduler is not enabled: add a `schedule` section to the config"
          }, name)
          assert.match(text(result), /^SchedulerNotEnabled: .*`flotta serve`.*`flotta mcp` over stdio never runs one/)
        }
      }).pipe(Effect.provide(fleet())))
  })
}
