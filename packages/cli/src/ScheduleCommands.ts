/**
 * `flotta schedule ...` and `flotta findings`: steering the scheduler of a running `flotta serve` over its MCP
 * endpoint (the steering tools), with the connection flags of the other client commands (`--url`, `--token`,
 * `--json`, `--config`). Each prints a compact view for a person, or with `--json` the server's structured
 * answer. A serve that runs no scheduler answers SchedulerNotEnabled, which ends the command with its own
 * message and exit code 12.
 *
 * `schedule run` and `schedule scan` wait for the fire's outcome: the tool waits at most 45 s per call, and a
 * fire still going after that is followed through the report log until its `fire_result` lands.
 */
import { Args, Command } from "@effect/cli"
import * as ReportEvent from "@flotta/core/ReportEvent"
import { FireResult } from "@flotta/mcp/SchedulerTools"
import * as SchedulerEvents from "@flotta/scheduler/SchedulerEvents"
import * as Views from "@flotta/scheduler/SchedulerViews"
import { Array as Arr, Effect, Option, Schema } from "effect"
import * as Answers from "./Answers.js"
import { call, connection, ToolFailed, withClient } from "./Connection.js"
import type { Connection } from "./Connection.js"
import * as Flags from "./Flags.js"
import type { McpClient } from "./McpClient.js"
import * as Output from "./Output.js"
import { nowLine, renderFindings, renderOutcome, renderStatus, renderSteered } from "./ScheduleViews.js"
import * as Shared from "./SharedOptions.js"
import { invalid } from "./SharedOptions.js"

// ------------------------------------------------------------------------------------------------ calls

const NOT_ENABLED = "the serve answering here runs no scheduler (SchedulerNotEnabled): add a `schedule` section " +
  "to its config and restart `flotta serve`"

/** A steering call: SchedulerNotEnabled gets a message of its own (and keeps its exit code). */
const steer = <A, I>(client: McpClient, tool: string, args: Record<string, unknown>, answer: Schema.Schema<A, I>) =>
  call(client, tool, args, answer).pipe(
    Effect.catchIf(
      (e): e is ToolFailed => e._tag === "ToolFailed" && e.error._tag === "SchedulerNotEnabled",
      (e) => Effect.fail(new ToolFailed({ tool, error: e.error, text: NOT_ENABLED }))
    )
  )

type FireAnswer = typeof FireResult.Type

/** A steering answer: the override just added, and the schedule after it. */
const Steered = Schema.Struct({ override: Views.Override, status: Views.SchedulerStatus })
/** The schedule after a pause or a resume. */
const StatusAnswer = Schema.Struct({ status: Views.SchedulerStatus })

/** The findings, newest first. */
const Findings = Schema.Struct({ findings: Schema.Array(Views.Finding) })

/** Follows a fire the tool stopped waiting for, through the report log, until its outcome lands. */
const decodeFireResult = ReportEvent.decodeAs(SchedulerEvents.fireResult)

const followFire = Effect.fn("ScheduleCommands.followFire")(function*(client: McpClient, first: FireAnswer) {
  if (first.done || first.fireId === null) return first
  const fireId = first.fireId
  yield* Output.stderr(`flotta: fire ${fireId} is still running; waiting for its outcome (Ctrl-C stops waiting)`)
  let cursor = 0
  while (true) {
    const page = yield* call(
      client,
      "flotta_reports",
      { agent: "scheduler", kinds: [SchedulerEvents.fireResult.kind], cursor, limit: 500 },
      Answers.Reports
    )
    const outcome = Arr.findFirst(
      page.entries,
      (e) => Option.filter(Option.map(decodeFireResult(e), (r) => r.data), (o) => o.fireId === fireId)
    )
    if (Option.isSome(outcome)) {
      const message = renderOutcome(outcome.value).split("\n")[0]!
      return { ...first, done: true, outcome: outcome.value, message } satisfies FireAnswer
    }
    cursor = page.next
    if (page.entries.length < 500) yield* Effect.sleep("1 second")
  }
})

