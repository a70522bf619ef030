/**
 * What a fire does, by action: a scan and its findings, a dispatch of new tasks to a run template, and a turn to a
 * standing session. Under TestClock, over a real report log and a test double of the fleet's operations.
 */
import { assert, describe } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { TASKS_JSON_SCHEMA } from "../src/Scheduler.js"
import { readFindings } from "../src/Steering.js"
import {
  entries,
  failureOf,
  fireResults,
  HOUR,
  scanningFleet,
  setTime,
  start,
  startUtc,
  template,
  test,
  UTC
} from "./support.js"

describe("scans and findings", () => {
  const task = (title: string, detail = `about ${title}`) => ({ title, detail })

  test("a scan is a bounded read-only run with the tasks schema; its findings are recorded and read back", () =>
    Effect.gen(function*() {
      yield* setTime("2025-03-03T09:00:00Z")
      let found = [task("Fix the README."), { ...task("Add tests"), priority: "high" }]
      const fleet = scanningFleet(() => found, 0.05)
      const { reports, steering } = yield* start({
        schedule: UTC,
        routines: [{ name: "docs-scan", action: "scan", every: { dailyAt: "10:00" }, focus: "docs", maxBudgetUsd: 0.5 }]
      }, fleet)
      yield* TestClock.adjust("1 hour")
      const options = fleet.runs[0]!
      assert.deepInclude(options, { permission: "read_only", jsonSchema: TASKS_JSON_SCHEMA, maxBudgetUsd: 0.5 })
      assert.match(options.appendSystemPrompt!, /change nothing[\s\S]*Focus on: docs/)
      assert.match(options.prompt!, /Focus on: docs/)
      assert.match(options.name!, /^docs-scan-[0-9a-f]{8}$/)
      found = [task("  fix  the readme "), task("Bump deps")]
      const second = yield* steering.runRoutine("docs-scan")
      assert.deepStrictEqual(second.tasks!.map((t) => t.key), ["fix the readme", "bump deps"])
      const findings = yield* readFindings(reports)
      assert.deepStrictEqual(findings.map((f) => [f.title, f.sightings, f.routine]), [
        ["  fix  the readme ", 2, "docs-scan"],
        ["Bump deps", 1, "docs-scan"],
        ["Add tests", 1, "docs-scan"]
      ])
      assert.strictEqual(findings[2]!.priority, "high")
      assert.strictEqual(findings[0]!.firstFoundAt, "2025-03-03T10:00:00.000Z")
    }))

  test("a scan whose output is not a task list fails, and the failure is recorded", () =>
    Effect.gen(function*() {
      const { steering } = yield* startUtc("2025-03-03T09:00:00Z", [
        { name: "garbled", action: "scan", every: { intervalMs: HOUR }, prompt: "TASKS [{\"title\": 5}]" },
        { name: "failing", action: "scan", every: { intervalMs: HOUR }, prompt: "FAIL" }
      ])
      const garbled = yield* steering.runRoutine("garbled")
      assert.isFalse(garbled.ok)
      assert.strictEqual(garbled.error!._tag, "InvalidScanOutput")
      assert.match(garbled.error!.message, /output\.tasks\[0\]\.title: expected a string, got 5/)
      assert.closeTo(garbled.costUsd, 0.1, 1e-9)
      const failing = yield* steering.runRoutine("failing")
      assert.deepStrictEqual(failing.error, {
        _tag: "InvalidSpec",
        message: "invalid spec at prompt: the fake was told to fail"
      })
      assert.deepStrictEqual((yield* fireResults).map((r) => r.ok), [false, false])
    }))

  test("scanNow fires an ad-hoc scan even when paused and outside hours; bad options are InvalidSpec", () =>
    Effect.gen(function*() {
      const { steering } = yield* startUtc("2025-03-08T22:00:00Z")
      yield* steering.pause
      const outcome = yield* steering.scanNow({ prompt: "TASKS [{\"title\": \"One\", \"detail\": \"d\"}]", focus: "x" })
      assert.deepInclude(outcome, { ok: true, routine: null, action: "scan", trigger: "manual" })
      assert.deepStrictEqual(outcome.tasks, [{ title: "One", detail: "d", key: "one" }])
      const error = yield* failureOf(steering.scanNow({ maxBudgetUsd: -1 }))
      assert.strictEqual(error._tag, "InvalidSpec")
      assert.match(error.message, /scanNow\.maxBudgetUsd/)
      const unknown = yield* failureOf(steering.runRoutine("nope"))
      assert.strictEqual(unknown.message, "no routine named \"nope\" (no routines are configured)")
    }))
})

