/**
 * `/`: every live agent and run in progress, one row each, and the charts below them.
 */
import { Effect } from "effect"
import { html } from "./Html.js"
import type { Page } from "./PageParts.js"
import { agentLink, at, dollars, empty, pill, since } from "./PageParts.js"
import * as Views from "./Views.js"
import type { AgentRow } from "./Views.js"

/** `hosted`: the fleet spans several hosts (a cluster), and each row says which runs it. */
const agentRow = (hosted: boolean) => ({ currentStartedAt, info, worktree }: AgentRow) =>
  html`<tr>
<td>${agentLink(info.name)}${info.lifecycle === "run" ? html` <span class="tag">run</span>` : ""}${
    worktree === null ? "" : html` <a href="/runs/${encodeURIComponent(info.name)}" class="muted">diff</a>`
  }</td>
<td>${pill(info.status)}${
    info.parkedUntil === null ? "" : html` <span class="muted">until ${at(info.parkedUntil)}</span>`
  }</td>
<td class="num">${currentStartedAt === null ? html`<span class="muted">—</span>` : since(currentStartedAt)}</td>
<td class="num">${info.queued}</td>
<td class="num">${info.totals.turns}${
    info.totals.failed > 0 ? html` <span class="warn">(${info.totals.failed} failed)</span>` : ""
  }</td>
<td class="num">${dollars(info.totals.costUsd)}</td>
<td class="num">${info.restarts}</td>
<td class="path">${worktree ?? html`<span class="muted">—</span>`}</td>${
    hosted ?
      html`
<td>${info.host ?? ""}</td>` :
      ""
  }
</tr>`

export const agentsPage = Effect.gen(function*() {
  const rows = yield* Views.agents
  const cost = rows.reduce((sum, r) => sum + r.info.totals.costUsd, 0)
  const working = rows.filter((r) => r.info.status === "working").length
  const hosted = rows.some((r) => r.info.host !== undefined)
  return {
    status: 200,
    title: "Agents",
    charts: true,
    live: html`<h1>Agents</h1>
<p class="summary">${rows.length} live · ${working} working · ${dollars(cost)} spent</p>
<table aria-label="Agents">
<thead><tr><th scope="col">Name</th><th scope="col">Status</th><th scope="col" class="num">Current turn</th><th scope="col" class="num">Queued</th><th scope="col" class="num">Turns</th><th scope="col" class="num">Cost</th><th scope="col" class="num">Restarts</th><th scope="col">Worktree</th>${
      hosted ? html`<th scope="col">Host</th>` : ""
    }</tr></thead>
<tbody>${rows.length === 0 ? empty(8, "No agents are running.") : rows.map(agentRow(hosted))}</tbody>
</table>`,
    after: html`<section id="charts" class="charts" aria-label="Charts">
<figure class="chart" data-chart="costPerHour" data-unit="usd"><figcaption>Cost per hour</figcaption><div class="plot"></div></figure>
<figure class="chart" data-chart="turnDuration" data-unit="ms"><figcaption>Turn duration</figcaption><div class="plot"></div></figure>
</section>`
  } satisfies Page
})
