/**
 * `/reports`: the report log's tail, newest first, under a filter by agent and kind, with a link per kind people
 * look for (the webhooks' and the notifications' among them) that filters by it.
 */
import type { ReportEntry } from "@flotta/core/ReportLog"
import { Effect } from "effect"
import { html } from "./Html.js"
import type { Page } from "./PageParts.js"
import { agentLink, at, empty } from "./PageParts.js"
import * as Views from "./Views.js"
import type { ReportFilter } from "./Views.js"

/** The kinds offered as one-click filters (the Kind box takes any): the engine's, the scheduler's, the webhooks'. */
export const KINDS = [
  "result",
  "error",
  "spawned",
  "closed",
  "crashed",
  "restarted",
  "run_finished",
  "verify_failed",
  "approval_requested",
  "approval_decided",
  "budget_exceeded",
  "hibernated",
  "woken",
  "fire",
  "fire_result",
  "trigger",
  "trigger_refused",
  "notify_failing",
  "notify_recovered",
  "notify_dead",
  "host_lost"
] as const

/** A row of the reports table; static/app.js builds the same one for entries that arrive live. */
const reportRow = (e: ReportEntry) =>
  html`<tr data-seq="${e.seq}"><td class="num">${e.seq}</td><td>${at(e.at)}</td><td>${
    agentLink(e.agent)
  }</td><td><span class="kind">${e.kind}</span></td><td class="summary-cell">${Views.summary(e)}</td></tr>`

/** A link per kind: the filter with that kind alone (the agent kept); plain links, so no script is needed. */
const kindLinks = (filter: ReportFilter) =>
  html`<nav class="kinds" aria-label="Kinds"><span class="muted">Kinds:</span> ${
    KINDS.map((kind) => {
      const query = new URLSearchParams({ ...(filter.agent === undefined ? {} : { agent: filter.agent }), kind })
      const current = filter.kinds.length === 1 && filter.kinds[0] === kind
      return html`<a href="/reports?${query.toString()}"${current ? html` aria-current="true"` : ""}>${kind}</a> `
    })
  }</nav>`

export const reportsPage = Effect.fn("ReportsPage.reportsPage")(function*(filter: ReportFilter) {
  return yield* Effect.map(Views.reports(filter), (entries): Page => ({
    status: 200,
    title: "Reports",
    before: html`<h1>Reports</h1>
<form method="get" action="/reports" class="filter" aria-label="Filter reports">
<label>Agent <input type="text" name="agent" value="${filter.agent ?? ""}" placeholder="any"></label>
<label>Kind <input type="text" name="kind" value="${
      filter.kinds.join(", ")
    }" placeholder="any: result, error, …"></label>
<button type="submit">Filter</button>
</form>
${kindLinks(filter)}`,
    live: html`<table aria-label="Reports">
<thead><tr><th scope="col" class="num">Seq</th><th scope="col">At</th><th scope="col">Agent</th><th scope="col">Kind</th><th scope="col">Summary</th></tr></thead>
<tbody>${entries.length === 0 ? empty(5, "No reports match.") : entries.map(reportRow)}</tbody>
</table>`
  }))
})
