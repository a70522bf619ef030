/**
 * What the schedule page shows of the webhooks (`@flotta/webhooks`), as plain data: the last triggers the report
 * log holds (agent `hooks`, kinds `trigger` and `trigger_refused`), decoded, each with what it fired or why it
 * fired nothing; and, when a notifier runs, each target's delivery state as it keeps it (a URL by its origin
 * only: a Slack webhook's path is its key).
 */
import type { StoreUnavailable } from "@flotta/core/Errors"
import { Flotta } from "@flotta/core/Flotta"
import type { ReportEntry } from "@flotta/core/ReportLog"
import type { TargetStatus } from "@flotta/webhooks/Notifier"
import { Notifier } from "@flotta/webhooks/Notifier"
import { Effect, Option, Predicate, Schema } from "effect"
import { summary } from "./Views.js"

/** The report log's agent for the webhooks' triggers. */
export const HOOKS_AGENT = "hooks"

export const TRIGGERS_SHOWN = 20

const ErrorView = Schema.Struct({ _tag: Schema.String, message: Schema.String })

/** A `trigger` or `trigger_refused` entry's data, as `@flotta/webhooks` writes it (unknown fields ignored). */
const TriggerData = Schema.Struct({
  source: Schema.String,
  routine: Schema.optional(Schema.String),
  event: Schema.optional(Schema.String),
  delivery: Schema.optional(Schema.String),
  repository: Schema.optional(Schema.String),
  issue: Schema.optional(Schema.Number),
  pullRequest: Schema.optional(Schema.Number),
  check: Schema.optional(Schema.String),
  workflow: Schema.optional(Schema.String),
  conclusion: Schema.optional(Schema.String),
  fired: Schema.optional(Schema.Array(Schema.Union(
    Schema.Struct({ routine: Schema.String, fireId: Schema.String }),
    Schema.Struct({ run: Schema.String, name: Schema.String })
  ))),
  refused: Schema.optional(Schema.Array(Schema.Union(
    Schema.Struct({ routine: Schema.String, error: ErrorView }),
    Schema.Struct({ run: Schema.String, error: ErrorView }),
    ErrorView // a routine's own trigger: the scheduler's error, the routine being the entry's
  ))),
  unmapped: Schema.optional(Schema.Boolean),
  duplicate: Schema.optional(Schema.Boolean),
  status: Schema.optional(Schema.Number),
  reason: Schema.optional(Schema.String)
})
type TriggerData = typeof TriggerData.Type

const decodeTrigger = Schema.decodeUnknownOption(TriggerData)

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
  readonly refused: ReadonlyArray<{ readonly target: string | null; readonly error: typeof ErrorView.Type }>
  /** No mapping took the event: nothing fired. */
  readonly unmapped: boolean
  /** A delivery seen before: nothing fired again. */
  readonly duplicate: boolean
  /** A `trigger_refused`: the request itself was turned away (its signature, token, size or body). */
  readonly rejected: { readonly status: number | null; readonly reason: string } | null
  /** An entry of a shape this page does not know: its summary. */
  readonly note: string | null
}

const subjectOf = (d: TriggerData): string | null => {
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

export const triggerRow = (entry: ReportEntry): TriggerRow => {
  const base = { seq: entry.seq, at: entry.at }
  const decoded = decodeTrigger(entry.data)
  if (Option.isNone(decoded)) {
    const source = Predicate.isRecord(entry.data) ? entry.data["source"] : undefined
    return {
      ...base,
      source: typeof source === "string" ? source : "?",
      event: null,
      routine: null,
      subject: null,
      delivery: null,
      fired: [],
      refused: [],
      unmapped: false,
      duplicate: false,
      rejected: null,
      note: `${entry.kind}: ${summary(entry)}`
    }
  }
  const d = decoded.value
  return {
    ...base,
    source: d.source,
    event: d.event ?? null,
    routine: d.routine ?? null,
    subject: subjectOf(d),
    delivery: d.delivery ?? null,
    fired: (d.fired ?? []).map((f): TriggerFired =>
      "fireId" in f
        ? { _tag: "Routine", routine: f.routine, fireId: f.fireId }
        : { _tag: "Run", template: f.run, name: f.name }
    ),
    refused: (d.refused ?? []).map((r) =>
      "error" in r
        ? { target: "routine" in r ? r.routine : r.run, error: r.error }
        : { target: d.routine ?? null, error: { _tag: r._tag, message: r.message } }
    ),
    unmapped: d.unmapped === true,
    duplicate: d.duplicate === true,
    rejected: entry.kind === "trigger_refused" ? { status: d.status ?? null, reason: d.reason ?? "" } : null,
    note: null
  }
}

/** The last triggers (and requests refused), newest first: the report log's `trigger` and `trigger_refused`. */
export const triggers: Effect.Effect<ReadonlyArray<TriggerRow>, StoreUnavailable, Flotta> = Effect.flatMap(
  Flotta,
  (fleet) => fleet.reports({ agent: HOOKS_AGENT, kinds: ["trigger", "trigger_refused"], last: TRIGGERS_SHOWN })
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
