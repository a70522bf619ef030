/**
 * `/costs`: the cost console in a browser, over the same `Flotta.costs` as MCP and the cli. The totals (today in
 * UTC, the last 7 days, the chosen window), spend by day as a chart (its data from `GET /api/costs`, in uPlot's
 * columns), the top spenders by agent, model, run and by a label (`?label=team`; default `routine`, which the
 * scheduler sets), and the window chooser: `?since=` and `?until=` take the bounds `Costs` reads (`7d`, `24h`, a
 * date), `since=all` opens the window, and no `since` is the last 30 days.
 * Each table links its CSV (`/costs.csv?by=…&since=…`, `Costs.toCsv`, every group, not only the top ones); an agent
 * links to its page and a run to its run page, both there for a closed one (read from the store).
 */
import * as Costs from "@flotta/core/Costs"
import type { CostBy, CostQuery, CostReport } from "@flotta/core/Costs"
import { Flotta } from "@flotta/core/Flotta"
import { Clock, Effect } from "effect"
import type { Chart } from "./Charts.js"
import type { Html } from "./Html.js"
import { html } from "./Html.js"
import type { Page } from "./PageParts.js"
import { agentLink, dollars, empty, runLink } from "./PageParts.js"

export const DAY = 86_400_000
/** The window when the address names none. */
export const DEFAULT_SINCE = "30d"
/** `since=all`: no lower bound. */
export const ALL = "all"
/** Rows a top-spenders table shows; its CSV has them all. */
export const TOP = 10

/** The quick windows above the page: `since` and its label. */
export const WINDOWS: ReadonlyArray<readonly [since: string, label: string]> = [
  ["24h", "24 hours"],
  ["7d", "7 days"],
  ["30d", "30 days"],
  ["90d", "90 days"],
  [ALL, "All time"]
]

/** The label the last table groups by when the address names none: the one the scheduler sets on its runs. */
export const DEFAULT_LABEL = "routine"

type Table = readonly [by: CostBy, title: string, column: string]

/** The tables of top spenders: their grouping and what a row is; the last groups by the chosen label. */
const tablesOf = (params: CostWindowParams): ReadonlyArray<Table> => [
  ["agent", "Top agents", "Agent"],
  ["model", "Top models", "Model"],
  ["run", "Top runs", "Run"],
  [`label:${params.label}`, `Top by label ${params.label}`, params.label]
]

/**
 * The window as the address gives it: `since` (absent: the default; `all`: open) and `until`, blanks dropped; and
 * the label to group by.
 */
export interface CostWindowParams {
  readonly since: string
  readonly until: string
  readonly label: string
}

export const paramsOf = (query: URLSearchParams): CostWindowParams => ({
  since: query.get("since")?.trim() || DEFAULT_SINCE,
  until: query.get("until")?.trim() ?? "",
  label: query.get("label")?.trim() || DEFAULT_LABEL
})

/** The window's params as a query for `Flotta.costs`, grouped by `by`. */
export const costQuery = (params: CostWindowParams, by: CostBy): CostQuery => ({
  by,
  ...(params.since === ALL ? {} : { since: params.since }),
  ...(params.until === "" ? {} : { until: params.until })
})

/** The window's params in an address (`since` always, so a link keeps the window it was made in). */
const search = (params: CostWindowParams, extra: Record<string, string> = {}) =>
  new URLSearchParams({
    ...extra,
    since: params.since,
    ...(params.until === "" ? {} : { until: params.until }),
    ...(params.label === DEFAULT_LABEL ? {} : { label: params.label })
  }).toString()

export const csvHref = (params: CostWindowParams, by: CostBy) => `/costs.csv?${search(params, { by })}`
export const chartHref = (params: CostWindowParams) => `/api/costs?${search(params)}`

export interface CostsView {
  readonly today: CostReport
  readonly week: CostReport
  /** The chosen window, by day. */
  readonly window: CostReport
  readonly groups: ReadonlyArray<CostReport>
}

/** What the page shows: the totals and, in the chosen window, spend by day and each table's groups. */
export const view = Effect.fn("CostsPage.view")(function*(params: CostWindowParams) {
  const fleet = yield* Flotta
  const today = new Date(yield* Clock.currentTimeMillis).toISOString().slice(0, 10)
  const [todayReport, week, window, ...groups] = yield* Effect.all([
    fleet.costs({ since: today, by: "day" }),
    fleet.costs({ since: "7d", by: "day" }),
    fleet.costs(costQuery(params, "day")),
    ...tablesOf(params).map(([by]) => fleet.costs(costQuery(params, by)))
  ])
  return { today: todayReport!, week: week!, window: window!, groups }
})

/** A CSV download: the body, and the file name it is saved as. */
export const csv = Effect.fn("CostsPage.csv")(function*(query: URLSearchParams) {
  const by = (query.get("by")?.trim() || "agent") as CostBy
  const report = yield* Effect.flatMap(Flotta, (fleet) => fleet.costs(costQuery(paramsOf(query), by)))
  return { body: Costs.toCsv(report), filename: `flotta-costs-by-${report.by}.csv` }
})

const roundUsd = (usd: number) => Math.round(usd * 1e6) / 1e6
const dayOf = (millis: number) => Math.floor(millis / DAY)

/**
 * Spend by day as uPlot's columns: x the start of each UTC day of the window (Unix seconds), from its first day (or
 * the first day with spend, for an open window) to its last (today, when it runs to now), zero where nothing was
 * spent; one series, or none when the window spent nothing.
 */
