/**
 * What the schedule page shows of the webhooks (`@flotta/webhooks`), as plain data: the last triggers the report
 * log holds (agent `hooks`, kinds `trigger` and `trigger_refused`), decoded, each with what it fired or why it
 * fired nothing; and, when a notifier runs, each target's delivery state as it keeps it (a URL by its origin
 * only: a Slack webhook's path is its key).
 */
import type { ErrorView } from "@flotta/core/AgentView"
import { Flotta } from "@flotta/core/Flotta"
import * as ReportEvent from "@flotta/core/ReportEvent"
import type { ReportEntry } from "@flotta/core/ReportLog"
import type { TargetStatus } from "@flotta/webhooks/Notifier"
import { Notifier } from "@flotta/webhooks/Notifier"
import * as WebhooksEvents from "@flotta/webhooks/WebhooksEvents"
import { Effect, Option, Predicate } from "effect"

/** The report log's agent for the webhooks' triggers. */
export const HOOKS_AGENT = "hooks"

export const TRIGGERS_SHOWN = 20

const decodeTrigger = ReportEvent.decoder([WebhooksEvents.trigger, WebhooksEvents.triggerRefused])

/** What a trigger fired: a routine's fire, or a run started from a template. */
export type TriggerFired =
  | { readonly _tag: "Routine"; readonly routine: string; readonly fireId: string }
  | { readonly _tag: "Run"; readonly template: string; readonly name: string }

export interface TriggerRow {
  readonly seq: number
  readonly at: string
  /** `webhook` (`POST /hooks/routines/NAME`) or `github`. */
  readonly source: string
  /** The GitHub event (`issues.labeled`). */
  readonly event: string | null
  /** The routine the request named. */
  readonly routine: string | null
  /** What the event is about: the repository and issue or pull request, the check or workflow, its conclusion. */
  readonly subject: string | null
  /** GitHub's delivery id. */
  readonly delivery: string | null
  readonly fired: ReadonlyArray<TriggerFired>
  /** The routines and run templates that would not fire, each with why. */
  readonly refused: ReadonlyArray<{ readonly target: string | null; readonly error: ErrorView }>
  /** No mapping took the event: nothing fired. */
  readonly unmapped: boolean
  /** A delivery seen before: nothing fired again. */
  readonly duplicate: boolean
  /** A `trigger_refused`: the request itself was turned away (its signature, token, size or body). */
  readonly rejected: { readonly status: number | null; readonly reason: string } | null
  /** An entry of a shape this page does not know: its data, raw. */
  readonly note: string | null
}

const subjectOf = (d: WebhooksEvents.Facts): string | null => {
  const number = d.issue ?? d.pullRequest
  const where = number === undefined ? d.repository : `${d.repository ?? ""}#${number}`
  const what = d.check !== undefined
    ? `check ${d.check}`
    : d.workflow !== undefined
    ? `workflow ${d.workflow}`
    : undefined
  const parts = [where, what, d.conclusion].filter(Predicate.isString)
  return parts.length === 0 ? null : parts.join(" · ")
}

const nothing = {
  event: null,
  routine: null,
  subject: null,
  delivery: null,
  fired: [],
  refused: [],
  unmapped: false,
  duplicate: false,
  rejected: null,
  note: null
} as const

export const triggerRow = (raw: ReportEntry): TriggerRow => {
  const base = { seq: raw.seq, at: raw.at }
  const entry = decodeTrigger(raw)
  if (entry._tag === "Raw") {
    return { ...base, ...nothing, source: "?", note: `${entry.kind}: ${JSON.stringify(entry.data) ?? ""}` }
  }
  if (entry.kind === "trigger_refused") {
    const d = entry.data
    return {
      ...base,
      ...nothing,
      source: d.source,
      delivery: d.delivery ?? null,
      rejected: { status: d.status, reason: d.reason }
    }
  }
  const d = entry.data
  return {
    ...base,
    ...nothing,
    source: d.source,
    event: d.event ?? null,
    routine: d.routine ?? null,
    subject: subjectOf(d),
    delivery: d.delivery ?? null,
    fired: d.fired.map((f): TriggerFired =>
      WebhooksEvents.isRoutineFire(f)
        ? { _tag: "Routine", routine: f.routine, fireId: f.fireId }
        : { _tag: "Run", template: f.run, name: f.name }
    ),
    refused: (d.refused ?? []).map((r) => {
      const { error, target } = WebhooksEvents.refusal(r)
      // A routine's own trigger refused: the routine is the entry's.
      return { target: target ?? d.routine ?? null, error }
    }),
    unmapped: d.unmapped === true,
    duplicate: d.duplicate === true
  }
}

/** The last triggers (and requests refused), newest first: the report log's `trigger` and `trigger_refused`. */
export const triggers: Effect.Effect<ReadonlyArray<TriggerRow>, never, Flotta> = Effect.flatMap(
  Flotta,
  (fleet) =>
    fleet.reports({
      agent: HOOKS_AGENT,
      kinds: [WebhooksEvents.trigger.kind, WebhooksEvents.triggerRefused.kind],
      last: TRIGGERS_SHOWN
    })
).pipe(Effect.map((page) => page.entries.map(triggerRow).reverse()))

/**
 * Each notification target's delivery state, or none when no notifier runs: a URL shows only its origin, and a
 * reason never quotes the rest (`Delivery.scrub`).
 */
export const notifications: Effect.Effect<Option.Option<ReadonlyArray<TargetStatus>>> = Effect.serviceOption(
  Notifier
).pipe(Effect.flatMap(Option.match({
  onNone: () => Effect.succeedNone,
  onSome: (notifier) => Effect.map(notifier.status, Option.some)
})))
