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
import { Args, Command, Options } from "@effect/cli"
import type { ReportEntry } from "@flotta/core/ReportLog"
import type { Finding, FireOutcome, Override, RoutineStatus, SchedulerStatus } from "@flotta/scheduler/Steering"
import type { TimeZone } from "@flotta/scheduler/WorkingHours"
import { formatLocal, resolveZone } from "@flotta/scheduler/WorkingHours"
import type { Client } from "@modelcontextprotocol/client"
import { Effect, Option, Schema } from "effect"
import type { ServerUnreachable } from "./Connection.js"
import { call, connection, ToolFailed, withClient } from "./Connection.js"
import type { Connection } from "./Connection.js"
import * as Flags from "./Flags.js"
import * as Output from "./Output.js"
import { invalid } from "./SharedOptions.js"

// ------------------------------------------------------------------------------------------------ views

/** The schedule's time zone from the status's description of it (`utc`, `+05:30`, an IANA name). */
export const zoneOf = (description: string): TimeZone => {
  if (description.toLowerCase() === "utc") return { _tag: "Utc" }
  const offset = /^([+-])(\d{2}):(\d{2})$/.exec(description)
  if (offset !== null) {
    const seconds = (Number(offset[2]) * 3600 + Number(offset[3]) * 60) * (offset[1] === "-" ? -1 : 1)
    return { _tag: "Offset", seconds }
  }
  const name = resolveZone(description)
  return name === undefined ? { _tag: "Utc" } : { _tag: "Zone", name }
}

/** An instant as the schedule's local time: `HH:MM` today, else `YYYY-MM-DD HH:MM`. */
const localTimeOf = (status: Pick<SchedulerStatus, "timezone" | "today">) => {
  const zone = zoneOf(status.timezone)
  return (iso: string) => {
    const local = formatLocal(zone, Date.parse(iso))
    const date = local.slice(0, 10)
    const time = local.slice(11, 16)
    return date === status.today.date ? time : `${date} ${time}`
  }
}

const dollars = (usd: number) => `$${usd.toFixed(4)}`

/** `350 ms`, `4.2 s`, `90 min`, `2 h`, `1 h 30 min`. */
export const describeInterval = (ms: number): string => {
  if (ms < 1000) return `${Math.round(ms)} ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`
  const minutes = Math.round(ms / 60_000)
  const hours = Math.floor(minutes / 60)
  if (hours === 0) return `${minutes} min`
  return minutes % 60 === 0 ? `${hours} h` : `${hours} h ${minutes % 60} min`
}

const cadenceOf = (routine: RoutineStatus) =>
  "intervalMs" in routine.every
    ? `every ${describeInterval(routine.every.intervalMs)}`
    : `daily ${routine.every.dailyAt}`

/** One override in words, its times in the schedule's local time. */
export const describeOverride = (override: Override, at: (iso: string) => string): string => {
  switch (override.kind) {
    case "keep_going":
      return `keep going until ${at(override.until)}` +
        (override.minutes === undefined ? "" : ` (+${override.minutes} min)`)
    case "work_on":
      return `work on ${override.date ?? at(override.from)}` +
        (override.window === undefined ? "" : ` ${override.window.start}-${override.window.end}`)
    case "stop_for_today":
      return `stopped for today, until ${at(override.until)}`
  }
}

const SOURCES = { hours: "hours", work_on: "one-off", keep_going: "keep going" } as const

/** Whether this instant is working time, and why. */
const nowLine = (status: SchedulerStatus) => `now: ${status.working ? "working" : "not working"} (${status.reason})`

const table = (rows: ReadonlyArray<ReadonlyArray<string>>, indent: string) => {
  const widths = rows.reduce<Array<number>>(
    (w, row) => row.map((cell, i) => Math.max(w[i] ?? 0, cell.length)),
    []
  )
  return rows.map((row) =>
    indent + row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join("  ")
  )
}

/**
 * The compact status view: mode, working now or not and why, today's windows, the overrides, fires in flight,
 * each routine with its next fire and last outcome, and the day's spend.
 */
