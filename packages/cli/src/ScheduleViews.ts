/**
 * The scheduler's answers as a person reads them: the status (mode, working now or not and why, today's windows,
 * overrides, routines), a steering answer, a fire's outcome and the findings, times in the schedule's own zone.
 */
import type { Finding, FireOutcome, Override, RoutineStatus, SchedulerStatus } from "@flotta/scheduler/Steering"
import type { TimeZone } from "@flotta/scheduler/WorkingHours"
import { formatLocal, resolveZone } from "@flotta/scheduler/WorkingHours"

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
    : "dailyAt" in routine.every
    ? `daily ${routine.every.dailyAt}`
    : "on trigger"

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
export const nowLine = (status: SchedulerStatus) =>
  `now: ${status.working ? "working" : "not working"} (${status.reason})`

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