/** A fire that failed ends the command with the failure's own exit code, after its outcome is printed. */
const failedFire = (tool: string, answer: FireAnswer) =>
  answer.outcome === undefined || answer.outcome.ok
    ? Effect.void
    : Effect.fail(
      new ToolFailed({
        tool,
        error: answer.outcome.error ?? { _tag: "FireFailed", message: "the fire failed" },
        text: `fire ${answer.outcome.fireId} failed` +
          (answer.outcome.error === undefined ? "" : `: ${answer.outcome.error._tag}: ${answer.outcome.error.message}`)
      })
    )

/** Runs a manual fire to its outcome and prints it (or, with --json, the answer). */
const fire = (flags: Connection, tool: string, args: Record<string, unknown>) =>
  Effect.gen(function*() {
    let answer: FireAnswer | undefined
    yield* withClient(
      flags,
      (client) =>
        steer(client, tool, { ...args, timeoutSeconds: 45 }, FireResult).pipe(
          Effect.flatMap((first) => followFire(client, first)),
          Effect.tap((a) => Effect.sync(() => (answer = a)))
        ),
      (a) => (a.outcome === undefined ? a.message : renderOutcome(a.outcome))
    )
    if (answer !== undefined) yield* failedFire(tool, answer)
  })

/** Runs a steering tool and prints its answer. */
const simple = <A, I>(
  flags: Connection,
  tool: string,
  args: Record<string, unknown>,
  answer: Schema.Schema<A, I>,
  render: (value: A) => string
) => withClient(flags, (client) => steer(client, tool, args, answer), render)

// ------------------------------------------------------------------------------------------------ commands

const ClockText = Schema.String.pipe(Schema.pattern(/^\d{2}:\d{2}$/))
const timeOfDay = (name: string, description: string) =>
  Flags.argument(name, description, ClockText, "is not a local time of day HH:MM, such as 09:00 or 17:30")

/** `FROM TO`, both or neither. */
const windowArgs = {
  from: timeOfDay("from", "The window's start, local time in the schedule's zone (HH:MM); give TO too.").pipe(
    Args.optional
  ),
  to: timeOfDay("to", "The window's end (HH:MM; 24:00 is midnight).").pipe(Args.optional)
}

const windowOf = (flags: { readonly from: Option.Option<string>; readonly to: Option.Option<string> }) =>
  Option.isSome(flags.from) && Option.isSome(flags.to)
    ? Effect.succeed({ from: flags.from.value, to: flags.to.value })
    : Option.isNone(flags.from) && Option.isNone(flags.to)
    ? Effect.succeed({})
    : Effect.fail(invalid("<to>", "give both FROM and TO (such as 09:00 17:00), or neither"))

const status = Command.make(
  "status",
  connection,
  (flags) => simple(flags, "flotta_schedule_status", {}, Views.SchedulerStatus, renderStatus)
).pipe(
  Command.withDescription(
    "The scheduler's status: mode, working now or not and why, today's windows, overrides, routines (next fire, " +
      "last outcome) and the day's spend."
  )
)

const keepGoing = Command.make(
  "keep-going",
  {
    ...connection,
    minutes: Flags.argument(
      "minutes",
      "Minutes of working time to add from now (1 to 1440; default 60); stacks on a keep-going already running.",
      Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 24 * 60)),
      "is not a whole number of minutes from 1 to 1440"
    ).pipe(Args.optional)
  },
  (flags) =>
    simple(flags, "flotta_keep_going", { minutes: Option.getOrElse(flags.minutes, () => 60) }, Steered, renderSteered)
).pipe(
  Command.withDescription("Keep working for MINUTES more (default 60), whatever the hours say; expires by itself.")
)

const workToday = Command.make(
  "work-today",
  { ...connection, ...windowArgs },
  (flags) =>
    Effect.flatMap(windowOf(flags), (window) => simple(flags, "flotta_work_today", window, Steered, renderSteered))
).pipe(
  Command.withDescription(
    "Work today from FROM to TO (local time; default: a usual working day's span), a one-off window."
  )
)

