/**
 * What `flotta schedule ...` and `flotta findings` show a person: the compact status view (times in the
 * schedule's own zone), an override, a fire's outcome and the findings. (Against a running serve:
 * test/cli-schedule.test.ts.)
 */
import { assert, describe, it } from "@effect/vitest"
import type { Finding, FireOutcome, SchedulerStatus } from "@flotta/scheduler/Steering"
import * as ScheduleViews from "../src/ScheduleViews.js"

/** Monday 2025-03-10 09:15 in Los Angeles (UTC-7 since the clocks sprang forward on the 9th). */
const status = (overrides: Partial<SchedulerStatus> = {}): SchedulerStatus => ({
  mode: "working",
  working: true,
  reason: "hours 08:47-17:00",
  timezone: "America/Los_Angeles",
  now: "2025-03-10T16:15:00.000Z",
  localTime: "2025-03-10T09:15:00-07:00",
  today: {
    date: "2025-03-10",
    weekday: "mon",
    windows: [
      {
        start: "08:47",
        end: "17:00",
        from: "2025-03-10T15:47:00.000Z",
        until: "2025-03-11T00:00:00.000Z",
        source: "hours"
      },
      {
        start: "09:15",
        end: "18:00",
        from: "2025-03-10T16:15:00.000Z",
        until: "2025-03-11T01:00:00.000Z",
        source: "keep_going"
      }
    ]
  },
  overrides: [{
    id: "override-1a2b3c4d",
    kind: "keep_going",
    from: "2025-03-10T16:15:00.000Z",
    until: "2025-03-11T01:00:00.000Z",
    minutes: 60
  }],
  running: [{
    fireId: "fire-0a0b0c0d",
    routine: "survey",
    action: "scan",
    trigger: "manual",
    since: "2025-03-10T16:14:00.000Z"
  }],
  routines: [
    {
      name: "survey",
      action: "scan",
      every: { dailyAt: "09:00" },
      state: "running",
      nextFireAt: "2025-03-11T16:00:00.000Z",
      spentTodayUsd: 0.25,
      maxBudgetUsd: 0.5,
      dailyBudgetUsd: 2,
      railedUntil: null,
      lastFire: { fireId: "fire-11111111", at: "2025-03-10T16:00:30.000Z", ok: true, costUsd: 0.25 }
    },
    {
      name: "work-loop",
      action: "dispatch_scan",
      every: { intervalMs: 5_400_000 },
      state: "idle",
      nextFireAt: null,
      workedMs: 1_680_000,
      spentTodayUsd: 0,
      maxBudgetUsd: null,
      dailyBudgetUsd: null,
      railedUntil: null,
      lastFire: null
    }
  ],
  rejected: [{ path: "routines[2].every", message: "expected { intervalMs } or { dailyAt }" }],
  nextChange: "2025-03-11T01:00:00.000Z",
  ...overrides
})