export const renderStatus = (status: SchedulerStatus): string => {
  const at = localTimeOf(status)
  const lines: Array<string> = []
  lines.push(
    `scheduler: ${status.mode}` + (status.mode === "paused" ? " (no routine fires until `flotta schedule resume`)" : "")
  )
  lines.push(nowLine(status))
  lines.push(
    `time: ${status.localTime.slice(0, 16).replace("T", " ")} ${status.timezone}` +
      (status.nextChange === null ? "" : `; next change at ${at(status.nextChange)}`)
  )
  const windows = status.today.windows.map((w) => `${w.start}-${w.end} (${SOURCES[w.source]})`)
  lines.push(
    `today: ${status.today.weekday} ${status.today.date}, ` +
      (windows.length === 0 ? "no working hours" : windows.join(", "))
  )
  if (status.overrides.length > 0) {
    lines.push(`overrides: ${status.overrides.map((o) => describeOverride(o, at)).join("; ")}`)
  }
  for (const fire of status.running) {
    lines.push(
      `running: ${fire.routine ?? "ad-hoc scan"} (${fire.action}, ${fire.trigger}), fire ${fire.fireId} since ` +
        at(fire.since)
    )
  }
  if (status.routines.length === 0) {
    lines.push("routines: none")
  } else {
    lines.push("routines:")
    lines.push(...table(
      status.routines.map((r) => [
        r.name,
        r.action,
        cadenceOf(r),
        r.state === "railed" && r.railedUntil !== null ? `railed until ${at(r.railedUntil)}` : r.state,
        r.nextFireAt === null ? "next -" : `next ${at(r.nextFireAt)}`,
        r.lastFire === null
          ? "last -"
          : `last ${r.lastFire.ok ? "ok" : "failed"} ${at(r.lastFire.at)} (${dollars(r.lastFire.costUsd)})`,
        `today ${dollars(r.spentTodayUsd)}` + (r.dailyBudgetUsd === null ? "" : ` of $${r.dailyBudgetUsd}`)
      ]),
      "  "
    ))
  }
  const spent = status.routines.reduce((sum, r) => sum + r.spentTodayUsd, 0)
  lines.push(`spend today: ${dollars(spent)}`)
  for (const r of status.rejected) lines.push(`skipped routine: ${r.path}: ${r.message}`)
  return lines.join("\n")
}

/** An override just added, and what it made of now. */
export const renderSteered = (answer: { readonly override: Override; readonly status: SchedulerStatus }): string =>
  `${describeOverride(answer.override, localTimeOf(answer.status))}\n${nowLine(answer.status)}`

/** A fire's outcome: how it ended, what it cost, the runs it started, the tasks it found, its reply. */
export const renderOutcome = (outcome: FireOutcome): string => {
  const label = outcome.routine === null ? "scan" : `routine ${outcome.routine}`
  const took = Date.parse(outcome.finishedAt) - Date.parse(outcome.startedAt)
  const lines = [
    `${label}: fire ${outcome.fireId} ${outcome.ok ? "succeeded" : "failed"} in ${describeInterval(took)} ` +
    `(${dollars(outcome.costUsd)})`
  ]
  if (outcome.error !== undefined) lines.push(`error: ${outcome.error._tag}: ${outcome.error.message}`)
  if (outcome.runs.length > 0) lines.push(`runs: ${outcome.runs.join(", ")}`)
  if (outcome.tasks !== undefined) {
    lines.push(outcome.tasks.length === 0 ? "tasks: none found" : "tasks:")
    for (const t of outcome.tasks) lines.push(`  ${t.priority === undefined ? "" : `[${t.priority}] `}${t.title}`)
  }
  for (const d of outcome.dispatched ?? []) {
    lines.push(`dispatched: ${d.title} → run ${d.run} ${d.ok ? "ok" : `failed (${d.error?._tag ?? "error"})`}`)
  }
  for (const d of outcome.deferred ?? []) lines.push(`deferred: ${d.title} (${d.reason})`)
  if (outcome.text !== undefined && outcome.text.length > 0) lines.push(`reply: ${outcome.text}`)
  return lines.join("\n")
}

/** The findings, newest first: priority, title, who found it and how often, then the detail. */
export const renderFindings = (findings: ReadonlyArray<Finding>): string => {
  if (findings.length === 0) return "no findings yet"
  return findings.map((f) => {
    const seen = f.sightings === 1 ? "seen once" : `seen ${f.sightings} times`
    const head = `${f.priority === undefined ? "" : `[${f.priority}] `}${f.title} ` +
      `(${f.routine ?? "ad-hoc scan"}, ${seen}, last ${f.foundAt.slice(0, 16).replace("T", " ")} UTC)`
    return f.detail.length === 0 ? head : `${head}\n    ${f.detail}`
  }).join("\n")
}

// ------------------------------------------------------------------------------------------------ calls

const NOT_ENABLED = "the serve answering here runs no scheduler (SchedulerNotEnabled): add a `schedule` section " +
  "to its config and restart `flotta serve`"

/** A steering call: SchedulerNotEnabled gets a message of its own (and keeps its exit code). */
const steer = (client: Client, tool: string, args: Record<string, unknown> = {}) =>
  call(client, tool, args).pipe(
    Effect.catchIf(
      (e): e is ToolFailed => e._tag === "ToolFailed" && e.error._tag === "SchedulerNotEnabled",
      (e) => Effect.fail(new ToolFailed({ tool, error: e.error, text: NOT_ENABLED }))
    )
  )

interface FireAnswer extends Record<string, unknown> {
  readonly done: boolean
  readonly fireId: string | null
  readonly routine: string | null
  readonly waitedMs: number
  readonly outcome?: FireOutcome
  readonly message: string
}

