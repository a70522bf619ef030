/**
 * A turn as data: a new queued turn and its transcript record, snapshots of that record, the small views that
 * reports show of it, and the agent's turn metrics.
 */
import { DateTime, MetricLabel } from "effect"
import type { Deferred, Option, Tracer } from "effect"
import type { ContextUse, TurnRecord, TurnResult } from "../AgentView.js"
import type { TurnError } from "../Errors.js"
import type * as Telemetry from "../Telemetry.js"
import type { MutableRecord, Turn, TurnKind, TurnMetrics } from "./agentState.js"

export const iso = (millis: number) => DateTime.formatIso(DateTime.unsafeMake(millis))

export const preview = (text: string, max = 200) => (text.length <= max ? text : text.slice(0, max) + "…")

export const isDone = (turn: Turn) => turn.record.status === "succeeded" || turn.record.status === "failed"

/** What a prompt does, as the CLI reads it: `/compact [instructions]` compacts, `/clear` clears; the rest asks. */
export const kindOf = (text: string): TurnKind => {
  const command = text.trimStart()
  if (command === "/clear" || command.startsWith("/clear ")) return "clear"
  if (command === "/compact" || command.startsWith("/compact ")) return "compact"
  return "prompt"
}

/** How full a context is, in the shape views show: its share of the window, in percent to one decimal. */
export const contextUse = (tokens: number, window: number | null): ContextUse => ({
  tokens,
  window,
  percent: window === null || window <= 0 ? null : Math.round((tokens / window) * 1000) / 10
})

/** A new queued turn. */
export const make = (
  fields: {
    readonly id: string
    readonly text: string
    readonly timeoutMs: number
    readonly deadlineAt: number | null
    readonly deferred: Deferred.Deferred<TurnResult, TurnError>
    readonly parentSpan: Option.Option<Tracer.AnySpan>
  },
  now: number
): Turn => ({
  _tag: "Turn",
  ...fields,
  kind: kindOf(fields.text),
  record: {
    turnId: fields.id,
    prompt: fields.text,
    status: "queued",
    reply: null,
    error: null,
    toolCalls: [],
    permissions: [],
    costUsd: 0,
    durationMs: 0,
    modelCalls: 0,
    enqueuedAt: iso(now),
    startedAt: null,
    finishedAt: null
  },
  interruptReason: null
})

/** A snapshot of a record as it is now: the live one goes on changing. */
export const snapshot = (record: TurnRecord | MutableRecord): TurnRecord => ({
  ...record,
  toolCalls: [...record.toolCalls],
  permissions: [...record.permissions]
})

/** A record the agent goes on filling in, from a stored one. */
export const mutable = (record: TurnRecord): MutableRecord => ({
  ...record,
  toolCalls: [...record.toolCalls],
  permissions: [...record.permissions]
})

/**
 * Turn metrics, tagged with the agent (and the outcome). The label arrays are made once per agent, so each
 * update finds its metric in Effect's cache instead of building and hashing a key per turn.
 */
export const metricsFor = (
  name: string,
  telemetry: Pick<typeof Telemetry, "turnsTotal" | "turnDurationMs" | "costUsdTotal">
): TurnMetrics => {
  const agent = [MetricLabel.make("agent", name)]
  const byOutcome = new Map<string, ReadonlyArray<MetricLabel.MetricLabel>>()
  return {
    count: (outcome: string) => {
      let tags = byOutcome.get(outcome)
      if (tags === undefined) {
        tags = [...agent, MetricLabel.make("outcome", outcome)]
        byOutcome.set(outcome, tags)
      }
      telemetry.turnsTotal.unsafeUpdate(1, tags)
    },
    record: (durationMs: number, costUsd: number) => {
      telemetry.turnDurationMs.unsafeUpdate(durationMs, agent)
      telemetry.costUsdTotal.unsafeUpdate(costUsd, agent)
    }
  }
}