export const perDay = (report: CostReport, now: number): Chart => {
  const spent = new Map(report.groups.map((g) => [dayOf(Date.parse(`${g.key}T00:00:00.000Z`)), g.costUsd]))
  const known = [...spent.keys()]
  const first = report.since === null ? Math.min(dayOf(now), ...known) : dayOf(Date.parse(report.since))
  const last = Math.max(report.until === null ? dayOf(now) : dayOf(Date.parse(report.until) - 1), first, ...known)
  const days = Array.from({ length: last - first + 1 }, (_, i) => first + i)
  return {
    series: report.groups.length === 0 ? [] : ["Spend"],
    data: [
      days.map((day) => (day * DAY) / 1000),
      ...(report.groups.length === 0 ? [] : [days.map((day) => roundUsd(spent.get(day) ?? 0))])
    ]
  }
}

/** The chart's data (`GET /api/costs`), for the window in the address. */
export const chartData = Effect.fn("CostsPage.chartData")(function*(query: URLSearchParams) {
  const report = yield* Effect.flatMap(Flotta, (fleet) => fleet.costs(costQuery(paramsOf(query), "day")))
  return { costPerDay: perDay(report, yield* Clock.currentTimeMillis) }
})

// ------------------------------------------------------------------------------------------------ markup

const windowText = (report: CostReport) =>
  report.since === null && report.until === null
    ? "all time"
    : `${report.since === null ? "the start" : report.since.slice(0, 16).replace("T", " ")} to ${
      report.until === null ? "now" : report.until.slice(0, 16).replace("T", " ")
    } UTC`

const turnsText = (turns: number) => `${turns} turn${turns === 1 ? "" : "s"}`

const total = (label: string, report: CostReport) =>
  html`<div class="total" role="group" aria-label="${label}"><dt>${label}</dt><dd><strong>${
    dollars(report.totalUsd)
  }</strong> <span class="muted">${turnsText(report.turns)}</span></dd></div>`

const keyCell = (by: CostBy, key: string | null): Html | string => {
  if (key === null) return html`<span class="muted">(no ${Costs.isLabelBy(by) ? Costs.labelKey(by) : by})</span>`
  return by === "agent" ? agentLink(key) : by === "run" ? runLink(key) : key
}

const table = (params: CostWindowParams) => (report: CostReport, i: number) => {
  const [by, title, column] = tablesOf(params)[i]!
  const shown = report.groups.slice(0, TOP)
  const share = (usd: number) => (report.totalUsd > 0 ? `${((usd / report.totalUsd) * 100).toFixed(1)}%` : "—")
  return html`<section class="spenders" aria-labelledby="top-${by.replace(":", "-")}">
<h2 id="top-${by.replace(":", "-")}">${title} <a href="${
    csvHref(params, by)
  }" download class="csv" aria-label="Download CSV by ${by}">CSV</a></h2>
<table aria-label="${title}">
<thead><tr><th scope="col">${column}</th><th scope="col" class="num">Cost</th><th scope="col" class="num">Share</th><th scope="col" class="num">Turns</th></tr></thead>
<tbody>${
    shown.length === 0
      ? empty(4, "No spend in this window.")
      : shown.map((g) =>
        html`<tr><td>${keyCell(by, g.key)}</td><td class="num">${dollars(g.costUsd)}</td><td class="num">${
          share(g.costUsd)
        }</td><td class="num">${g.turns}</td></tr>`
      )
  }${
    report.groups.length > TOP
      ? html`<tr class="more"><td colspan="4" class="muted">and ${report.groups.length - TOP} more in the CSV</td></tr>`
      : ""
  }</tbody>
</table>
</section>`
}

const chooser = (params: CostWindowParams) =>
  html`<h1>Costs</h1>
<nav class="windows" aria-label="Window">${
    WINDOWS.map(([since, label]) =>
      html`<a href="/costs?since=${since}"${
        params.since === since && params.until === "" ? html` aria-current="true"` : ""
      }>${label}</a>`
    )
  }</nav>
<form method="get" action="/costs" class="controls window">
<label for="since">Since</label>
<input id="since" name="since" value="${params.since}" placeholder="7d, 24h, 2025-01-31 or all" size="14">
<label for="until">Until</label>
<input id="until" name="until" value="${params.until}" placeholder="now" size="14">
<label for="label">Label</label>
<input id="label" name="label" value="${params.label}" placeholder="${DEFAULT_LABEL}" size="10">
<button type="submit">Show</button>
</form>`

/** The page for the window in the address; a bound `Costs` cannot read is a 400 that says why. */
export const costsPage = Effect.fn("CostsPage.costsPage")(function*(query: URLSearchParams) {
  const params = paramsOf(query)
  const before = chooser(params)
  return yield* view(params).pipe(
    Effect.map((v): Page => ({
      status: 200,
      title: "Costs",
      charts: true,
      before,
      live: html`<dl class="totals" aria-label="Totals">
${total("Today", v.today)}
${total("Last 7 days", v.week)}
${total("This window", v.window)}
</dl>
<p class="summary">From ${windowText(v.window)} · <a href="${
        csvHref(params, "day")
      }" download>Download CSV by day</a></p>
<div class="spenders-grid">${v.groups.map(table(params))}</div>`,
      after: html`<section id="charts" class="charts" aria-label="Charts" data-src="${chartHref(params)}">
<figure class="chart" data-chart="costPerDay" data-unit="usd" data-step="86400"><figcaption>Spend by day</figcaption><div class="plot"></div></figure>
</section>`
    })),
    Effect.catchTag("InvalidSpec", (error) =>
      Effect.succeed<Page>({
        status: 400,
        title: "Costs",
        before,
        live: html`<p class="error">The window is not one the cost console reads: ${error.path}: ${error.reason}</p>`
      }))
  )
})