/** Follows a fire the tool stopped waiting for, through the report log, until its outcome lands. */
const followFire = (client: Client, first: FireAnswer) =>
  Effect.gen(function*() {
    if (first.done || first.fireId === null) return first
    const fireId = first.fireId
    yield* Output.stderr(`flotta: fire ${fireId} is still running; waiting for its outcome (Ctrl-C stops waiting)`)
    let cursor = 0
    while (true) {
      const page = yield* call(client, "flotta_reports", {
        agent: "scheduler",
        kinds: ["fire_result"],
        cursor,
        limit: 500
      })
      const entries = page["entries"] as ReadonlyArray<ReportEntry>
      const found = entries.find((e) => (e.data as { readonly fireId?: unknown }).fireId === fireId)
      if (found !== undefined) {
        const outcome = found.data as FireOutcome
        return { ...first, done: true, outcome, message: renderOutcome(outcome).split("\n")[0]! } satisfies FireAnswer
      }
      cursor = page["next"] as number
      if (entries.length < 500) yield* Effect.sleep("1 second")
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
        steer(client, tool, { ...args, timeoutSeconds: 45 }).pipe(
          Effect.flatMap((first) => followFire(client, first as FireAnswer)),
          Effect.tap((a) => Effect.sync(() => (answer = a)))
        ),
      (a) => (a.outcome === undefined ? a.message : renderOutcome(a.outcome))
    )
    if (answer !== undefined) yield* failedFire(tool, answer)
  })

/** Runs a steering tool and prints its answer. */
const simple = <A extends Record<string, unknown>>(
  flags: Connection,
  tool: string,
  args: Record<string, unknown>,
  render: (value: A) => string
) =>
  withClient(
    flags,
    (client) => steer(client, tool, args) as Effect.Effect<A, ToolFailed | ServerUnreachable>,
    render
  )

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
  (flags) => simple<SchedulerStatus & Record<string, unknown>>(flags, "flotta_schedule_status", {}, renderStatus)
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
  (flags) => simple(flags, "flotta_keep_going", { minutes: Option.getOrElse(flags.minutes, () => 60) }, renderSteered)
).pipe(
  Command.withDescription("Keep working for MINUTES more (default 60), whatever the hours say; expires by itself.")
)

const workToday = Command.make(
  "work-today",
  { ...connection, ...windowArgs },
  (flags) => Effect.flatMap(windowOf(flags), (window) => simple(flags, "flotta_work_today", window, renderSteered))
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
      (window) => simple(flags, "flotta_work_on", { date: flags.date, ...window }, renderSteered)
    )
).pipe(
  Command.withDescription("Work on DATE from FROM to TO (local time; default: a usual working day's span), once.")
)

const pause = Command.make("pause", connection, (flags) =>
  simple<{ readonly status: SchedulerStatus }>(
    flags,
    "flotta_pause",
    {},
    (v) => `paused: no routine fires and no new work starts until \`flotta schedule resume\`\n${nowLine(v.status)}`
  )).pipe(Command.withDescription("Pause the scheduler: no routine fires (fires in flight finish) until resume."))

const resume = Command.make("resume", connection, (flags) =>
  simple<{ readonly status: SchedulerStatus }>(
    flags,
    "flotta_resume",
    {},
    (v) => `resumed\n${nowLine(v.status)}`
  )).pipe(
    Command.withDescription("Resume after a pause; also undoes a stop for today and lifts the daily budget rails.")
  )

const stopForToday = Command.make(
  "stop-for-today",
  connection,
  (flags) => simple(flags, "flotta_stop_for_today", {}, renderSteered)
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
    focus: Flags.nonEmpty("focus").pipe(
      Options.withDescription("What to look for, e.g. \"failing tests, stale docs\"."),
      Options.optional
    )
  },
  (flags) =>
    fire(flags, "flotta_scan_now", Option.match(flags.focus, { onNone: () => ({}), onSome: (focus) => ({ focus }) }))
).pipe(Command.withDescription("Run an ad-hoc scan for actionable work now; its tasks join the findings."))

/** `flotta schedule` alone is `flotta schedule status` (its connection flags come before a subcommand's name). */
const schedule = Command.make("schedule", connection, (flags) =>
  simple<SchedulerStatus & Record<string, unknown>>(
    flags,
    "flotta_schedule_status",
    {},
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
    routine: Flags.agentName("routine").pipe(
      Options.withDescription("Only what this routine's scans found."),
      Options.optional
    ),
    limit: Flags.positiveInteger("limit").pipe(
      Options.withDescription("At most this many, newest first."),
      Options.optional
    )
  },
  (flags) =>
    simple<{ readonly findings: ReadonlyArray<Finding> }>(
      flags,
      "flotta_findings",
      {
        ...Option.match(flags.routine, { onNone: () => ({}), onSome: (routine) => ({ routine }) }),
        ...Option.match(flags.limit, { onNone: () => ({}), onSome: (limit) => ({ limit }) })
      },
      (v) => renderFindings(v.findings)
    )
).pipe(
  Command.withDescription("The work the scheduler's scans found, deduplicated, newest first, from a running serve.")
)

export const commands = [schedule, findings] as const
