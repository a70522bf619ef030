/**
 * `/reports`: the report log's tail, newest first, under a filter by agent and kind.
 */
import type { ReportEntry } from "@flotta/core/ReportLog"
import { Effect } from "effect"
import { html } from "./Html.js"
import type { Page } from "./PageParts.js"
import { agentLink, at, empty } from "./PageParts.js"
import * as Views from "./Views.js"
import type { ReportFilter } from "./Views.js"

/** A row of the reports table; static/app.js builds the same one for entries that arrive live. */
const reportRow = (e: ReportEntry) =>
  html`<tr data-seq="${e.seq}"><td class="num">${e.seq}</td><td>${at(e.at)}</td><td>${
    agentLink(e.agent)
  }</td><td><span class="kind">${e.kind}</span></td><td class="summary-cell">${Views.summary(e)}</td></tr>`

export const reportsPage = (filter: ReportFilter) =>
  Effect.map(Views.reports(filter), (entries): Page => ({
    status: 200,
    title: "Reports",
    before: html`<h1>Reports</h1>
<form method="get" action="/reports" class="filter" aria-label="Filter reports">
<label>Agent <input type="text" name="agent" value="${filter.agent ?? ""}" placeholder="any"></label>
<label>Kind <input type="text" name="kind" value="${
      filter.kinds.join(", ")
    }" placeholder="any: result, error, …"></label>
<button type="submit">Filter</button>
</form>`,
    live: html`<table aria-label="Reports">
<thead><tr><th scope="col" class="num">Seq</th><th scope="col">At</th><th scope="col">Agent</th><th scope="col">Kind</th><th scope="col">Summary</th></tr></thead>
<tbody>${entries.length === 0 ? empty(5, "No reports match.") : entries.map(reportRow)}</tbody>
</table>`
  }))
