/**
 * How the command shows the fleet's records to a person: the store (where state lives, its size and health),
 * what came back from it at start, report entries and transcripts. Pure functions of the data, so the text is
 * the same whether it came from a running serve or straight from the store.
 */
import type { ToolOutcome, ToolRefusal, TranscriptMark, TurnRecord } from "@flotta/core/Agent"
import type { ContextUse } from "@flotta/core/AgentView"
import type { RestoreReport } from "@flotta/core/Restore"
import type { ReportEntry, StoreHealth, StoreInfo } from "@flotta/core/Store"
import { describeInstant } from "./RunViews.js"

/** A reason on one line: a child's stderr tail comes with line breaks. */
const oneLine = (text: string) => text.trim().split(/\s*\n\s*/).join(" ")

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`

/** 0 B, 512 B, 4.0 kB, 12.3 MB, 1.2 GB. */
export const formatBytes = (bytes: number): string => {
  if (bytes < 1000) return `${bytes} B`
  const units = ["kB", "MB", "GB", "TB"]
  let value = bytes / 1000
  let unit = 0
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000
    unit++
  }
  return `${value.toFixed(1)} ${units[unit]}`
}

/** `ok`, or `degraded since <at>: <reason> (N writes waiting, M report entries lost)`. */
export const describeHealth = (health: StoreHealth): string => {
  if (health.state === "ok") return "ok"
  const counts = [
    ...(health.pending > 0 ? [`${plural(health.pending, "write")} waiting`] : []),
    ...(health.lost > 0 ? [`${plural(health.lost, "report entry", "report entries")} lost`] : [])
  ]
  return `degraded${health.since === null ? "" : ` since ${health.since}`}: ${health.reason ?? "writes are failing"}` +
    (counts.length === 0 ? "" : ` (${counts.join(", ")})`)
}

/** `sqlite /p/.flotta/state.db (schema v1, 48.0 kB)`, or `memory (gone when the fleet stops)`. */
export const describeStore = (info: StoreInfo): string => {
  if (info.kind === "memory") return "memory (gone when the fleet stops)"
  const facts = [
    `schema v${info.schemaVersion}`,
    ...(info.sizeBytes === null ? [] : [formatBytes(info.sizeBytes)]),
    ...(info.driver === undefined ? [] : [info.driver])
  ]
  return `${info.kind} ${info.location} (${facts.join(", ")})`
}

/** The store and its health in one line: `sqlite /p/state.db (schema v1, 48.0 kB), ok`. */
export const describeStoreWithHealth = (info: StoreInfo): string =>
  `${describeStore(info)}, ${describeHealth(info.health)}`

/** What came back from the store at start, as lines; none for a new store or one with nothing live in it. */
export const describeRestore = (report: RestoreReport): ReadonlyArray<string> => {
  const lines: Array<string> = []
  if (report.orphansEnded.length > 0) {
    lines.push(
      `ended ${plural(report.orphansEnded.length, "claude process", "claude processes")} the previous host left ` +
        `running (${report.orphansEnded.map((o) => `${o.name} pid ${o.pid}`).join(", ")})`
    )
  }
  if (report.restored.length > 0 || report.closed.length > 0) {
    const restored = report.restored.map((r) =>
      r.queued === 0 ? r.name : `${r.name} with ${plural(r.queued, "queued turn")}`
    )
    const parts = [
      `restored ${plural(report.restored.length, "agent")}` +
      (restored.length === 0 ? "" : ` (${restored.join(", ")})`)
    ]
    if (report.closed.length > 0) {
      parts.push(
        `${report.closed.length} closed: ${report.closed.map((c) => `${c.name} (${oneLine(c.reason)})`).join(", ")}`
      )
    }
    lines.push(parts.join(", "))
  }
  if (report.interruptedTurns.length > 0) {
    lines.push(
      `${plural(report.interruptedTurns.length, "turn was", "turns were")} in flight when the host stopped, ended ` +
        `as HostRestarted and not sent again (${
          report.interruptedTurns.map((t) => `${t.name} ${t.turnId}`).join(", ")
        })`
    )
  }
  if (report.interruptedRuns.length > 0) {
    lines.push(
      `${plural(report.interruptedRuns.length, "run was", "runs were")} interrupted by the restart, worktrees kept ` +
        `(${report.interruptedRuns.join(", ")})`
    )
  }
  return lines
}

/** One report entry per line: `   seq at agent kind [turnId] data`. */
export const formatEntry = (e: ReportEntry): string =>
  `${String(e.seq).padStart(6)} ${e.at} ${e.agent} ${e.kind}${e.turnId === undefined ? "" : ` ${e.turnId}`} ` +
  JSON.stringify(e.data)

const LABEL = 12

/** `  label:      text`, continuation lines aligned under the text. */
const field = (label: string, text: string) => {
  const pad = " ".repeat(LABEL + 2)
  return `  ${`${label}:`.padEnd(LABEL)}${text.split("\n").join(`\n${pad}`)}`
}

const compact = (value: unknown, max = 240) => {
  const text = JSON.stringify(value) ?? "undefined"
  return text.length > max ? `${text.slice(0, max - 3)}...` : text
}

const heading = (record: TurnRecord) => {
  const facts: Array<string> = [record.status]
  if (record.status === "succeeded" || record.status === "failed") {
    facts.push(
      `$${record.costUsd.toFixed(4)}`,
      `${(record.durationMs / 1000).toFixed(1)}s`,
      plural(record.modelCalls, "model call")
    )
  }
  const at = record.startedAt ?? record.enqueuedAt
  facts.push(record.status === "queued" ? `queued at ${record.enqueuedAt}` : `started ${at}`)
  return `${record.turnId}  ${facts.join(" · ")}`
}

/** A token count as people read it: `4,427`. */
const tokens = (n: number) => n.toLocaleString("en-US")

/** What happened to the conversation, in words (see `TranscriptMark`). */
export const describeMark = (mark: TranscriptMark): string => {
  switch (mark._tag) {
    case "Forked": {
      const { from } = mark
      return `forked from ${from.agent}${from.turnId === null ? "" : ` at ${from.turnId}`} (session ${from.sessionId})`
    }
    case "Compacted": {
      const { postTokens, preTokens, trigger } = mark.compaction
      return `compacted (${trigger}): ${tokens(preTokens)} → ${postTokens === null ? "?" : tokens(postTokens)} tokens`
    }
    case "Cleared":
      return `cleared: a new conversation (session ${mark.sessionId}; it was ${mark.previousSessionId})`
  }
}

/** The lines of a tool's result a transcript shows (the record keeps up to its bound: `--json` has it all). */
const RESULT_LINES = 6

/** Bytes as people read them: `812 B`, `10.0 KiB`. */
const size = (bytes: number) => (bytes < 1024 ? `${bytes} B` : `${(bytes / 1024).toFixed(1)} KiB`)

/**
 * A tool call's outcome, in words: `→ ok · 11 B · 3.0s` and its first lines, or why it was refused
 * (`→ refused: a human (cli) denied it: not on a Friday`).
 */
export const describeOutcome = (outcome: ToolOutcome): string => {
  const took = `${(outcome.durationMs / 1000).toFixed(1)}s`
  if (outcome.status === "refused" && outcome.refusal !== undefined) {
    const { by, message, reason } = outcome.refusal
    const who = REFUSED_BY[reason] + (by === undefined ? "" : ` (${by})`)
    return `→ refused: ${who}: ${message}`
  }
  const lines = outcome.text.split("\n")
  const shown = lines.slice(0, RESULT_LINES).join("\n")
  const more = lines.length > RESULT_LINES || outcome.truncated
    ? `\n… (${size(outcome.bytes)} in all)`
    : ""
  return `→ ${outcome.status} · ${size(outcome.bytes)} · ${took}${shown.length === 0 ? "" : `\n${shown}`}${more}`
}

const REFUSED_BY: Record<ToolRefusal["reason"], string> = {
  not_offered: "not offered to this agent",
  sandbox: "its sandbox refused it",
  policy: "its permission refused it",
  human: "a human denied it",
  expired: "nobody decided in time"
}

/** How full a context is, in words: `4,427 tokens, 0.4% of 1,000,000`. */
export const describeContext = (context: ContextUse): string =>
  `${tokens(context.tokens)} tokens` +
  (context.window === null ? "" : `, ${context.percent ?? 0}% of ${tokens(context.window)}`)

/**
 * One turn as a person reads it: what happened to the conversation before it, prompt, tool calls, permission
 * decisions, reply or error, and what it cost.
 */
export const renderTurn = (record: TurnRecord): string => {
  const lines = [
    ...(record.marks ?? []).map((mark) => `~ ${describeMark(mark)}`),
    heading(record),
    field("prompt", record.prompt)
  ]
  for (const call of record.toolCalls) {
    const outcome = call.outcome === undefined ? "" : `\n${describeOutcome(call.outcome)}`
    lines.push(field("tool", `${call.name} ${compact(call.input)}${outcome}`))
  }
  for (const decision of record.permissions) {
    const changed = decision.updatedInput === undefined ? "" : ` (input changed to ${compact(decision.updatedInput)})`
    const why = decision.message === undefined || decision.message.length === 0 ? "" : `: ${decision.message}`
    const by = decision.by === undefined ? "" : ` (by ${decision.by})`
    lines.push(
      field("permission", `${decision.decision} ${decision.tool} ${compact(decision.input, 120)}${changed}${by}${why}`)
    )
  }
  if (record.reply !== null) lines.push(field("reply", record.reply))
  if (record.error !== null) lines.push(field("error", `${record.error._tag}: ${record.error.message}`))
  return lines.join("\n")
}

/** When and why an agent closed: `2026-05-01 14:00:00 UTC (closed by request)`, or only why. */
export const describeClosed = (reason: string, at: string | undefined): string =>
  at === undefined ? oneLine(reason) : `${describeInstant(at)} UTC (${oneLine(reason)})`

/** An agent's transcript, oldest turn first, a blank line between turns; a closed agent's says it is closed. */
export const renderTranscript = (
  name: string,
  records: ReadonlyArray<TurnRecord>,
  total = records.length,
  closed?: { readonly reason: string; readonly at?: string }
): string => {
  const head = closed === undefined ? name : `${name}, closed ${describeClosed(closed.reason, closed.at)}`
  if (records.length === 0) return `${head}: no turns${closed === undefined ? " yet" : ""}`
  const shown = records.length < total ? ` (the last ${records.length} of ${total})` : ""
  return [`${head}: ${plural(total, "turn")}${shown}`, ...records.map(renderTurn)].join("\n\n")
}

/** An agent's status in a word, with the time it resumes while parked: `parked until 2026-05-01T14:00:00Z`. */
export const describeStatus = (view: { readonly status: string; readonly parkedUntil?: string | null }): string =>
  view.status === "parked" && typeof view.parkedUntil === "string"
    ? `parked until ${view.parkedUntil.replace(/\.\d{3}Z$/, "Z")}`
    : view.status

/** What is parked at a usage limit, one line per group of credentials; none when nothing is. */
export const describeParking = (
  groups: ReadonlyArray<{
    readonly credentials: string
    readonly reason: string
    readonly rateLimitType: string | null
    readonly until: string
    readonly agents: ReadonlyArray<string>
  }>
): ReadonlyArray<string> =>
  groups.map((g) =>
    `parked until ${g.until.replace(/\.\d{3}Z$/, "Z")}: ${g.agents.length === 0 ? "no agent" : g.agents.join(", ")} ` +
    `(${g.credentials}, ${
      g.reason === "usage_limit"
        ? `usage limit${g.rateLimitType === null ? "" : ` ${g.rateLimitType}`}`
        : "rate limited"
    })`
  )