describe("dispatch_scan", () => {
  const task = (title: string) => ({ title, detail: `do ${title}` })

  const dispatching = (maxDispatch: number, extra: Record<string, unknown> = {}) => {
    let found: Array<{ title: string; detail: string }> = []
    const fleet = scanningFleet(() => found, 0.1)
    fleet.templates.set(
      "fixer",
      template({ name: "fixer", worktree: true, permission: { allow: ["Read", "Edit"] }, prompt: "FIX" })
    )
    fleet.templates.set("danger", template({ name: "danger", permission: "full", prompt: "FIX" }))
    const config = {
      schedule: UTC,
      routines: [{
        name: "loop",
        action: "dispatch_scan",
        every: { intervalMs: HOUR },
        template: "fixer",
        maxDispatch,
        ...extra
      }]
    }
    return { fleet, config, setFound: (tasks: Array<{ title: string; detail: string }>) => (found = tasks) }
  }

  test("runs at most maxDispatch new tasks and never one already found or dispatched", () =>
    Effect.gen(function*() {
      yield* setTime("2025-03-03T09:00:00Z")
      const { config, fleet, setFound } = dispatching(2)
      const { steering } = yield* start(config, fleet)
      setFound([task("A"), task("B"), task("C")])
      const first = yield* steering.runRoutine("loop")
      assert.deepStrictEqual(first.dispatched!.map((d) => [d.title, d.ok]), [["A", true], ["B", true]])
      assert.deepStrictEqual(first.deferred, [{ title: "C", key: "c", reason: "maxDispatch (2)" }])
      const dispatchedRun = fleet.runs[1]!
      assert.strictEqual(dispatchedRun.template, "fixer")
      assert.strictEqual(dispatchedRun.prompt, "FIX\n\nTask: A\n\ndo A")
      assert.isUndefined(dispatchedRun.permission)
      // A plain scan finds D: found, so never dispatched.
      setFound([task("D")])
      yield* steering.scanNow({})
      setFound([task("A"), task("  b!! "), task("C"), task("D"), task("E")])
      const second = yield* steering.runRoutine("loop")
      assert.deepStrictEqual(second.dispatched!.map((d) => d.title), ["C", "E"])
      assert.deepStrictEqual(second.deferred, [])
      const third = yield* steering.runRoutine("loop")
      assert.deepStrictEqual(third.dispatched, [])
      assert.strictEqual((yield* entries("dispatch")).length, 4)
    }))

  test("the fire's budget bounds each dispatched run and stops the rest", () =>
    Effect.gen(function*() {
      yield* setTime("2025-03-03T09:00:00Z")
      const { config, fleet, setFound } = dispatching(3, { maxBudgetUsd: 0.25 })
      const { steering } = yield* start(config, fleet)
      setFound([task("A"), task("B"), task("C")])
      const outcome = yield* steering.runRoutine("loop")
      assert.deepStrictEqual(fleet.runs.map((r) => Number(r.maxBudgetUsd!.toFixed(4))), [0.25, 0.15, 0.05])
      assert.deepStrictEqual(outcome.dispatched!.map((d) => d.title), ["A", "B"])
      assert.deepStrictEqual(outcome.deferred, [{ title: "C", key: "c", reason: "budget" }])
      // C was left over, so a later fire may still take it.
      const later = yield* steering.runRoutine("loop")
      assert.deepStrictEqual(later.dispatched!.map((d) => d.title), ["C"])
    }))

  test("a template that can write without a worktree is refused before anything is spent", () =>
    Effect.gen(function*() {
      yield* setTime("2025-03-03T09:00:00Z")
      const { config, fleet } = dispatching(1)
      const routines = [
        { ...config.routines[0], name: "unsafe", template: "danger" },
        { ...config.routines[0], name: "missing", template: "ghost" },
        { name: "unsafe-run", action: "run", every: { intervalMs: HOUR }, template: "danger" }
      ]
      const { steering } = yield* start({ ...config, routines }, fleet)
      const outcomes = yield* Effect.forEach(["unsafe", "missing", "unsafe-run"], steering.runRoutine)
      assert.deepStrictEqual(outcomes.map((o) => [o.ok, o.error!._tag]), [
        [false, "RoutineRefused"],
        [false, "InvalidSpec"],
        [false, "RoutineRefused"]
      ])
      assert.match(outcomes[0]!.error!.message, /run template "danger" can write but has no worktree/)
      assert.deepStrictEqual(fleet.runs, [])
    }))
})

describe("prompt routines", () => {
  test("a prompt routine sends a turn to a standing session and waits for it", () =>
    Effect.gen(function*() {
      const { fleet, steering } = yield* startUtc("2025-03-03T09:00:00Z", [{
        name: "nudge",
        action: "prompt",
        every: { intervalMs: HOUR },
        agent: "scout",
        prompt: "status?"
      }])
      yield* TestClock.adjust("1 hour")
      assert.deepStrictEqual(fleet.prompts, [{ agent: "scout", text: "status?" }])
      const [result] = yield* fireResults
      assert.deepInclude(result, { ok: true, turnId: "turn-1", text: "reply to turn-1", costUsd: 0.1 })
      assert.strictEqual((yield* steering.status).routines[0]!.lastFire!.ok, true)
    }))
})
