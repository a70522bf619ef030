/**
 * The webhooks' report kinds, each with the Schema of its data: the triggers (posted as `hooks`) and what the
 * notifications say of themselves (posted as `notify`). The engine names none of them.
 */
import * as ReportEvent from "@flotta/core/ReportEvent"
import { Schema } from "effect"

const described = <A>(schema: Schema.Schema<A>, description: string) => schema.annotations({ description })
const Source = described(Schema.String, "`webhook` or `github`")

const ErrorView = Schema.Struct({ _tag: Schema.String, message: Schema.String })
const opt = <A>(schema: Schema.Schema<A>) => Schema.optionalWith(schema, { exact: true })

/** What a trigger fired: a routine's fire, or a run started from a template. */
export const Fired = Schema.Union(
  Schema.Struct({ routine: Schema.String, fireId: Schema.String }),
  Schema.Struct({ run: described(Schema.String, "the run template"), name: described(Schema.String, "the run") })
)
export type Fired = typeof Fired.Type

/** What would not fire, and why: a routine or a run template, or (a routine's own trigger) the error alone. */
export const Refused = Schema.Union(
  Schema.Struct({ routine: Schema.String, error: ErrorView }),
  Schema.Struct({ run: Schema.String, error: ErrorView }),
  ErrorView
)
export type Refused = typeof Refused.Type

/** What a GitHub event is about (`GitHub.facts`). */
export const Facts = {
  event: opt(described(Schema.String, "the GitHub event (`issues.labeled`)")),
  repository: opt(Schema.String),
  issue: opt(Schema.Number),
  pullRequest: opt(Schema.Number),
  check: opt(Schema.String),
  workflow: opt(Schema.String),
  conclusion: opt(Schema.String)
}
export type Facts = Schema.Struct.Type<typeof Facts>

/** A routine's fire (else a run started). */
export const isRoutineFire = Schema.is(Fired.members[0])
const isRoutineRefusal = Schema.is(Refused.members[0])
const isRunRefusal = Schema.is(Refused.members[1])

export const trigger = ReportEvent.kind(
  "trigger",
  Schema.Struct({
    source: Source,
    routine: opt(described(Schema.String, "the routine a `webhook` trigger named")),
    delivery: opt(described(Schema.String, "GitHub's delivery id")),
    ...Facts,
    fired: Schema.Array(Fired),
    refused: opt(Schema.Array(Refused)),
    unmapped: opt(described(Schema.Boolean, "no mapping named the event: nothing fired")),
    duplicate: opt(described(Schema.Boolean, "a delivery seen before: nothing fired again"))
  }),
  "a trigger came in (a routine's webhook, a GitHub event): what it fired and what was refused",
  {
    summary: (d) => {
      const fired = d.fired.map((f) => isRoutineFire(f) ? `${f.routine} ${f.fireId}` : f.name)
      const refused = d.refused === undefined || d.refused.length === 0 ? "" : `, ${d.refused.length} refused`
      const outcome = d.duplicate === true
        ? "duplicate"
        : d.unmapped === true
        ? "unmapped"
        : fired.length > 0
        ? `fired ${fired.join(", ")}`
        : "fired nothing"
      return `${ReportEvent.words(d.source, d.event ?? d.routine)}: ${outcome}${refused}`
    }
  }
)

/** A refusal's target (its routine or run template; none for a routine's own trigger) and its error. */
export const refusal = (r: Refused): { readonly target: string | null; readonly error: typeof ErrorView.Type } =>
  isRoutineRefusal(r)
    ? { target: r.routine, error: r.error }
    : isRunRefusal(r)
    ? { target: r.run, error: r.error }
    : { target: null, error: { _tag: r._tag, message: r.message } }

export const triggerRefused = ReportEvent.kind(
  "trigger_refused",
  Schema.Struct({
    source: Source,
    status: described(Schema.Number, "the HTTP status it was answered with"),
    reason: Schema.String,
    delivery: opt(Schema.String)
  }),
  "a trigger was refused before it fired anything (a bad signature, a body too large, ...)",
  { summary: (d) => `${d.source}: HTTP ${d.status}: ${d.reason}` }
)

const Target = described(Schema.String, "the target, as people see it (no secret)")

export const notifyFailing = ReportEvent.kind(
  "notify_failing",
  Schema.Struct({ target: Target, reason: Schema.String, seq: Schema.Number }),
  "a notification target stopped taking entries (posted as `notify`)"
)

export const notifyRecovered = ReportEvent.kind(
  "notify_recovered",
  Schema.Struct({ target: Target, since: Schema.String, attempts: Schema.Number }),
  "a failing notification target takes entries again"
)

/** A letter given up on: the event, and why. */
export const DeadLetter = Schema.Struct({
  seq: Schema.Number,
  kind: Schema.String,
  agent: Schema.String,
  /** When the event happened. */
  at: Schema.String,
  deadAt: Schema.String,
  deliveryId: Schema.String,
  reason: Schema.String
})
export type DeadLetter = typeof DeadLetter.Type

export const notifyDead = ReportEvent.kind(
  "notify_dead",
  Schema.Struct({ target: Target, ...DeadLetter.fields }),
  "a notification was given up on"
)

export const notifyTest = ReportEvent.kind(
  "notify_test",
  Schema.Struct({ message: Schema.String }),
  "a test notification (`flotta notify test`): sent, never kept"
)

/** The webhooks' kinds. */
export const kinds = [trigger, triggerRefused, notifyFailing, notifyRecovered, notifyDead, notifyTest] as const

/** The kinds the notifications write of themselves: never sent, or a failing receiver would feed itself. */
export const OWN_KINDS = [notifyFailing.kind, notifyRecovered.kind, notifyDead.kind] as const