const workOn = Command.make(
  "work-on",
  {
    ...connection,
    date: Flags.argument(
      "date",
      "The local date, YYYY-MM-DD (today or up to a year ahead).",
      Schema.String.pipe(Schema.pattern(/^\d{4}-\d{2}-\d{2}$/)),
      "is not a date YYYY-MM-DD"
    ),
    ...windowArgs
  },
  (flags) =>
    Effect.flatMap(
      windowOf(flags),
      (window) => simple(flags, "flotta_work_on", { date: flags.date, ...window }, Steered, renderSteered)
    )
).pipe(
  Command.withDescription("Work on DATE from FROM to TO (local time; default: a usual working day's span), once.")
)

const pause = Command.make("pause", connection, (flags) =>
  simple(
    flags,
    "flotta_pause",
    {},
    StatusAnswer,
    (v) => `paused: no routine fires and no new work starts until \`flotta schedule resume\`\n${nowLine(v.status)}`
  )).pipe(Command.withDescription("Pause the scheduler: no routine fires (fires in flight finish) until resume."))

const resume = Command.make("resume", connection, (flags) =>
  simple(
    flags,
    "flotta_resume",
    {},
    StatusAnswer,
    (v) => `resumed\n${nowLine(v.status)}`
  )).pipe(
    Command.withDescription("Resume after a pause; also undoes a stop for today and lifts the daily budget rails.")
  )

const stopForToday = Command.make(
  "stop-for-today",
  connection,
  (flags) => simple(flags, "flotta_stop_for_today", {}, Steered, renderSteered)
).pipe(
  Command.withDescription("No more working time today (until midnight); resume or keep-going undo it.")
)

const run = Command.make(
  "run",
  {
    ...connection,
    routine: Flags.nameArgument("routine", "The routine to fire, as `flotta schedule status` lists it.")
  },
  (flags) => fire(flags, "flotta_run_routine", { name: flags.routine })
).pipe(
  Command.withDescription(
    "Fire a routine now (whatever its cadence, the hours or a pause) and print its outcome when it ends."
  )
)

const scan = Command.make(
  "scan",
  {
    ...connection,
    focus: Flags.nonEmpty("focus").pipe(Flags.optional("What to look for, e.g. \"failing tests, stale docs\"."))
  },
  (flags) => fire(flags, "flotta_scan_now", Shared.ifSome("focus", flags.focus))
).pipe(Command.withDescription("Run an ad-hoc scan for actionable work now; its tasks join the findings."))

/** `flotta schedule` alone is `flotta schedule status` (its connection flags come before a subcommand's name). */
const schedule = Command.make("schedule", connection, (flags) =>
  simple(
    flags,
    "flotta_schedule_status",
    {},
    Views.SchedulerStatus,
    renderStatus
  )).pipe(
    Command.withDescription(
      "Steer the scheduler of a running `flotta serve`: status, keep-going, work-today, work-on, pause, resume, " +
        "stop-for-today, run ROUTINE, scan (alone: the status)."
    ),
    Command.withSubcommands([status, keepGoing, workToday, workOn, pause, resume, stopForToday, run, scan])
  )

const findings = Command.make(
  "findings",
  {
    ...connection,
    routine: Flags.agentName("routine").pipe(Flags.optional("Only what this routine's scans found.")),
    limit: Flags.positiveInteger("limit").pipe(Flags.optional("At most this many, newest first."))
  },
  (flags) =>
    simple(
      flags,
      "flotta_findings",
      {
        ...Shared.ifSome("routine", flags.routine),
        ...Shared.ifSome("limit", flags.limit)
      },
      Findings,
      (v) => renderFindings(v.findings)
    )
).pipe(
  Command.withDescription("The work the scheduler's scans found, deduplicated, newest first, from a running serve.")
)

export const commands = [schedule, findings] as const
