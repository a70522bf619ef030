/**
 * The webhooks' report kinds, each with the Schema of its data: the triggers (posted as `hooks`) and what the
 * notifications say of themselves (posted as `notify`). The engine names none of them.
 */
import * as ReportEvent from "@flotta/core/ReportEvent"
import { Schema } from "effect"

const described = <A>(schema: Schema.Schema<A>, description: string) => schema.annotations({ description })
/** Fields a trigger carries beyond its named ones (a GitHub event's facts: repository, number, action, ...). */
const More = Schema.Record({ key: Schema.String, value: Schema.Unknown })
const Source = described(Schema.String, "`webhook` or `github`")

export const trigger = ReportEvent.kind(
  "trigger",
  Schema.Struct({
    source: Source,
    /** What it fired: a routine's fire (`routine`, `fireId`) or a run (`name`). */
    fired: Schema.Array(More),
    refused: Schema.optionalWith(Schema.Array(More), { exact: true }),
    routine: Schema.optionalWith(Schema.String, { exact: true }),
    event: Schema.optionalWith(Schema.String, { exact: true }),
    delivery: Schema.optionalWith(described(Schema.String, "GitHub's delivery id"), { exact: true }),
    unmapped: Schema.optionalWith(described(Schema.Boolean, "no mapping named the event"), { exact: true }),
    duplicate: Schema.optionalWith(described(Schema.Boolean, "a delivery seen before"), { exact: true })
  }, More),
  "a trigger came in (a routine's webhook, a GitHub event): what it fired and what was refused"
)

export const triggerRefused = ReportEvent.kind(
  "trigger_refused",
  Schema.Struct({ source: Source, status: Schema.Number, reason: Schema.String }, More),
  "a trigger was refused before it fired anything (a bad signature, a body too large, ...)"
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
