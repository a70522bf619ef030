/**
 * `/runs`: the async runs and verifies, running and finished, newest first, as `Flotta.runs` gives them (kind,
 * state, start, duration, cost, branch, the error's tag, a verify's verdict, and the host in a cluster), each
 * linking to its page (`/runs/<name>`). Filtered by state (`?state=running|succeeded|failed`) and kind
 * (`?kind=run|verify`) with plain links, so no script is needed; a value it does not know is a 400 that says
 * which ones it knows. It follows the report log like the other pages.
 */
import type { RunView } from "@flotta/core/RunList"
import { Effect, Either } from "effect"
import { html } from "./Html.js"
import type { Page } from "./PageParts.js"
import { at, dollars, duration, empty, pill, runLink, since } from "./PageParts.js"
import * as Views from "./Views.js"
import type { RunsFilter } from "./Views.js"

const STATE_LABELS: ReadonlyArray<readonly [state: RunsFilter["state"], label: string]> = [
  [undefined, "All"],
  ["running", "Running"],
  ["succeeded", "Succeeded"],
  ["failed", "Failed"]
]

const KIND_LABELS: ReadonlyArray<readonly [kind: RunsFilter["kind"], label: string]> = [
  [undefined, "All"],
  ["run", "Runs"],
  ["verify", "Verifies"]
]

/** The address of the runs page under a filter. */
export const runsHref = (filter: RunsFilter) => {
  const query = new URLSearchParams({
    ...(filter.state === undefined ? {} : { state: filter.state }),
    ...(filter.kind === undefined ? {} : { kind: filter.kind })
  }).toString()
  return query.length === 0 ? "/runs" : `/runs?${query}`
}

/** A row of links, one per value, each keeping the other filter; the one in force is the current one. */
const choices = <K extends keyof RunsFilter>(
  label: string,
  key: K,
  filter: RunsFilter,
  values: ReadonlyArray<readonly [RunsFilter[K], string]>
) =>
  html`<nav class="kinds" aria-label="${label}"><span class="muted">${label}:</span> ${
    values.map(([value, text]) =>
      html`<a href="${runsHref({ ...filter, [key]: value })}"${
        filter[key] === value ? html` aria-current="true"` : ""
      }>${text}</a> `
    )
  }</nav>`

const head = (filter: RunsFilter) =>
  html`<h1>Runs</h1>
${choices("State", "state", filter, STATE_LABELS)}
${choices("Kind", "kind", filter, KIND_LABELS)}`

/** How long it took, or how long it has been going (ticking in the browser). */
const took = (run: RunView) =>
  run.finishedAt === null
    ? since(run.startedAt)
    : duration(Math.max(0, Date.parse(run.finishedAt) - Date.parse(run.startedAt)))

/** A verify's verdict beside its state: its checks passed or failed. */
const verdict = (run: RunView) =>
  run.passed === null ?
    "" :
    html` <span class="${run.passed ? "muted" : "warn"}">checks ${run.passed ? "passed" : "failed"}</span>`

const runRow = (hosted: boolean) => (run: RunView) =>
  html`<tr>
<td>${runLink(run.name)}${run.kind === "verify" ? html` <span class="tag">verify</span>` : ""}</td>
<td>${pill(run.state)}${verdict(run)}</td>
<td>${at(run.startedAt)}</td>
<td class="num">${took(run)}</td>
<td class="num">${run.costUsd === null ? html`<span class="muted">—</span>` : dollars(run.costUsd)}</td>
<td>${run.branch === null ? html`<span class="muted">—</span>` : html`<code>${run.branch}</code>`}</td>
<td>${run.error === null ? "" : html`<span class="error">${run.error}</span>`}</td>${
    hosted ?
      html`
<td>${run.host ?? ""}</td>` :
      ""
  }
</tr>`

const counted = (runs: ReadonlyArray<RunView>, state: RunView["state"]) => runs.filter((r) => r.state === state).length

const table = (filter: RunsFilter, runs: ReadonlyArray<RunView>) => {
  const hosted = runs.some((r) => r.host !== undefined)
  const filtered = filter.state !== undefined || filter.kind !== undefined
  return html`<p class="summary">${runs.length}${runs.length === Views.RUNS_SHOWN ? " (the newest)" : ""} shown · ${
    counted(runs, "running")
  } running · ${counted(runs, "succeeded")} succeeded · ${counted(runs, "failed")} failed</p>
<table aria-label="Runs">
<thead><tr><th scope="col">Name</th><th scope="col">State</th><th scope="col">Started</th><th scope="col" class="num">Duration</th><th scope="col" class="num">Cost</th><th scope="col">Branch</th><th scope="col">Error</th>${
    hosted ? html`<th scope="col">Host</th>` : ""
  }</tr></thead>
<tbody>${
    runs.length === 0
      ? empty(
        7,
        filtered
          ? "No runs match."
          : "No runs yet: a run started over MCP (flotta_run), by a routine or by a trigger is listed here."
      )
      : runs.map(runRow(hosted))
  }</tbody>
</table>`
}

/** The page for the filter in the address; a filter value it does not know is a 400 naming the ones it knows. */
export const runsPage = Effect.fn("RunsPage.runsPage")(function*(query: URLSearchParams) {
  return yield* Either.match(Views.runsFilter(query), {
    onLeft: (bad): Effect.Effect<Page> =>
      Effect.succeed({
        status: 400,
        title: "Runs",
        before: head({ state: undefined, kind: undefined }),
        live: html`<p class="error">No ${bad.param} is called ${JSON.stringify(bad.value)}: use one of ${
          bad.allowed.join(", ")
        }.</p>`
      }),
    onRight: (filter) =>
      Effect.map(Views.runs(filter), (runs): Page => ({
        status: 200,
        title: "Runs",
        before: head(filter),
        live: table(filter, runs)
      }))
  })
})