describe("the schedule views", () => {
  it("status: mode, working and why, today's windows, overrides, fires in flight, routines and spend", () => {
    assert.strictEqual(
      ScheduleViews.renderStatus(status()),
      [
        "scheduler: working",
        "now: working (hours 08:47-17:00)",
        "time: 2025-03-10 09:15 America/Los_Angeles; next change at 18:00",
        "today: mon 2025-03-10, 08:47-17:00 (hours), 09:15-18:00 (keep going)",
        "overrides: keep going until 18:00 (+60 min)",
        "running: survey (scan, manual), fire fire-0a0b0c0d since 09:14",
        "routines:",
        "  survey     scan           daily 09:00       running  next 2025-03-11 09:00  last ok 09:00 ($0.2500)  " +
        "today $0.2500 of $2",
        "  work-loop  dispatch_scan  every 1 h 30 min  idle     next -                 last -                   " +
        "today $0.0000",
        "spend today: $0.2500",
        "skipped routine: routines[2].every: expected { intervalMs } or { dailyAt }"
      ].join("\n")
    )
  })

  it("status when paused, outside hours, with no routines", () => {
    const paused = ScheduleViews.renderStatus(status({
      mode: "paused",
      working: false,
      reason: "paused",
      overrides: [],
      running: [],
      routines: [],
      rejected: [],
      nextChange: null,
      today: { date: "2025-03-09", weekday: "sun", windows: [] }
    }))
    assert.strictEqual(
      paused,
      [
        "scheduler: paused (no routine fires until `flotta schedule resume`)",
        "now: not working (paused)",
        "time: 2025-03-10 09:15 America/Los_Angeles",
        "today: sun 2025-03-09, no working hours",
        "routines: none",
        "spend today: $0.0000"
      ].join("\n")
    )
  })

  it("an override in the schedule's local time, and what it made of now", () => {
    const s = status({ working: false, reason: "stopped for today" })
    assert.strictEqual(
      ScheduleViews.renderSteered({
        override: {
          id: "override-2",
          kind: "stop_for_today",
          from: "2025-03-10T16:15:00.000Z",
          until: "2025-03-11T07:00:00.000Z"
        },
        status: s
      }),
      "stopped for today, until 2025-03-11 00:00\nnow: not working (stopped for today)"
    )
    assert.strictEqual(
      ScheduleViews.renderSteered({
        override: {
          id: "override-3",
          kind: "work_on",
          from: "2025-03-15T17:00:00.000Z",
          until: "2025-03-15T19:00:00.000Z",
          date: "2025-03-15",
          window: { start: "10:00", end: "12:00" }
        },
        status: status()
      }).split("\n")[0],
      "work on 2025-03-15 10:00-12:00"
    )
  })

  it("zones as the status names them: utc, a fixed offset, an IANA name", () => {
    assert.deepStrictEqual(ScheduleViews.zoneOf("utc"), { _tag: "Utc" })
    assert.deepStrictEqual(ScheduleViews.zoneOf("-07:00"), { _tag: "Offset", seconds: -25_200 })
    assert.deepStrictEqual(ScheduleViews.zoneOf("+05:30"), { _tag: "Offset", seconds: 19_800 })
    assert.deepStrictEqual(ScheduleViews.zoneOf("Europe/Rome"), { _tag: "Zone", name: "Europe/Rome" })
  })

  it("a fire's outcome: how it ended, its runs, tasks, dispatches and reply", () => {
    const outcome: FireOutcome = {
      fireId: "fire-abcdef01",
      routine: "work-loop",
      action: "dispatch_scan",
      trigger: "manual",
      startedAt: "2025-03-10T16:15:00.000Z",
      finishedAt: "2025-03-10T16:16:30.000Z",
      ok: true,
      costUsd: 0.0421,
      runs: ["work-loop-1", "fixer-2"],
      tasks: [
        { title: "Fix the flaky test", detail: "times out", priority: "high", key: "fix the flaky test" },
        { title: "Add a changelog", detail: "missing", key: "add a changelog" }
      ],
      dispatched: [{ title: "Add a changelog", key: "add a changelog", run: "fixer-2", ok: true, costUsd: 0.02 }],
      deferred: [{ title: "Fix the flaky test", key: "fix the flaky test", reason: "maxDispatch" }]
    }
    assert.strictEqual(
      ScheduleViews.renderOutcome(outcome),
      [
        "routine work-loop: fire fire-abcdef01 succeeded in 2 min ($0.0421)",
        "runs: work-loop-1, fixer-2",
        "tasks:",
        "  [high] Fix the flaky test",
        "  Add a changelog",
        "dispatched: Add a changelog → run fixer-2 ok",
        "deferred: Fix the flaky test (maxDispatch)"
      ].join("\n")
    )
    const { deferred: _f, dispatched: _d, tasks: _t, ...scan } = outcome
    const failed = ScheduleViews.renderOutcome({
      ...scan,
      routine: null,
      action: "scan",
      finishedAt: "2025-03-10T16:15:00.450Z",
      ok: false,
      costUsd: 0,
      runs: [],
      error: { _tag: "TurnFailed", message: "the API answered 529" }
    })
    assert.strictEqual(
      failed,
      "scan: fire fire-abcdef01 failed in 450 ms ($0.0000)\nerror: TurnFailed: the API answered 529"
    )
  })

  it("findings, newest first, with who found them and how often", () => {
    const finding = (overrides: Partial<Finding>): Finding => ({
      title: "Fix the README",
      detail: "It is stale.",
      key: "fix the readme",
      routine: "survey",
      fireId: "fire-1",
      foundAt: "2025-03-10T16:00:30.000Z",
      firstFoundAt: "2025-03-08T16:00:30.000Z",
      sightings: 3,
      seq: 40,
      ...overrides
    })
    assert.strictEqual(ScheduleViews.renderFindings([]), "no findings yet")
    assert.strictEqual(
      ScheduleViews.renderFindings([
        finding({ priority: "high" }),
        finding({ title: "Add a test", detail: "", routine: null, sightings: 1 })
      ]),
      [
        "[high] Fix the README (survey, seen 3 times, last 2025-03-10 16:00 UTC)",
        "    It is stale.",
        "Add a test (ad-hoc scan, seen once, last 2025-03-10 16:00 UTC)"
      ].join("\n")
    )
  })

  it("intervals in words", () => {
    assert.deepStrictEqual(
      [450, 4200, 60_000, 5_400_000, 7_200_000].map(ScheduleViews.describeInterval),
      ["450 ms", "4.2 s", "1 min", "1 h 30 min", "2 h"]
    )
  })
})
