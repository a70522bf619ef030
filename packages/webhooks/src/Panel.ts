/**
 * The webhooks' panel on the dashboard's schedule page, contributed through core's seam (`Http.Contributions`):
 * the Triggers table (the last triggers the report log holds, agent `hooks`, kinds `trigger` and
 * `trigger_refused`, decoded, newest first, each with what it fired or why it fired nothing) and, when a notifier
 * runs, the Notifications table (each target's delivery state, its trouble marked; a URL by its origin only: a
 * Slack webhook's path is its key).
 */
import type { ErrorView } from "@flotta/core/AgentView"
import type { Flotta } from "@flotta/core/Flotta"
import type * as Http from "@flotta/core/Http"
import { agentLink, at, empty, html, pill, runLink } from "@flotta/core/Markup"
import * as ReportEvent from "@flotta/core/ReportEvent"
import type { ReportEntry } from "@flotta/core/ReportLog"
import { Effect, Option, Predicate } from "effect"
import type { Notifier, TargetStatus } from "./Notifier.js"
import * as WebhooksEvents from "./WebhooksEvents.js"

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
    return { ...base, ...nothing, source: "?", note: `${entry.kind}: ${summary(entry.data)}` }
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
export const triggers = Effect.fn("Panel.triggers")(function*(fleet: Pick<Flotta, "reports">) {
  return yield* fleet.reports({
    agent: HOOKS_AGENT,
    kinds: [WebhooksEvents.trigger.kind, WebhooksEvents.triggerRefused.kind],
    last: TRIGGERS_SHOWN
  }).pipe(
    Effect.map((page) => page.entries.map(triggerRow).reverse())
  )
})

/** An entry of a shape this page does not know, in a line. */
const summary = (data: unknown): string => {
  const text = JSON.stringify(data) ?? "null"
  return text.length > 120 ? `${text.slice(0, 119)}…` : text
}

/** Dead letters shown per target, newest first. */
const DEAD_SHOWN = 3

const firedView = (f: TriggerFired) =>
  f._tag === "Run"
    ? html`run ${f.template}: ${runLink(f.name)}`
    : html`routine ${f.routine} <span class="muted">fire</span> <code>${f.fireId}</code>`

const whatView = (t: TriggerRow) =>
  html`${t.event !== null && html`<code>${t.event}</code>`}${
    t.routine !== null && html`${t.event !== null && " "}routine <strong>${t.routine}</strong>`
  }${t.subject !== null && html` ${t.subject}`}${
    t.delivery !== null && html`<br><span class="muted">delivery <code>${t.delivery}</code></span>`
  }`

const outcomeView = (t: TriggerRow) => {
  if (t.note !== null) return html`<span class="muted">${t.note}</span>`
  if (t.rejected !== null) {
    return html`${pill("refused")}${
      t.rejected.status !== null && html` <span class="muted">HTTP ${t.rejected.status}</span>`
    } ${t.rejected.reason}`
  }
  if (t.duplicate) return html`${pill("duplicate")} <span class="muted">seen before: fired nothing again</span>`
  const lines = [
    ...t.fired.map((f) => html`${pill("fired")} ${firedView(f)}`),
    ...t.refused.map((r) =>
      html`${pill("refused")} ${
        r.target ?? ""
      } <code>${r.error._tag}</code> <span class="muted">${r.error.message}</span>`
    ),
    ...(t.unmapped ? [html`${pill("unmapped")} <span class="muted">no mapping takes it: fired nothing</span>`] : [])
  ]
  if (lines.length === 0) return html`<span class="muted">fired nothing</span>`
  return html`<ul class="outcomes">${lines.map((line) => html`<li>${line}</li>`)}</ul>`
}

const triggerLine = (t: TriggerRow) =>
  html`<tr><td>${at(t.at)}</td><td>${t.source}</td><td>${whatView(t)}</td><td>${outcomeView(t)}</td></tr>`

/** The last triggers, newest first; shown with or without a scheduler (a GitHub run mapping needs none). */
export const triggersView = (rows: ReadonlyArray<TriggerRow>) =>
  html`<h2>Triggers</h2>
<table aria-label="Triggers">
<thead><tr><th scope="col">When</th><th scope="col">Source</th><th scope="col">What</th><th scope="col">Outcome</th></tr></thead>
<tbody>${
    rows.length === 0
      ? empty(4, "No triggers yet: POST /hooks/routines/NAME or a GitHub webhook at /hooks/github fires one.")
      : rows.map(triggerLine)
  }</tbody>
</table>`

const stateView = (t: TargetStatus) =>
  t.failing === null
    ? pill("ok")
    : html`${pill("failing")} since ${at(t.failing.since)}, ${t.failing.attempts} ${
      t.failing.attempts === 1 ? "attempt" : "attempts"
    } <span class="muted">(entry ${t.failing.seq})</span><br><span class="error">${t.failing.reason}</span>`

const deadView = (t: TargetStatus) =>
  html`${t.deadCount}${
    t.dead.length > 0 && html`<ul class="dead">${
      t.dead.slice(-DEAD_SHOWN).reverse().map((letter) =>
        html`<li><span class="kind">${letter.kind}</span> ${agentLink(letter.agent)} ${
          at(letter.deadAt)
        }<br><span class="error">${letter.reason}</span></li>`
      )
    }</ul>`
  }`

const targetRow = (t: TargetStatus) =>
  html`<tr${t.failing !== null && html` class="failing"`}>
<th scope="row"><code>${t.url}</code></th>
<td>${t.events.join(", ")}</td>
<td>${t.format}</td>
<td class="num">${t.delivered}</td>
<td>${t.lastDelivered === null ? html`<span class="muted">never</span>` : at(t.lastDelivered.at)}</td>
<td>${stateView(t)}</td>
<td>${deadView(t)}</td>
</tr>`

/** Each notification target's delivery state. */
export const notificationsView = (targets: ReadonlyArray<TargetStatus>) =>
  html`<h2>Notifications</h2>
<table aria-label="Notifications">
<thead><tr><th scope="col">Target</th><th scope="col">Events</th><th scope="col">Format</th><th scope="col" class="num">Delivered</th><th scope="col">Last delivered</th><th scope="col">State</th><th scope="col">Dead letters</th></tr></thead>
<tbody>${targets.length === 0 ? empty(7, "No notification targets are configured.") : targets.map(targetRow)}</tbody>
</table>`

/** The panel: the triggers, and each target's delivery state when a notifier runs. */
export const panel = (fleet: Pick<Flotta, "reports">, notifier: Option.Option<Notifier["Type"]>): Http.Panel => ({
  page: "schedule",
  render: Effect.gen(function*() {
    const rows = yield* triggers(fleet)
    const targets = Option.isSome(notifier) ? Option.some(yield* notifier.value.status) : Option.none()
    return html`${triggersView(rows)}
${Option.match(targets, { onNone: () => null, onSome: notificationsView })}`
  })
})
