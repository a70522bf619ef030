import { assert, describe, it } from "@effect/vitest"
import * as Spec from "@flotta/core/Spec"
import * as Testing from "@flotta/core/Testing"
import { Effect, Either, Layer, Option } from "effect"
import { SchedulerNotEnabled } from "../src/Errors.js"
import * as Routine from "../src/Routine.js"
import { Scheduler } from "../src/Scheduler.js"
import * as SchedulerConfig from "../src/SchedulerConfig.js"
import { entries, UTC_WEEK } from "./support.js"

const schedule = { timezone: "utc", hours: UTC_WEEK }

const rejectedOf = (routines: ReadonlyArray<unknown>) =>
  Routine.readRoutines(routines).rejected.map(({ message, path }) => `${path}: ${message}`)

describe("routines", () => {
  it("reads every action with its defaults", () => {
    const { rejected, routines } = Routine.readRoutines([
      { name: "morning-scan", action: "scan", every: { dailyAt: "09:00" }, focus: "bugs", maxBudgetUsd: 0.5 },
      { name: "work-loop", action: "dispatch_scan", every: { intervalMs: 1_800_000 }, template: "issue-runner" },
      { name: "nightly", action: "run", every: { dailyAt: "18:00" }, template: "tidy", prompt: "Tidy up." },
      { name: "ping", action: "prompt", every: { intervalMs: 3_600_000 }, agent: "scout", prompt: "status?" },
      {
        name: "inline-writer",
        action: "run",
        every: { intervalMs: 3_600_000 },
        prompt: "Fix it.",
        permission: "full",
        worktree: true
      }
    ])
    assert.deepStrictEqual(rejected, [])
    assert.deepStrictEqual(routines.map((r) => r.name), [
      "morning-scan",
      "work-loop",
      "nightly",
      "ping",
      "inline-writer"
    ])
    assert.deepStrictEqual(routines[0]!.every, { dailyAt: "09:00" })
    assert.strictEqual((routines[1] as Routine.DispatchRoutine).maxDispatch, 1)
  })

  it("skips a bad routine with the path of the bad field, and keeps the good ones", () => {
    const { rejected, routines } = Routine.readRoutines([
      { name: "good", action: "scan", every: { intervalMs: 60_000 } },
      { name: "typo", action: "scna", every: { intervalMs: 60_000 } },
      { name: "bad-every", action: "scan", every: { dailyAt: "9am" } }
    ])
    assert.deepStrictEqual(routines.map((r) => r.name), ["good"])
    assert.deepStrictEqual(rejected.map((r) => [r.entry, r.name, r.path]), [
      ["routines[1]", "typo", "routines[1].action"],
      ["routines[2]", "bad-every", "routines[2].every.dailyAt"]
    ])
  })

  it("says clearly what is wrong", () => {
    assert.deepStrictEqual(
      rejectedOf([
        "scan everything",
        { name: "Bad Name", action: "scan", every: { intervalMs: 60_000 } },
        { name: "not-triggered", action: "scan", every: { triggered: false } },
        { name: "both", action: "scan", every: { intervalMs: 60_000, dailyAt: "09:00" } },
        { name: "too-fast", action: "scan", every: { intervalMs: 5 } },
        { name: "weekly", action: "scan", every: { weekly: "mon" } },
        { name: "typo-field", action: "dispatch_scan", every: { intervalMs: 60_000 }, template: "t", maxDispach: 3 },
        { name: "no-template", action: "dispatch_scan", every: { intervalMs: 60_000 } },
        { name: "no-prompt", action: "prompt", every: { intervalMs: 60_000 }, agent: "scout" },
        { name: "cheap", action: "scan", every: { intervalMs: 60_000 }, dailyBudgetUsd: -1 }
      ]),
      [
        "routines[0]: expected an object describing a routine",
        "routines[1].name: a routine name: 1 to 63 characters: a-z, 0-9, '.', '_' or '-', starting with a letter or digit",
        "routines[2].every.triggered: true (or leave every out): fired only when triggered",
        "routines[3].every: expected { \"intervalMs\": <ms of working time> }, { \"dailyAt\": \"HH:MM\" } or " +
        "{ \"triggered\": true } (or no every): give exactly one of them",
        "routines[4].every.intervalMs: a whole number of milliseconds, at least 1000",
        "routines[5].every.weekly: unknown cadence: expected { \"intervalMs\": <ms of working time> }, " +
        "{ \"dailyAt\": \"HH:MM\" } or { \"triggered\": true } (or no every)",
        "routines[6].maxDispach: unknown field; did you mean \"maxDispatch\"?",
        "routines[7].template: is missing",
        "routines[8].prompt: is missing",
        "routines[9].dailyBudgetUsd: a positive number of dollars"
      ]
    )
  })

  it("refuses write authority that does not come with a worktree", () => {
    assert.deepStrictEqual(
      rejectedOf([
        { name: "writer", action: "run", every: { intervalMs: 60_000 }, prompt: "Fix it.", permission: "full" },
        {
          name: "editor",
          action: "run",
          every: { intervalMs: 60_000 },
          prompt: "Fix it.",
          permission: { allow: ["Read", "Edit"] },
          worktree: false
        },
        { name: "escalate", action: "run", every: { intervalMs: 60_000 }, template: "t", permission: "full" },
        { name: "unisolate", action: "run", every: { intervalMs: 60_000 }, template: "t", worktree: false },
        { name: "nothing", action: "run", every: { intervalMs: 60_000 } },
        {
          name: "turn-budget",
          action: "prompt",
          every: { intervalMs: 60_000 },
          agent: "a",
          prompt: "x",
          maxBudgetUsd: 1
        }
      ]),
      [
        "routines[0].permission: an inline write permission without a worktree is refused: name a run template with a worktree (template: \"...\"), or set worktree: true",
        "routines[1].permission: an inline write permission without a worktree is refused: name a run template with a worktree (template: \"...\"), or set worktree: true",
        "routines[2].permission: a run routine with a template takes its permission from the template",
        "routines[3].worktree: a run routine with a template takes its worktree from the template",
        "routines[4].prompt: a run routine needs a prompt (or a template)",
        "routines[5].maxBudgetUsd: a turn of a standing session cannot be bounded per fire: use dailyBudgetUsd for a prompt routine"
      ]
    )
  })

  it("given the declared fleet, skips a routine naming a run template or session it does not declare", () => {
    const fleet = Spec.readFleet({
      agents: [
        { name: "scout" },
        { name: "issue-runner", lifecycle: "run", worktree: true, permission: "full" },
        { name: "filer", lifecycle: "run", permision: "full" }
      ]
    })
    const { rejected, routines } = Routine.readRoutines(
      [
        { name: "fix-ci", action: "run", template: "issue-runner" },
        { name: "typo", action: "run", template: "issue-runer" },
        { name: "wrong-kind", action: "dispatch_scan", template: "scout" },
        { name: "skipped-template", action: "dispatch_scan", template: "filer" },
        { name: "check-in", action: "prompt", agent: "scout", prompt: "status?" },
        { name: "prompt-a-template", action: "prompt", agent: "issue-runner", prompt: "status?" },
        { name: "ghost", action: "prompt", agent: "ghost", prompt: "status?" },
        { name: "inline", action: "run", prompt: "Read the README." }
      ],
      "routines",
      fleet
    )
    assert.deepStrictEqual(routines.map((r) => r.name), ["fix-ci", "check-in", "inline"])
    assert.deepStrictEqual(rejected.map(({ message, path }) => `${path}: ${message}`), [
      "routines[1].template: no run template named \"issue-runer\" in agents; did you mean \"issue-runner\"?",
      "routines[2].template: \"scout\" is a session; this needs a run template (an agent entry with lifecycle: " +
      "\"run\")",
      "routines[3].template: the run template \"filer\" is skipped itself (agents[2] is invalid)",
      "routines[5].agent: \"issue-runner\" is a run template; this needs a session (an agent entry with " +
      "lifecycle: \"session\")",
      "routines[6].agent: no session named \"ghost\" in agents (there: scout)"
    ])
    // Without the fleet (a library's own routines), names are not checked here: the fire says so.
    assert.deepStrictEqual(Routine.readRoutines([{ name: "x", action: "run", template: "nope" }]).rejected, [])
  })

  it("says what is wrong with a routine a trigger names", () => {
    const config = Either.getOrThrow(SchedulerConfig.read({
      schedule,
      routines: [{ name: "fix-ci", action: "scan" }, { name: "broken", action: "scan", every: "daily" }]
    }))
    assert.isUndefined(SchedulerConfig.routineProblem(Option.getOrUndefined(config), "fix-ci"))
    assert.strictEqual(
      SchedulerConfig.routineProblem(Option.getOrUndefined(config), "fix-cl"),
      "no routine named \"fix-cl\" in routines; did you mean \"fix-ci\"?"
    )
    assert.strictEqual(
      SchedulerConfig.routineProblem(Option.getOrUndefined(config), "broken"),
      "the routine \"broken\" is skipped itself (routines[1] is invalid)"
    )
    assert.strictEqual(
      SchedulerConfig.routineProblem(undefined, "fix-ci"),
      "names the routine \"fix-ci\", but there is no schedule section, so no routine runs"
    )
  })

  it("skips a duplicate name", () => {
    assert.deepStrictEqual(
      rejectedOf([
        { name: "twice", action: "scan", every: { intervalMs: 60_000 } },
        { name: "twice", action: "scan", every: { dailyAt: "10:00" } }
      ]),
      ["routines[1].name: duplicate name \"twice\" (routines[0] has it already)"]
    )
  })
})

