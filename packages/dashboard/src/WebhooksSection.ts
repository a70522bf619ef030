/**
 * The webhooks on the schedule page: the Triggers table (the last triggers the report log holds, newest first,
 * each with what it fired, or why it fired nothing) and the Notifications table (each target's delivery state,
 * its trouble marked), which is absent when no notifier runs. A webhook's URL shows only its origin.
 */
import type { TargetStatus } from "@flotta/webhooks/Notifier"
import { html } from "./Html.js"
import { agentLink, at, empty, pill, runLink } from "./PageParts.js"
import type { TriggerFired, TriggerRow } from "./WebhooksViews.js"

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

const triggerRow = (t: TriggerRow) =>
  html`<tr><td>${at(t.at)}</td><td>${t.source}</td><td>${whatView(t)}</td><td>${outcomeView(t)}</td></tr>`

/** The last triggers, newest first; shown with or without a scheduler (a GitHub run mapping needs none). */
export const triggersView = (rows: ReadonlyArray<TriggerRow>) =>
  html`<h2>Triggers</h2>
<table aria-label="Triggers">
<thead><tr><th scope="col">When</th><th scope="col">Source</th><th scope="col">What</th><th scope="col">Outcome</th></tr></thead>
<tbody>${
    rows.length === 0
      ? empty(4, "No triggers yet: POST /hooks/routines/NAME or a GitHub webhook at /hooks/github fires one.")
      : rows.map(triggerRow)
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