describe("the schedule section", () => {
  const issues = (section: unknown) => {
    const read = SchedulerConfig.readSchedule(section)
    return Either.isLeft(read) ? read.left.map((i) => `${i.path}: ${i.message}`) : []
  }

  it("reads the three kinds of time zone", () => {
    const zoneOf = (timezone: unknown) => Either.getOrThrow(SchedulerConfig.readSchedule({ timezone, hours: {} })).zone
    assert.deepStrictEqual(zoneOf("utc"), { _tag: "Utc" })
    assert.deepStrictEqual(zoneOf({ offsetSeconds: -25200 }), { _tag: "Offset", seconds: -25200 })
    assert.deepStrictEqual(zoneOf("America/Los_Angeles"), { _tag: "Zone", name: "America/Los_Angeles" })
    const settings = Either.getOrThrow(SchedulerConfig.readSchedule({ timezone: "utc", hours: UTC_WEEK }))
    assert.strictEqual(settings.tickMs, 60_000)
    assert.strictEqual(settings.start, "working")
    assert.deepStrictEqual(settings.hours.mon, [{ start: 540, end: 1020 }])
  })

  it("reports every bad field with its path", () => {
    assert.deepStrictEqual(
      issues({
        timezone: "Mars/Olympus_Mons",
        hours: { monday: [["09:00", "17:00"]], tue: [["09:00", "25:00"]], wed: "09:00-17:00" },
        tickMs: 10,
        start: "sleeping",
        tz: "utc"
      }),
      [
        "schedule.tz: unknown field; expected one of timezone, hours, tickMs, start",
        "schedule.timezone: unknown time zone \"Mars/Olympus_Mons\": use \"utc\", { \"offsetSeconds\": -25200 }, or an IANA name such as \"America/Los_Angeles\"",
        "schedule.hours.monday: unknown day: use mon, tue, wed, thu, fri, sat, sun",
        "schedule.hours.tue[0]: end \"25:00\" is not a time of day (HH:MM, 00:00 to 24:00)",
        "schedule.hours.wed: expected a list of windows: [[\"09:00\", \"17:00\"]]",
        "schedule.tickMs: a whole number of milliseconds, at least 1000",
        "schedule.start: expected \"working\" (follow the schedule) or \"paused\""
      ]
    )
    assert.deepStrictEqual(issues({ timezone: { offsetSeconds: 99_999 } }), [
      "schedule.timezone.offsetSeconds: whole seconds east of UTC, from -50400 to 50400",
      "schedule.hours: required: working windows per weekday, e.g. { \"mon\": [[\"09:00\", \"17:00\"]] }"
    ])
  })

  it("no schedule section means no scheduler; a bad one is an InvalidSpec", () => {
    assert.deepStrictEqual(SchedulerConfig.read({ agents: [] }), Either.right(Option.none()))
    const bad = SchedulerConfig.read({ schedule: { hours: {} } })
    assert.isTrue(Either.isLeft(bad))
    if (Either.isLeft(bad)) {
      assert.strictEqual(bad.left._tag, "InvalidSpec")
      assert.strictEqual(bad.left.path, "schedule.timezone")
    }
    const good = SchedulerConfig.read({
      schedule,
      routines: [{ name: "x", action: "scan", every: { dailyAt: "9am" } }]
    })
    assert.isTrue(Either.isRight(good) && Option.isSome(good.right) && good.right.value.rejected.length === 1)
  })
})

describe("the layers", () => {
  // The engine over the in-memory Claude: no process, TestClock the only clock.
  const Engine = Testing.layer()

  it.scoped("without a schedule section the layer is empty: no scheduler, nothing is recorded", () =>
    Effect.gen(function*() {
      yield* Layer.build(Scheduler.layer(undefined))
      assert.isTrue(Option.isNone(yield* Effect.serviceOption(Scheduler)))
      assert.deepStrictEqual(yield* Effect.flip(Scheduler.enabled), new SchedulerNotEnabled())
      assert.deepStrictEqual(yield* entries(), [])
    }).pipe(Effect.provide(Engine)))

  it.effect("a bad schedule is InvalidSpec with the path of the bad field", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(SchedulerConfig.required({ schedule: { timezone: "nowhere", hours: {} } }))
      assert.strictEqual(error._tag, "InvalidSpec")
      assert.match(error.message, /schedule\.timezone: unknown time zone "nowhere"/)
      const missing = yield* Effect.flip(SchedulerConfig.required({ agents: [] }))
      assert.strictEqual(missing.path, "schedule")
    }))
})
